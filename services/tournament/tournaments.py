"""Tournaments as logs: load, create, and take a step, once, whatever the replicas do.

A step is: load the tournament's state (this replica's cache brought up to the store's
head), choose the command from that state, let the engine decide it, append the events at
the seq the state was at. When another replica appended first, the store refuses
(:class:`~services.tournament.store.ConcurrencyConflict`): reload, choose again (the other
step may have made this one moot) and retry. So every step happens once, decided on the
state it follows: docs/architecture.md "Tournaments".

Within one process, steps of one tournament take turns (a lock per tournament), so a
replica does not race itself.
"""

from __future__ import annotations

import asyncio
import collections
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import grpc
import structlog

from dast.v1 import tournament_pb2
from engine import tournament as engine
from services.platform.clock import Clock, wall_clock_ms
from services.platform.errors import ServiceError, map_exception
from services.tournament import chain, options
from services.tournament.policy import too_many_open
from services.tournament.reasons import TournamentServiceReason
from services.tournament.store import (
    ConcurrencyConflict,
    KeptName,
    MatchPlace,
    OpenLimitReached,
    Step,
    StoredEvent,
    TournamentNotFound,
    TournamentStore,
)

STATUSES: Final = {
    engine.Phase.REGISTRATION: tournament_pb2.TOURNAMENT_STATUS_REGISTERING,
    engine.Phase.RUNNING: tournament_pb2.TOURNAMENT_STATUS_RUNNING,
    engine.Phase.FINISHED: tournament_pb2.TOURNAMENT_STATUS_FINISHED,
}
MAX_ATTEMPTS: Final = 50
"""Lost races in a row after which a step gives up (ABORTED to a caller)."""
CACHED_TOURNAMENTS: Final = 1024
_log = structlog.get_logger(component="tournaments")

map_exception(TournamentNotFound, grpc.StatusCode.NOT_FOUND,
              TournamentServiceReason.TOURNAMENT_NOT_FOUND)
map_exception(ConcurrencyConflict, grpc.StatusCode.ABORTED, TournamentServiceReason.CONCURRENT_STEP)


@dataclass(frozen=True, slots=True)
class Loaded:
    """A tournament as of its log's last event."""

    state: engine.TournamentState
    last_hash: bytes
    summary: tournament_pb2.TournamentSummary
    """What listings show; its ``settings`` are the tournament's (normalized) settings."""

    @property
    def tournament_id(self) -> str:
        """The tournament's id."""
        return self.state.tournament_id

    @property
    def settings(self) -> tournament_pb2.TournamentSettings:
        """The settings it was created with."""
        return self.summary.settings


ChooseCommand = Callable[[engine.TournamentState], "engine.Command | None"]
"""Picks the command of a step from the current state (None: nothing to do any more)."""
NamesOf = Callable[["engine.Command"], Sequence[tuple[str, str]]]
"""The ``(player_id, display_name)`` a step's command registers, kept beside the log."""


def summary_of(state: engine.TournamentState, before: tournament_pb2.TournamentSummary
               ) -> tournament_pb2.TournamentSummary:
    """The summary after ``state``: ``before``'s fixed parts, the state's moving ones."""
    summary = tournament_pb2.TournamentSummary()
    summary.CopyFrom(before)
    summary.status = (tournament_pb2.TOURNAMENT_STATUS_CANCELLED if state.cancelled
                      else STATUSES[state.phase])
    summary.featured = state.featured
    summary.entrants = len(state.entrants) - len(state.withdrawn)
    summary.round = state.round
    summary.seq = state.seq
    return summary


class Tournaments:
    """Every tournament of the store, as this replica sees them."""

    def __init__(self, store: TournamentStore, *, clock: Clock = wall_clock_ms) -> None:
        self.store = store
        self.clock = clock
        self._cache: collections.OrderedDict[str, Loaded] = collections.OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._listeners: list[Callable[[Loaded, Sequence[engine.Event]], None]] = []
        self.steps = 0
        """Steps this replica appended (tests)."""
        self.conflicts = 0
        """Races this replica lost (tests)."""

    def add_listener(self, listener: Callable[[Loaded, Sequence[engine.Event]], None]) -> None:
        """Call ``listener(loaded, events)`` after every step this replica appends."""
        self._listeners.append(listener)

    def _remember(self, loaded: Loaded) -> None:
        self._cache[loaded.tournament_id] = loaded
        self._cache.move_to_end(loaded.tournament_id)
        while len(self._cache) > CACHED_TOURNAMENTS:
            self._cache.popitem(last=False)

    async def load(self, tournament_id: str) -> Loaded:
        """The tournament as of the store's head (the cache plus whatever it lacks).

        :raises TournamentNotFound: if there is no such tournament.
        """
        cached = self._cache.get(tournament_id)
        if cached is None:
            summary = await asyncio.to_thread(self.store.summary, tournament_id)
            stored = await asyncio.to_thread(self.store.load, tournament_id, 0)
            decoded = [engine.decode_event(item.body) for item in stored]
            state = engine.replay(decoded)
            loaded = Loaded(state, stored[-1].hash, summary_of(state, summary))
        else:
            stored = await asyncio.to_thread(self.store.load, tournament_id, cached.state.seq)
            if not stored:
                return cached
            state = cached.state
            for item in stored:
                state = engine.evolve(state, engine.decode_event(item.body))
            loaded = Loaded(state, stored[-1].hash, summary_of(state, cached.summary))
        self._remember(loaded)
        return loaded

    async def names_of(self, tournament_id: str) -> dict[str, KeptName]:
        """The names kept beside the tournament's log, by player id."""
        return await asyncio.to_thread(self.store.names_of, tournament_id)

    async def create(
        self, settings: tournament_pb2.TournamentSettings, host_id: str, *,
        by_operator: bool = False, featured: bool = False, open_limit: int | None = None,
        tournament_id: str | None = None, seed: bytes | None = None,
    ) -> Loaded:
        """Create a tournament from (raw) ``settings``, hosted by ``host_id`` (an operator
        when ``by_operator``; ``featured`` from the start); with ``open_limit``, only while
        the host has fewer open tournaments.

        :raises ServiceError: INVALID_ARGUMENT for settings out of range; RESOURCE_EXHAUSTED
            when the host has ``open_limit`` open tournaments.
        :raises engine errors: ``InvalidCommand`` for options the engine refuses.
        """
        clean = options.normalized(settings)
        tournament_id = tournament_id or f"t{secrets.token_hex(8)}"
        at_ms = self.clock()
        events = engine.create(tournament_id, options.tournament_options(clean),
                               seed if seed is not None else secrets.token_bytes(32),
                               at_ms=at_ms)
        if featured:
            events += engine.decide(engine.replay(events),
                                    engine.Feature(featured=True, at_ms=at_ms))
        state = engine.replay(events)
        stored = []
        previous = chain.GENESIS
        for event in events:
            body = engine.encode_event(event)
            previous = chain.chain_hash(tournament_id, previous, body)
            stored.append(StoredEvent(event.seq, body, previous, event.at_ms))
        summary = summary_of(state, tournament_pb2.TournamentSummary(
            tournament_id=tournament_id, settings=clean, host_id=host_id,
            created_at_ms=at_ms, created_by_operator=by_operator))
        try:
            await asyncio.to_thread(self.store.create, tournament_id, Step(stored, summary),
                                    created_at_ms=at_ms, open_limit=open_limit)
        except OpenLimitReached as reached:
            assert open_limit is not None
            raise too_many_open(reached.open_count, open_limit) from None
        loaded = Loaded(state, previous, summary)
        self._remember(loaded)
        _log.info("tournament_created", tournament_id=tournament_id, host=host_id)
        return loaded

    async def step(self, tournament_id: str, choose: ChooseCommand, *,
                   names: NamesOf | None = None
                   ) -> tuple[Loaded, list[engine.Event]]:
        """Take one step of the tournament: ``choose`` the command from the current state,
        decide it, append its events; again from the new head after a lost race. Returns
        the tournament after the step and the events appended (none when ``choose``
        answered None). ``names``: the names the chosen command registers, kept beside the
        log with the step's events (:class:`~services.tournament.store.Step`).

        :raises RuleViolation, InvalidCommand: as the engine refuses the command.
        :raises ServiceError: ABORTED after :data:`MAX_ATTEMPTS` lost races.
        """
        lock = self._locks.setdefault(tournament_id, asyncio.Lock())
        async with lock:
            for _ in range(MAX_ATTEMPTS):
                loaded = await self.load(tournament_id)
                command = choose(loaded.state)
                if command is None:
                    return loaded, []
                events = engine.decide(loaded.state, command)
                if not events:
                    return loaded, []
                try:
                    after = await self._append(loaded, events,
                                               names(command) if names is not None else ())
                except ConcurrencyConflict:
                    self.conflicts += 1
                    continue
                self.steps += 1
                for listener in self._listeners:
                    listener(after, events)
                return after, events
        raise ServiceError(grpc.StatusCode.ABORTED, TournamentServiceReason.CONCURRENT_STEP,
                           f"tournament {tournament_id} kept changing; retry")

    async def _append(self, loaded: Loaded, events: Sequence[engine.Event],
                      names: Sequence[tuple[str, str]] = ()) -> Loaded:
        tournament_id = loaded.tournament_id
        state = loaded.state
        previous = loaded.last_hash
        stored: list[StoredEvent] = []
        matches: list[MatchPlace] = []
        for event in events:
            state = engine.evolve(state, event)
            body = engine.encode_event(event)
            previous = chain.chain_hash(tournament_id, previous, body)
            stored.append(StoredEvent(event.seq, body, previous, event.at_ms))
            if isinstance(event.body, engine.RoundStarted):
                matches.extend(
                    MatchPlace(options.game_id_of(tournament_id, event.body.round, table.table),
                               tournament_id, event.body.round, table.table)
                    for table in event.body.tables)
        summary = summary_of(state, loaded.summary)
        deadline = state.deadline_ms if state.phase is engine.Phase.RUNNING else 0
        await asyncio.to_thread(
            self.store.append, tournament_id, loaded.state.seq,
            Step(stored, summary, round_deadline_ms=deadline, matches=matches, names=names))
        after = Loaded(state, previous, summary)
        self._remember(after)
        return after
