"""Game states by id: loaded from the event store, replayed by the engine, cached.

A replica keeps the last state it knows of each game with its seq and chain head. The
cache may be stale when another replica appended since: the store's primary key catches
that on append (ConcurrencyConflict), and :meth:`GameRepository.refresh` catches up by
loading only the entries after the cached seq. Whether a match admits spectators is set
when it is created and never changes: a replica asks the store once per game and remembers.
The seats' display names are kept beside the log (:mod:`services.game.names`), in
:attr:`GameRepository.names`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dast.v1 import common_pb2, log_pb2
from engine.core.chain import GENESIS_HASH, log_chain_key
from engine.core.protocol import Game
from engine.registry import GAMES, game_of_event
from services.game.names import SeatNames
from services.platform.store import (
    AppendResult,
    EventStore,
    GameNotFound,
    SeatName,
    SubmitsWrites,
)
from services.platform.validation import quoted_input


@dataclass(frozen=True, slots=True)
class GameSnapshot:
    """A game's state after its event ``seq``, with what the service needs beside it."""

    game_id: str
    game: Game
    state: Any
    seq: int
    last_hash: bytes
    players: tuple[common_pb2.Player, ...]
    chain_key: bytes
    """The key salting this game's chain hashes (:mod:`engine.core.chain`); never sent."""

    def seat_of(self, player_id: str) -> int | None:
        """The seat ``player_id`` holds in this match, or None for a spectator."""
        for seat, player in enumerate(self.players):
            if player.player_id == player_id:
                return seat
        return None

    @property
    def is_over(self) -> bool:
        """Whether the match has ended."""
        return bool(self.game.is_over(self.state))

    def advanced(self, entries: Sequence[log_pb2.LogEntry]) -> GameSnapshot:
        """This snapshot with ``entries`` (which follow it) applied."""
        state, seq, last_hash = self.state, self.seq, self.last_hash
        for entry in entries:
            if entry.event.seq <= seq:
                continue
            state = self.game.evolve(state, entry.event)
            seq, last_hash = entry.event.seq, entry.hash
        return GameSnapshot(
            self.game_id, self.game, state, seq, last_hash, self.players, self.chain_key
        )


def snapshot_of(game_id: str, entries: Sequence[log_pb2.LogEntry]) -> GameSnapshot:
    """Replay a whole log.

    :raises GameNotFound: if the log is empty (a game that was never started).
    """
    if not entries:
        raise GameNotFound(f"game {quoted_input(game_id)} has no events")
    game = game_of_event(entries[0].event)
    players = tuple(game.setup_of(entries[0].event).players)
    key = log_chain_key(entries[0].event)
    empty = GameSnapshot(game_id, game, None, 0, GENESIS_HASH, players, key)
    return empty.advanced(entries)


class GameRepository:
    """Cached game states over an event store (the store is called from worker threads, or
    its writes awaited as futures when it offers them: :class:`SubmitsWrites`)."""

    def __init__(self, store: EventStore, *, max_cached: int = 20_000) -> None:
        self.store = store
        self._writes: SubmitsWrites | None = store if isinstance(store, SubmitsWrites) else None
        self._cache: OrderedDict[str, GameSnapshot] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._max_cached = max_cached
        self._spectator_rules: OrderedDict[str, bool] = OrderedDict()
        """game_id → whether the match admits spectators (the most recently used kept)."""
        self.names = SeatNames(store, max_cached=max_cached)
        """The display names of the games' seats, kept beside their logs."""

    def lock(self, game_id: str) -> asyncio.Lock:
        """The lock serializing this process's commands on one game."""
        lock = self._locks.get(game_id)
        if lock is None:
            lock = self._locks[game_id] = asyncio.Lock()
        return lock

    def _remember(self, snapshot: GameSnapshot) -> GameSnapshot:
        current = self._cache.get(snapshot.game_id)
        if current is None or current.seq <= snapshot.seq:
            self._cache[snapshot.game_id] = snapshot
        self._cache.move_to_end(snapshot.game_id)
        while len(self._cache) > self._max_cached:
            evicted, _ = self._cache.popitem(last=False)
            lock = self._locks.get(evicted)
            if lock is not None and not lock.locked():
                del self._locks[evicted]
        return self._cache[snapshot.game_id]

    async def get(self, game_id: str) -> GameSnapshot:
        """The cached state of a game, loading and replaying it when not cached.

        :raises GameNotFound: if there is no such game.
        """
        snapshot = self._cache.get(game_id)
        if snapshot is not None:
            self._cache.move_to_end(game_id)
            return snapshot
        entries = await asyncio.to_thread(self.store.load, game_id, 0)
        return self._remember(snapshot_of(game_id, entries))

    def _remember_spectator_rule(self, game_id: str, allowed: bool) -> bool:
        self._spectator_rules[game_id] = allowed
        self._spectator_rules.move_to_end(game_id)
        while len(self._spectator_rules) > self._max_cached:
            self._spectator_rules.popitem(last=False)
        return allowed

    async def spectators_allowed(self, game_id: str) -> bool:
        """Whether the match admits players who hold no seat in it (asked of the store once).

        :raises GameNotFound: if there is no such game.
        """
        allowed = self._spectator_rules.get(game_id)
        if allowed is not None:
            self._spectator_rules.move_to_end(game_id)
            return allowed
        stored = await asyncio.to_thread(self.store.spectators_allowed, game_id)
        return self._remember_spectator_rule(game_id, stored)

    async def refresh(self, game_id: str) -> GameSnapshot:
        """The game's state caught up with the store (loads only what the cache lacks).

        :raises GameNotFound: if there is no such game.
        """
        snapshot = self._cache.get(game_id)
        if snapshot is None:
            return await self.get(game_id)
        entries = await asyncio.to_thread(self.store.load, game_id, snapshot.seq)
        return self._remember(snapshot.advanced(entries)) if entries else snapshot

    async def create(
        self,
        game_id: str,
        game_type: int,
        entries: Sequence[log_pb2.LogEntry],
        *,
        relayed: bool = False,
        spectators_allowed: bool = True,
        seat_names: Sequence[SeatName] = (),
    ) -> GameSnapshot:
        """Store a new game's first entries and its seats' names, and cache its state.

        ``relayed``: the caller publishes the entries itself (:mod:`services.platform.store`);
        ``spectators_allowed``: whether players without a seat may watch the match.

        :raises GameExists: if the id is taken.
        """
        if self._writes is not None:
            await self._writes.create_game_async(
                game_id, game_type, entries, relayed=relayed,
                spectators_allowed=spectators_allowed, seat_names=seat_names,
            )
        else:
            await asyncio.to_thread(
                self.store.create_game, game_id, game_type, entries, relayed=relayed,
                spectators_allowed=spectators_allowed, seat_names=seat_names,
            )
        self._remember_spectator_rule(game_id, spectators_allowed)
        self.names.remember(game_id, seat_names)
        return self._remember(snapshot_of(game_id, entries))

    async def append(
        self,
        snapshot: GameSnapshot,
        entries: Sequence[log_pb2.LogEntry],
        command_id: str | None,
        *,
        sender: str | None = None,
        relayed: bool = False,
    ) -> tuple[GameSnapshot, AppendResult]:
        """Append one command's entries after ``snapshot``; return the new state.

        When ``sender`` already used ``command_id`` in this game nothing is appended and the
        state is refreshed. ``relayed``: the caller publishes the entries itself
        (:mod:`services.platform.store`).

        :raises ConcurrencyConflict: if another writer took the seq first.
        """
        if self._writes is not None:
            result = await self._writes.append_async(
                snapshot.game_id, entries, command_id=command_id, sender=sender, relayed=relayed,
                previous_hash=snapshot.last_hash,
            )
        else:
            result = await asyncio.to_thread(
                self.store.append, snapshot.game_id, entries, command_id=command_id,
                sender=sender, relayed=relayed,
            )
        if result.duplicate:
            return await self.refresh(snapshot.game_id), result
        return self._remember(snapshot.advanced(result.entries)), result

    async def find_duplicate(
        self, game_id: str, sender: str, command_id: str
    ) -> AppendResult | None:
        """The first result of ``sender``'s ``command_id`` if the store has seen it, else None."""
        try:
            return await asyncio.to_thread(self.store.find_command, game_id, sender, command_id)
        except GameNotFound:
            return None

    def game_for_type(self, game_type: int) -> Game | None:
        """The engine of a game type, if registered."""
        return GAMES.get(game_type)
