"""The projection: batches of the games' events in, the stats tables' changes out.

Each game's events are applied strictly in ``seq`` order, each exactly once:

- an event at or below the game's stored ``applied_seq`` was applied before (a redelivery,
  or a repeat of the bus): it is settled (acknowledged) and ignored;
- the next one is applied, then any buffered ones that now follow;
- one beyond a gap (out of order, or after events the bus lost: the in-process bus keeps
  nothing across a restart) is buffered, unacknowledged, until the gap fills. When the
  buffer holds the game's final event, or grows past :data:`MAX_BUFFERED` events, the game
  is *repaired*: its whole log is fetched from the game service (:mod:`services.stats.repair`)
  and applied like any delivery, so what is missing fills in and the rest are repeats.

A batch is one transaction (:meth:`services.stats.store.StatsStore.apply`): every figure it
changes and every game's new ``applied_seq`` commit together, so a crash between commits
loses nothing that was acknowledged (deliveries are acknowledged after the commit) and
counts nothing twice (what was committed is at or below the stored seq).

What is counted (per subject, game and variant; the game's own counters come from
``engine/<game>/stats.py``, :mod:`engine.core.stats`):

- a move is an event a player's command caused (the game's ``command_for``, read cheaply
  by the game's stats, ``Tally.mover``); it is the subject's own unless a bot made it for
  a person: the seat was taken over (seat-control events) or the move was automatic (the
  turn ran out). Bots seated from the start make their own moves.
- at the final event every seat's subject plays a match, won or lost; a person whose seat a
  bot held at the end (taken over and not handed back) also *abandoned* it; the match is
  rated (:mod:`services.stats.ratings`) and recorded in the subjects' history and in the
  ISO week's and month's figures (UTC, from the final event's time).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from dast.v1 import log_pb2
from engine.core.protocol import Game
from engine.core.stats import GameStats, MatchFrame, MatchResult, stats_of
from engine.registry import GAMES, GAMES_BY_NAME
from services.platform.bus import Published
from services.stats import ratings
from services.stats.store import (
    SUBJECT_CHARS,
    Changes,
    PeriodDelta,
    PlayerKey,
    Progress,
    Rating,
    Reads,
    StatsStore,
)

MAX_BUFFERED: Final = 5_000
"""Events buffered beyond a gap in one game before it is repaired from the game service."""
MAX_KNOWN: Final = 100_000
"""Running games whose first event is kept read (a cache: read again when forgotten)."""
_log = structlog.get_logger(component="stats")


@dataclass(eq=False)
class Delivery:
    """One event as the feed delivered it, and how to acknowledge it (after the commit)."""

    published: Published
    ack: Callable[[], Any] | None = None
    """Acknowledges the delivery (a coroutine function, or None when nothing acknowledges)."""


@dataclass
class Outcome:
    """What a batch did."""

    settled: list[Delivery] = field(default_factory=list)
    """Deliveries now applied or recognized as repeats: acknowledge them."""
    applied: int = 0
    """Events applied for the first time."""
    repair: set[str] = field(default_factory=set)
    """Games to repair (their log fetched whole): a gap with the final event behind it."""
    finished: list[str] = field(default_factory=list)
    """Games whose final event this batch applied."""


def subject_of(player: Any) -> str:
    """Whom a seat's figures belong to: a bot seated from the start is rated by its level
    (``bot:<level>``, read from a lobby bot's id ``bot:<level>:<seat>``, else its name);
    anyone else is its player id."""
    if not player.is_bot:
        subject = str(player.player_id)
    else:
        parts = str(player.player_id).split(":")
        name = parts[1] if len(parts) >= 2 and parts[0] == "bot" and parts[1] else (
            player.display_name or player.player_id)
        subject = f"bot:{name}"
    return subject[:SUBJECT_CHARS]  # ids are shorter; a long bot name must not stall a batch


def periods_of(at_ms: int) -> tuple[str, str]:
    """The ISO week (``W2026-49``) and month (``M2026-12``) of a UTC time in ms."""
    moment = datetime.datetime.fromtimestamp(max(at_ms, 0) / 1000, tz=datetime.UTC)
    year, week, _ = moment.isocalendar()
    return f"W{year:04d}-{week:02d}", f"M{moment.year:04d}-{moment.month:02d}"


@dataclass(frozen=True, slots=True)
class _Known:
    """What a game's first event says, read once per game and kept while it runs."""

    game: Game
    stats: GameStats | None
    """None: a game without statistics (or a first event its stats refuse): followed for its
    progress only."""
    frame: MatchFrame | None
    subjects: tuple[str, ...] = ()
    keys: tuple[PlayerKey, ...] = ()
    people: tuple[bool, ...] = ()
    """Per seat: a person (whose moves a bot may make), not a bot seated from the start."""


@dataclass(slots=True)
class _Game:
    """One game during a batch: its progress and the moves counted so far."""

    progress: Progress
    known: _Known
    own_moves: list[int]
    bot_moves: list[int]
    """Moves per seat during the batch: the seat's own, and a bot's for a person."""

    def flush_moves(self, changes: Changes) -> None:
        """Add the batch's moves to the subjects' changes."""
        known = self.known
        for seat, key in enumerate(known.keys):
            own, bot = self.own_moves[seat], self.bot_moves[seat]
            if own or bot:
                delta = changes.player(key)
                delta.is_bot = not known.people[seat]
                delta.own_moves += own
                delta.bot_moves += bot


@dataclass
class _Finished:
    game: _Game
    result: MatchResult
    at_ms: int


class Projector:
    """Applies batches of deliveries to a :class:`StatsStore` (one writer at a time)."""

    def __init__(self, store: StatsStore) -> None:
        self.store = store
        self._buffered: dict[str, dict[int, list[Delivery]]] = {}
        self._known: dict[str, _Known] = {}

    @property
    def buffered(self) -> int:
        """Events waiting behind a gap."""
        return sum(len(events) for events in self._buffered.values())

    def project(self, batch: Sequence[Delivery]) -> Outcome:
        """Apply ``batch`` in one transaction (blocking: run it in a thread).

        :raises Exception: whatever the store raises; nothing is then applied, and the
            same batch may be retried.
        """
        outcome, buffered = self.store.apply(lambda reads: self._project(reads, batch))
        for game_id, waiting in buffered.items():  # only once committed
            if waiting:
                self._buffered[game_id] = waiting
            else:
                self._buffered.pop(game_id, None)
        for game_id in outcome.finished:
            self._known.pop(game_id, None)
        return outcome

    def _project(self, reads: Reads, batch: Sequence[Delivery]
                 ) -> tuple[Changes, tuple[Outcome, dict[str, dict[int, list[Delivery]]]]]:
        outcome = Outcome()
        by_game: dict[str, list[Delivery]] = {}
        for delivery in batch:
            game_id = delivery.published.game_id
            found = by_game.get(game_id)
            if found is None:
                by_game[game_id] = [delivery]
            else:
                found.append(delivery)
        stored = reads.progress(list(by_game))
        changes = Changes()
        finished: list[_Finished] = []
        buffered: dict[str, dict[int, list[Delivery]]] = {}
        settled = outcome.settled
        settle = settled.append
        apply = self._apply
        for game_id, deliveries in by_game.items():
            progress = stored.get(game_id)
            applied = progress.applied_seq if progress is not None else 0
            over = progress is not None and progress.over
            held = self._buffered.get(game_id)
            waiting = {seq: list(found) for seq, found in held.items()} if held else {}
            running: _Game | None = None
            for delivery in deliveries:
                seq = delivery.published.entry.event.seq
                if seq <= applied or over:
                    settle(delivery)  # applied before: a repeat
                    continue
                if seq != applied + 1:
                    # Beyond a gap. A repeat of a buffered event replaces it (the newest
                    # delivery is the one to acknowledge), so repeats never pile up.
                    waiting[seq] = [delivery]
                    continue
                if running is None:
                    running = self._open(reads, game_id, delivery.published, progress)
                    if running is None:  # not a game this service can follow: ignored
                        over = True
                        settle(delivery)
                        continue
                ready = [delivery]
                while True:  # this event, then the buffered ones it unblocks
                    applied += 1
                    settled.extend(ready)
                    outcome.applied += 1
                    done = apply(running, ready[0].published.entry.event, changes)
                    if done is not None or running.progress.over:
                        over = True
                        if done is not None:
                            finished.append(done)
                        outcome.finished.append(game_id)
                        break
                    if not waiting:
                        break
                    next_ready = waiting.pop(applied + 1, None)
                    if next_ready is None:
                        break
                    ready = next_ready
            if over and waiting:
                settled.extend(d for found in waiting.values() for d in found)
                waiting.clear()
            if running is not None:
                running.flush_moves(changes)
                running.progress.applied_seq = applied
                changes.progress[game_id] = running.progress
            buffered[game_id] = waiting
            if waiting and (len(waiting) >= MAX_BUFFERED or any(
                    self._is_final(found[0].published) for found in waiting.values())):
                outcome.repair.add(game_id)
        if finished:
            self._rate(reads, finished, changes)
        return changes, (outcome, buffered)

    @staticmethod
    def _is_final(published: Published) -> bool:
        game = GAMES_BY_NAME.get(published.game_type)
        return game is not None and game.revealed_seed(published.entry.event) is not None

    def _open(self, reads: Reads, game_id: str, published: Published,
              progress: Progress | None) -> _Game | None:
        """The game of ``published`` during this batch (None: no game this service knows,
        or a log that does not start with the game's first event)."""
        if progress is None:
            game = GAMES_BY_NAME.get(published.game_type)
            if game is None or published.entry.event.seq != 1:
                _log.warning("unknown_game", game_id=game_id, game_type=published.game_type)
                return None
            first = published.entry.event.SerializeToString(deterministic=True)
            progress = Progress(game_id, int(game.GAME_TYPE), 0, first, [], False)
        known = self._known.get(game_id)
        if known is None:
            found = GAMES.get(progress.game_type)
            if found is None:
                return None
            if len(self._known) >= MAX_KNOWN:  # games that never end: forget, read again
                self._known.clear()
            first = progress.first_event or reads.first_event(game_id)
            known = self._known[game_id] = _read_first(game_id, found, first)
        if known.frame is not None and not progress.holders:
            progress.holders = [""] * len(known.frame.players)
        seats = len(known.keys)
        return _Game(progress, known, [0] * seats, [0] * seats)

    @staticmethod
    def _apply(running: _Game, event: log_pb2.Event, changes: Changes) -> _Finished | None:
        """Count one event of a game; the finished match when it is the final one."""
        known = running.known
        if event.HasField("seat_control"):
            control = event.seat_control
            if known.frame is not None and control.seat < len(running.progress.holders):
                # Stored comma-separated: a level is kept short and without commas.
                running.progress.holders[control.seat] = (
                    (control.bot_level or "bot").replace(",", ";")[:32] if control.bot else "")
            return None
        stats = known.stats
        if stats is None or known.frame is None:
            if known.game.revealed_seed(event) is not None:
                running.progress.over = True
            return None
        tally = stats.tally(known.frame, event)
        if tally is None:
            return None
        seat = tally.mover
        if seat is not None and seat < len(known.people):
            if known.people[seat] and (event.automatic or running.progress.holders[seat]):
                running.bot_moves[seat] += 1
            else:
                running.own_moves[seat] += 1
        if tally.counts:
            counters = changes.counters
            keys = known.keys
            for seat, counter, amount in tally.counts:
                if seat < len(keys):
                    subject, game_type, variant = keys[seat]
                    key = (subject, game_type, variant, counter)
                    counters[key] = counters.get(key, 0) + amount
        if tally.result is None:
            return None
        running.progress.over = True
        return _Finished(running, tally.result, event.at_ms)

    def _rate(self, reads: Reads, finished: list[_Finished], changes: Changes) -> None:
        """Count, rate and record the finished matches, in the order they finished."""
        keys = sorted({key for done in finished for key in done.game.known.keys})
        current: dict[PlayerKey, Rating] = {key: ratings.fresh() for key in keys}
        current.update(reads.ratings(keys))
        order = reads.rated_matches()
        for done in finished:
            order += 1
            running, result, known = done.game, done.result, done.game.known
            frame = known.frame
            assert frame is not None
            game_type, variant = int(running.progress.game_type), frame.variant
            by_subject = {key[0]: current[key] for key in known.keys}
            teams = [[known.subjects[seat] for seat in team] for team in frame.teams]
            updated = ratings.rate(teams, result.team_ranks, by_subject)
            week, month = periods_of(done.at_ms)
            for seat, key in enumerate(known.keys):
                subject = key[0]
                player = frame.players[seat]
                before = by_subject[subject]
                after = updated.get(subject, before)
                won = seat in result.winners
                abandoned = not player.is_bot and bool(running.progress.holders[seat])
                delta = changes.player(key)
                delta.is_bot = bool(player.is_bot)
                delta.played += 1
                delta.won += int(won)
                delta.lost += int(not won)
                delta.abandoned += int(abandoned)
                first_seat = known.subjects.index(subject) == seat
                change = ratings.ordinal(after) - ratings.ordinal(before) if first_seat else 0.0
                for period in (week, month):
                    period_delta = changes.periods.setdefault(
                        (subject, game_type, variant, period), PeriodDelta())
                    period_delta.played += 1
                    period_delta.won += int(won)
                    period_delta.rating_change += change
                changes.matches.append({
                    "game_id": running.progress.game_id, "seat": seat, "subject": subject,
                    "game_type": game_type, "variant": variant, "ended_at_ms": done.at_ms,
                    "won": won, "abandoned": abandoned, "rating_order": order,
                    "mu_before": before.mu, "sigma_before": before.sigma,
                    "mu_after": after.mu, "sigma_after": after.sigma,
                })
            for subject, rating in updated.items():
                key = (subject, game_type, variant)
                current[key] = rating
                delta = changes.player(key)
                delta.rating = rating
                delta.ordinal = ratings.ordinal(rating)
        changes.rated_matches = order


def _read_first(game_id: str, game: Game, first_event: bytes) -> _Known:
    """What a game's stored first event says (its frame, when the game keeps statistics)."""
    stats = stats_of(game)
    if stats is None:
        return _Known(game, None, None)
    try:
        frame = stats.frame(log_pb2.Event.FromString(first_event))
    except ValueError as error:
        _log.warning("no_frame", game_id=game_id, error=str(error))
        return _Known(game, None, None)
    subjects = tuple(subject_of(player) for player in frame.players)
    game_type = int(game.GAME_TYPE)
    return _Known(game, stats, frame, subjects,
                  tuple((subject, game_type, frame.variant) for subject in subjects),
                  tuple(not player.is_bot for player in frame.players))
