"""The event store: every game's append-only log, keyed by ``(game_id, seq)``.

docs/architecture.md "Event store and bus". A command's events are appended in one transaction; the
primary key ``(game_id, seq)`` is the optimistic-concurrency check; a ``command_id`` makes a
retried command append nothing; every entry must continue the game's hash chain
(:mod:`engine.core.chain`). The store also keeps the relay's outbox (:class:`OutboxStore`):
which appended events still have to be published on the bus.

A command id belongs to its ``sender`` (who sent the command, as the caller names it): the
store remembers ``(game_id, sender, command_id)``, so a retry by the same sender is a
duplicate while the same id from anyone else is a new command. Otherwise whoever guessed
another caller's next id first could make that caller's command vanish as a "duplicate".

Errors::

    StoreError
     ├── GameNotFound          no such game
     ├── GameExists            create_game for an id already taken
     ├── ConcurrencyConflict   (game_id, seq) already taken: a lost race (gRPC ABORTED)
     └── InvalidEntries        entries that do not continue the log (seq gap, broken chain)

Implementations: :class:`MemoryEventStore` (here, for unit tests) and
:class:`services.platform.store_sql.SqlEventStore` (SQLite and PostgreSQL), chosen by
:func:`open_store`. All are synchronous and thread-safe. The SQL store also offers its writes
as coroutines (:class:`SubmitsWrites`), settled by its group-commit writer thread, so that
async code awaits them without a thread hop; other stores are called through
``asyncio.to_thread``.

``relayed=True`` on a write says that the caller publishes its events on the (in-process)
bus itself right after the commit: the outbox watermark moves with the log's head, so the
relay has nothing to re-read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from dast.v1 import log_pb2
from engine.core.chain import GENESIS_HASH, chain_hash, log_chain_key
from services.platform.clock import wall_clock_ms as now_ms

LogEntry = log_pb2.LogEntry


class StoreError(Exception):
    """Base of every error the event store raises."""


class GameNotFound(StoreError):
    """Raised when a game id has no log."""


class GameExists(StoreError):
    """Raised by ``create_game`` when the game id is already taken."""


class ConcurrencyConflict(StoreError):
    """Raised when ``(game_id, seq)`` is already taken: another writer won the race."""


class InvalidEntries(StoreError, ValueError):
    """Raised when entries do not continue the log: a seq gap or a hash off the chain."""


@dataclass(frozen=True)
class AppendResult:
    """What one command appended."""

    entries: list[LogEntry]
    """The entries of this command; for a repeated ``command_id``, the ones first appended."""
    duplicate: bool
    """True when the ``command_id`` had been seen: nothing was appended."""


@dataclass(frozen=True, slots=True)
class SeatName:
    """The display name of one seat of a game, kept beside its log, never in it (an
    account's erasure blanks it; ``deleted``: blanked so)."""

    seat: int
    """The player's index in the game's ``players`` as created."""
    player_id: str
    display_name: str
    deleted: bool = False


RELAY_LEASE_MS = 5_000
"""How long a relay's claim on a game's outbox lasts unless renewed (the relay renews its
claims while it holds them): after a relay dies, its games wait at most this long before
another relay publishes them."""


@dataclass(frozen=True)
class Unrelayed:
    """A game's events that the relay has claimed and must publish, in seq order."""

    game_id: str
    game_type: int
    entries: list[LogEntry]
    interrupted: bool = False
    """True when the game's previous claim ended without recording how far it got: its relay
    died (the lease ran out) or its publish failed midway (:meth:`OutboxStore.release` with
    ``interrupted``). The bus may then already hold some of ``entries``."""


@runtime_checkable
class EventStore(Protocol):
    """Every game's log. Synchronous; thread-safe."""

    def create_game(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> None:
        """Create a game whose log starts with ``entries`` (seq 1 onwards, may be empty).

        ``relayed``: the caller publishes the entries itself (see the module docstring).
        ``spectators_allowed``: whether players without a seat may watch the match (kept
        with the game, read back by :meth:`spectators_allowed`). ``seat_names``: its seats'
        display names, written in the same transaction (read back by :meth:`seat_names`).

        :raises GameExists: if ``game_id`` is taken.
        :raises InvalidEntries: if the entries do not start a chain at seq 1.
        """
        ...

    def append(
        self,
        game_id: str,
        entries: Sequence[LogEntry],
        *,
        command_id: str | None,
        sender: str | None = None,
        relayed: bool = False,
    ) -> AppendResult:
        """Append one command's entries (``entries[0].event.seq == last_seq + 1``) atomically.

        A ``command_id`` that ``sender`` used before in this game returns the first result and
        appends nothing; ``command_id=None`` is never a duplicate.
        ``relayed``: the caller publishes the entries itself (see the module docstring).

        :raises ValueError: if a ``command_id`` comes without its ``sender``.
        :raises GameNotFound: if the game does not exist.
        :raises ConcurrencyConflict: if another writer already took one of the seqs.
        :raises InvalidEntries: if the entries are empty, skip a seq or break the hash chain.
        """
        ...

    def find_command(self, game_id: str, sender: str, command_id: str) -> AppendResult | None:
        """What ``sender``'s ``command_id`` appended to the game (``duplicate=True``), or None
        if that sender never used it there.

        :raises GameNotFound: if the game does not exist.
        """
        ...

    def load(self, game_id: str, after_seq: int = 0) -> list[LogEntry]:
        """The game's entries with seq > ``after_seq``, in order.

        :raises GameNotFound: if the game does not exist.
        """
        ...

    def game_type(self, game_id: str) -> int:
        """The game's ``dast.v1.GameType``.

        :raises GameNotFound: if the game does not exist.
        """
        ...

    def last_seq(self, game_id: str) -> int:
        """The seq of the game's last event (0 for an empty log).

        :raises GameNotFound: if the game does not exist.
        """
        ...

    def spectators_allowed(self, game_id: str) -> bool:
        """Whether the match admits players who hold no seat in it (set at creation; never
        changes, so callers may cache it).

        :raises GameNotFound: if the game does not exist.
        """
        ...

    def seat_names(self, game_id: str) -> list[SeatName]:
        """The display names of the game's seats, by seat (empty for a game stored without
        them: its log holds its names)."""
        ...

    def erase_names(self, player_id: str) -> int:
        """Blank every seat name of ``player_id`` (an erased account), marking them deleted;
        how many seats changed (0 the second time)."""
        ...

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class SubmitsWrites(Protocol):
    """A store whose writes are awaited on the event loop without a thread hop (the SQL
    store's group-commit writer settles them)."""

    async def create_game_async(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> None:
        """:meth:`EventStore.create_game`, returning once committed (same errors)."""
        ...

    async def append_async(
        self,
        game_id: str,
        entries: Sequence[LogEntry],
        *,
        command_id: str | None,
        sender: str | None = None,
        relayed: bool = False,
        previous_hash: bytes | None = None,
    ) -> AppendResult:
        """:meth:`EventStore.append`, returning once committed (same errors).

        ``previous_hash``: the hash of the event the caller decided after (its snapshot's
        head). A store may then write without reading the head first, its write failing by
        itself if the head is elsewhere; the outcome is the same either way.
        """
        ...


@runtime_checkable
class OutboxStore(EventStore, Protocol):
    """An event store that also tracks which events the relay still has to publish."""

    def claim_unrelayed(
        self, *, max_games: int = 100, max_events: int = 500, lease_ms: int = RELAY_LEASE_MS
    ) -> list[Unrelayed]:
        """Claim up to ``max_games`` games with unrelayed events (not claimed by anyone else).

        A claim lasts ``lease_ms`` unless :meth:`renew_claims` extends it or
        :meth:`mark_relayed` or :meth:`release` ends it, so a relay that dies holding a claim
        delays its games by at most the lease; the next claim of such a game says so
        (:attr:`Unrelayed.interrupted`).
        """
        ...

    def renew_claims(self, game_ids: Sequence[str], *, lease_ms: int = RELAY_LEASE_MS) -> None:
        """Extend to ``lease_ms`` from now the claims on ``game_ids`` that are still running.

        A claim already ended (marked, released) or run out is left alone, so a renewal that
        arrives late never revives a claim nor keeps a dead relay's games from the others.
        """
        ...

    def mark_relayed(self, game_id: str, seq: int) -> None:
        """Record that every event of the game up to ``seq`` reached the bus; end the claim."""
        ...

    def mark_relayed_many(self, marks: Sequence[tuple[str, int]]) -> None:
        """:meth:`mark_relayed` for several ``(game_id, seq)`` at once (one transaction)."""
        ...

    def release(self, game_ids: Sequence[str], *, interrupted: bool = False) -> None:
        """End claims without relaying (publishing failed); others may claim them now.

        ``interrupted``: some of the claimed events may have reached the bus (a publish failed
        midway), so the next claim is :attr:`Unrelayed.interrupted`.
        """
        ...


def command_key(command_id: str | None, sender: str | None) -> tuple[str, str] | None:
    """The key a command's result is remembered under: ``(sender, command_id)``, or None for
    a command without id.

    :raises ValueError: if a ``command_id`` comes without its ``sender``: an id nobody owns
        is one that anybody could squat on.
    """
    if command_id is None:
        return None
    if not sender:
        raise ValueError(f"command {quoted(command_id)} names no sender")
    return sender, command_id


class ChainKeys:
    """Each game's chain key (:func:`engine.core.chain.log_chain_key`), kept once known: it
    follows from the game's first event, which never changes, so any replica may cache it."""

    def __init__(self, max_games: int = 100_000) -> None:
        self._keys: OrderedDict[str, bytes] = OrderedDict()
        self._max_games = max_games
        self._lock = threading.Lock()

    def known(self, game_id: str) -> bytes | None:
        """The game's chain key if already known (nothing is read)."""
        with self._lock:
            return self._keys.get(game_id)

    def key_for(self, game_id: str, first_event: Callable[[], log_pb2.Event]) -> bytes:
        """The game's chain key, reading its first event with ``first_event()`` when unknown."""
        with self._lock:
            key = self._keys.get(game_id)
            if key is not None:
                self._keys.move_to_end(game_id)
                return key
        key = log_chain_key(first_event())
        with self._lock:
            self._keys[game_id] = key
            while len(self._keys) > self._max_games:
                self._keys.popitem(last=False)
        return key


def check_continuation(
    game_id: str,
    last_seq: int,
    last_hash: bytes,
    entries: Sequence[LogEntry],
    key: bytes | None = None,
) -> None:
    """Check that ``entries`` continue a log ending at ``last_seq`` with hash ``last_hash``,
    chained under the game's ``key`` (None: the entries start the log, and the key follows
    from their first event).

    :raises ConcurrencyConflict: if the first seq is already taken (the caller's view is stale).
    :raises InvalidEntries: on a seq gap or a hash that does not chain.
    """
    if key is None:
        if last_seq != 0:
            raise ValueError(f"game {quoted(game_id)}: continuing seq {last_seq} needs the "
                             "chain key")
        key = log_chain_key(entries[0].event) if entries else b""
    prev_seq, prev_hash = last_seq, last_hash
    for index, entry in enumerate(entries):
        seq = entry.event.seq
        if index == 0 and seq <= last_seq:
            raise ConcurrencyConflict(
                f"game {quoted(game_id)}: seq {seq} is already taken (last seq is {last_seq})"
            )
        if seq != prev_seq + 1:
            raise InvalidEntries(f"game {quoted(game_id)}: seq {seq} does not follow {prev_seq}")
        expected = chain_hash(prev_hash, entry.event, key)
        if entry.hash != expected:
            raise InvalidEntries(f"game {quoted(game_id)}: hash of seq {seq} does not chain")
        prev_seq, prev_hash = seq, expected


def quoted(value: str) -> str:
    """A caller's id as the store's messages quote it, which clients may read
    (:func:`services.platform.validation.quoted_input`; imported on use, since the
    validation module imports the errors module, which imports this one)."""
    from services.platform.validation import quoted_input

    return quoted_input(value)


def copy_entries(entries: Sequence[LogEntry]) -> list[LogEntry]:
    """Independent copies, so that callers never share mutable protos with the store."""
    copies = []
    for entry in entries:
        copy = LogEntry()
        copy.CopyFrom(entry)
        copies.append(copy)
    return copies


INTERRUPTED_LEASE_MS = 1
"""A claim's lease ended by :meth:`OutboxStore.release` with ``interrupted``: long expired,
and not 0 (the mark of a claim that ended cleanly), just as a dead relay's lease looks."""


@dataclass
class _MemoryGame:
    game_type: int
    entries: list[LogEntry] = field(default_factory=list)
    commands: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """``(sender, command_id)`` → the first and last seq the command appended."""
    relayed_seq: int = 0
    lease_until_ms: int = 0
    spectators_allowed: bool = True
    seat_names: list[SeatName] = field(default_factory=list)
    chain_key: bytes | None = None
    """The key of the game's chain hashes, once its first event is stored."""

    @property
    def last_seq(self) -> int:
        return len(self.entries)

    @property
    def last_hash(self) -> bytes:
        return self.entries[-1].hash if self.entries else GENESIS_HASH


class MemoryEventStore:
    """The event store in a dict: the same contract as the SQL store, for unit tests."""

    def __init__(self) -> None:
        self._games: dict[str, _MemoryGame] = {}
        self._lock = threading.Lock()

    def _game(self, game_id: str) -> _MemoryGame:
        game = self._games.get(game_id)
        if game is None:
            raise GameNotFound(f"no game {quoted(game_id)}")
        return game

    def create_game(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> None:
        """See :meth:`EventStore.create_game`."""
        with self._lock:
            if game_id in self._games:
                raise GameExists(f"game {quoted(game_id)} exists")
            check_continuation(game_id, 0, GENESIS_HASH, entries)
            game = _MemoryGame(
                game_type, copy_entries(entries), spectators_allowed=spectators_allowed,
                seat_names=sorted(seat_names, key=lambda name: name.seat),
                chain_key=log_chain_key(entries[0].event) if entries else None,
            )
            if relayed:
                game.relayed_seq = game.last_seq
            self._games[game_id] = game

    def append(
        self,
        game_id: str,
        entries: Sequence[LogEntry],
        *,
        command_id: str | None,
        sender: str | None = None,
        relayed: bool = False,
    ) -> AppendResult:
        """See :meth:`EventStore.append`."""
        command = command_key(command_id, sender)
        with self._lock:
            game = self._game(game_id)
            if command is not None and command in game.commands:
                first, last = game.commands[command]
                return AppendResult(copy_entries(game.entries[first - 1 : last]), duplicate=True)
            if not entries:
                raise InvalidEntries(f"game {quoted(game_id)}: a command must append at least "
                                     "one event")
            check_continuation(game_id, game.last_seq, game.last_hash, entries, game.chain_key)
            if game.chain_key is None:
                game.chain_key = log_chain_key(entries[0].event)
            caught_up = game.relayed_seq >= game.last_seq
            game.entries.extend(copy_entries(entries))
            if relayed and caught_up:
                game.relayed_seq = game.last_seq
            if command is not None:
                game.commands[command] = (entries[0].event.seq, entries[-1].event.seq)
            return AppendResult(copy_entries(entries), duplicate=False)

    def find_command(self, game_id: str, sender: str, command_id: str) -> AppendResult | None:
        """See :meth:`EventStore.find_command`."""
        with self._lock:
            game = self._game(game_id)
            seen = game.commands.get((sender, command_id))
            if seen is None:
                return None
            first, last = seen
            return AppendResult(copy_entries(game.entries[first - 1 : last]), duplicate=True)

    def load(self, game_id: str, after_seq: int = 0) -> list[LogEntry]:
        """See :meth:`EventStore.load`."""
        with self._lock:
            return copy_entries(self._game(game_id).entries[max(after_seq, 0) :])

    def game_type(self, game_id: str) -> int:
        """See :meth:`EventStore.game_type`."""
        with self._lock:
            return self._game(game_id).game_type

    def last_seq(self, game_id: str) -> int:
        """See :meth:`EventStore.last_seq`."""
        with self._lock:
            return self._game(game_id).last_seq

    def spectators_allowed(self, game_id: str) -> bool:
        """See :meth:`EventStore.spectators_allowed`."""
        with self._lock:
            return self._game(game_id).spectators_allowed

    def seat_names(self, game_id: str) -> list[SeatName]:
        """See :meth:`EventStore.seat_names`."""
        with self._lock:
            game = self._games.get(game_id)
            return list(game.seat_names) if game is not None else []

    def erase_names(self, player_id: str) -> int:
        """See :meth:`EventStore.erase_names`."""
        changed = 0
        with self._lock:
            for game in self._games.values():
                for index, name in enumerate(game.seat_names):
                    if name.player_id == player_id and not name.deleted:
                        game.seat_names[index] = SeatName(name.seat, player_id, "", True)
                        changed += 1
        return changed

    def close(self) -> None:
        """Nothing to release."""

    def claim_unrelayed(
        self, *, max_games: int = 100, max_events: int = 500, lease_ms: int = RELAY_LEASE_MS
    ) -> list[Unrelayed]:
        """See :meth:`OutboxStore.claim_unrelayed`."""
        now = now_ms()
        claimed: list[Unrelayed] = []
        with self._lock:
            for game_id in sorted(self._games):
                game = self._games[game_id]
                if game.relayed_seq >= game.last_seq or game.lease_until_ms > now:
                    continue
                interrupted = game.lease_until_ms != 0
                game.lease_until_ms = now + lease_ms
                pending = game.entries[game.relayed_seq : game.relayed_seq + max_events]
                claimed.append(
                    Unrelayed(game_id, game.game_type, copy_entries(pending), interrupted)
                )
                if len(claimed) >= max_games:
                    break
        return claimed

    def mark_relayed(self, game_id: str, seq: int) -> None:
        """See :meth:`OutboxStore.mark_relayed`."""
        with self._lock:
            game = self._game(game_id)
            game.relayed_seq = max(game.relayed_seq, seq)
            game.lease_until_ms = 0

    def mark_relayed_many(self, marks: Sequence[tuple[str, int]]) -> None:
        """See :meth:`OutboxStore.mark_relayed_many`."""
        for game_id, seq in marks:
            self.mark_relayed(game_id, seq)

    def release(self, game_ids: Sequence[str], *, interrupted: bool = False) -> None:
        """See :meth:`OutboxStore.release`."""
        with self._lock:
            for game_id in game_ids:
                self._game(game_id).lease_until_ms = INTERRUPTED_LEASE_MS if interrupted else 0

    def renew_claims(self, game_ids: Sequence[str], *, lease_ms: int = RELAY_LEASE_MS) -> None:
        """See :meth:`OutboxStore.renew_claims`."""
        now = now_ms()
        with self._lock:
            for game_id in game_ids:
                game = self._games.get(game_id)
                if game is not None and game.lease_until_ms > now:
                    game.lease_until_ms = now + lease_ms


def open_store(url: str | None) -> OutboxStore:
    """Open the event store at ``url``.

    ``None`` is a private in-memory SQLite database (nothing written to disk);
    ``sqlite:///path`` a SQLite file (WAL, busy timeout; tables created when missing);
    ``postgresql+psycopg://…`` PostgreSQL, migrated to the latest schema first.

    :raises ValueError: for any other kind of URL.
    """
    from services.platform.store_sql import SqlEventStore

    return SqlEventStore.open(url)
