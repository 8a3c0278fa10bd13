"""The SQL store's writes as :class:`~services.platform.store_writer.Write` steps.

Pre-built statements run on the writer's DBAPI cursor (no SQLAlchemy per statement: its
compile and result machinery cost more than SQLite's work). The statements use the tables
of :mod:`services.platform.models`; ``?`` placeholders become ``%s`` for psycopg.

Every step checks before it changes anything, so that a refusal (a StoreError) leaves the
shared transaction of its batch intact; see :mod:`services.platform.store_writer`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from engine.core.chain import GENESIS_HASH
from services.platform.store import (
    AppendResult,
    ChainKeys,
    ConcurrencyConflict,
    GameExists,
    GameNotFound,
    InvalidEntries,
    LogEntry,
    SeatName,
    StoreError,
    check_continuation,
    quoted,
)
from services.platform.store_writer import NOT_READ, Cursor, LostRace, Write

_INSERT_EVENT = (
    "INSERT INTO events (game_id, seq, game_type, event, hash, command_id, at_ms) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_COMMAND = (
    "INSERT INTO commands (game_id, sender, command_id, first_seq, last_seq) "
    "VALUES (?, ?, ?, ?, ?)"
)
_INSERT_GAME = (
    "INSERT INTO games (game_id, game_type, last_seq, last_hash, relayed_seq, "
    "relay_lease_until_ms, spectators_allowed) VALUES (?, ?, ?, ?, ?, 0, ?)"
)
_INSERT_SEAT_NAME = (
    "INSERT INTO game_seat_names (game_id, seat, player_id, display_name, deleted) "
    "VALUES (?, ?, ?, ?, ?)"
)
_GAME_EXISTS = "SELECT 1 FROM games WHERE game_id = ?"
# The head of the log and, in the same read, what this sender's command_id appended before.
_HEAD_AND_COMMAND = (
    "SELECT g.game_type, g.last_seq, g.last_hash, c.first_seq, c.last_seq FROM games g "
    "LEFT JOIN commands c ON c.game_id = g.game_id AND c.sender = ? AND c.command_id = ? "
    "WHERE g.game_id = ?"
)
_COMMAND = (
    "SELECT first_seq, last_seq FROM commands WHERE game_id = ? AND sender = ? "
    "AND command_id = ?"
)
# PostgreSQL: _HEAD_AND_COMMAND for every append of a batch in one statement, the games locked
# in one order (byte order, as the writer sorts its writes) so that batches never deadlock.
_HEADS_OF_BATCH = (
    "SELECT k.position, g.game_type, g.last_seq, g.last_hash, c.first_seq, c.last_seq "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[]) "
    "AS k(game_id, sender, command_id, position) "
    "JOIN games g ON g.game_id = k.game_id "
    "LEFT JOIN commands c ON c.game_id = k.game_id AND c.sender = k.sender "
    "AND c.command_id = k.command_id "
    'ORDER BY g.game_id COLLATE "C" FOR UPDATE OF g'
)
_ENTRIES_BETWEEN = (
    "SELECT event, hash FROM events WHERE game_id = ? AND seq > ? AND seq <= ? ORDER BY seq"
)
_MOVE_HEAD = "UPDATE games SET last_seq = ?, last_hash = ? WHERE game_id = ? AND last_seq = ?"
# In-process bus: the caller publishes right after the commit, so the outbox watermark moves
# with the head (only when it was caught up: otherwise the relay still owes older events).
_MOVE_HEAD_RELAYED = (
    "UPDATE games SET last_seq = ?, last_hash = ?, "
    "relayed_seq = CASE WHEN relayed_seq >= ? THEN ? ELSE relayed_seq END "
    "WHERE game_id = ? AND last_seq = ?"
)


AppendKey = tuple[str, str | None, str | None]
"""What a batch reads for an append: its game, and its command's sender and id (if any)."""


def entry_of(event_bytes: bytes, hash_: bytes) -> LogEntry:
    """A LogEntry from its stored columns."""
    entry = LogEntry(hash=bytes(hash_))
    entry.event.ParseFromString(bytes(event_bytes))
    return entry


# PostgreSQL: the appends of a whole batch (each the only write of its game there, its checks
# passed under the lock of the batch's head read) in ONE statement, whatever their number:
# the rows come as arrays, so the text never changes and the server prepares it once. The
# count of heads moved tells whether every game was still where its checks found it.
_BATCH_APPEND = (
    "WITH new_events AS (INSERT INTO events (game_id, seq, game_type, event, hash, command_id, "
    "at_ms) SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::bytea[], "
    "%s::bytea[], %s::text[], %s::bigint[])), "
    "new_commands AS (INSERT INTO commands (game_id, sender, command_id, first_seq, last_seq) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[])), "
    "moved AS (UPDATE games g SET last_seq = m.last_seq, last_hash = m.last_hash, "
    "relayed_seq = CASE WHEN m.relayed AND g.relayed_seq >= m.prev_seq THEN m.last_seq "
    "ELSE g.relayed_seq END "
    "FROM unnest(%s::text[], %s::bigint[], %s::bytea[], %s::bigint[], %s::bool[]) "
    "AS m(game_id, last_seq, last_hash, prev_seq, relayed) "
    "WHERE g.game_id = m.game_id AND g.last_seq = m.prev_seq RETURNING 1) "
    "SELECT count(*) FROM moved"
)


# PostgreSQL, without reading first: the appends of a batch, each with the head its caller
# decided after, in ONE statement run in autocommit (its own transaction, one round trip).
# The games' rows are locked in byte order (as the writer's batches and the relay lock
# them) before anything joins them; a head that is not the expected one fails the statement
# (a division by zero on the count of heads moved), as does a command id already used (the
# key of `commands`) or a seq already taken: nothing is then written, and the writer runs
# the batch the usual way, which reads and gives each append its proper outcome.
_BLIND_APPEND = (
    "WITH locked AS (SELECT game_id FROM games WHERE game_id = ANY(%s::text[]) "
    'ORDER BY game_id COLLATE "C" FOR NO KEY UPDATE), '
    "new_events AS (INSERT INTO events (game_id, seq, game_type, event, hash, command_id, "
    "at_ms) SELECT e.game_id, e.seq, g.game_type, e.event, e.hash, e.command_id, e.at_ms "
    "FROM unnest(%s::text[], %s::bigint[], %s::bytea[], %s::bytea[], %s::text[], "
    "%s::bigint[]) AS e(game_id, seq, event, hash, command_id, at_ms) "
    "JOIN locked l ON l.game_id = e.game_id JOIN games g ON g.game_id = e.game_id), "
    "new_commands AS (INSERT INTO commands (game_id, sender, command_id, first_seq, last_seq) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[])), "
    "moved AS (UPDATE games g SET last_seq = m.last_seq, last_hash = m.last_hash, "
    "relayed_seq = CASE WHEN m.relayed AND g.relayed_seq >= m.prev_seq THEN m.last_seq "
    "ELSE g.relayed_seq END "
    "FROM unnest(%s::text[], %s::bigint[], %s::bytea[], %s::bigint[], %s::bool[], "
    "%s::bytea[]) AS m(game_id, last_seq, last_hash, prev_seq, relayed, prev_hash) "
    "JOIN locked l ON l.game_id = m.game_id "
    "WHERE g.game_id = m.game_id AND g.last_seq = m.prev_seq AND g.last_hash = m.prev_hash "
    "RETURNING 1) "
    "SELECT 1 / (CASE WHEN count(*) = %s THEN 1 ELSE 0 END) FROM moved"
)


@dataclass(frozen=True)
class BlindAppend:
    """What an append offers the writer's blind step (:meth:`Statements.write_blind`)."""

    rows: list[tuple[object, ...]]
    """``(game_id, seq, event, hash, command_id, at_ms)`` per event (the game type is the
    game's own, joined in the statement)."""
    command: tuple[object, ...]
    """``(game_id, sender, command_id, first_seq, last_seq)``, or empty without a command."""
    move: tuple[str, int, bytes, int, bool, bytes]
    """``(game_id, last_seq, last_hash, previous last_seq, relayed, previous last_hash)``."""


@dataclass(frozen=True)
class DeferredAppend:
    """What an append leaves to its batch's single statement (:meth:`Statements.finish`)."""

    rows: list[tuple[object, ...]]
    command: tuple[object, ...]
    """``(game_id, sender, command_id, first_seq, last_seq)``, or empty without a command."""
    move: tuple[str, int, bytes, int, bool]
    """``(game_id, last_seq, last_hash, previous last_seq, relayed)``."""


@functools.lru_cache(maxsize=64)
def combined_append(events: int, with_command: bool, relayed: bool) -> str:
    """PostgreSQL: an append's three writes in ONE statement (data-modifying CTEs), so that it
    costs two round trips (read the head, write) instead of four."""
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * events)
    command = (
        ", new_command AS (INSERT INTO commands (game_id, sender, command_id, first_seq, "
        "last_seq) VALUES (%s, %s, %s, %s, %s))" if with_command else ""
    )
    move = _MOVE_HEAD_RELAYED if relayed else _MOVE_HEAD
    return (
        "WITH new_events AS (INSERT INTO events (game_id, seq, game_type, event, hash, "
        f"command_id, at_ms) VALUES {values}){command} {move.replace('?', '%s')}"
    )


@dataclass(frozen=True)
class Statements:
    """The write statements in one driver's placeholder style."""

    insert_event: str
    insert_command: str
    insert_game: str
    insert_seat_name: str
    game_exists: str
    head_and_command: str
    command: str
    select_entries: str
    move_head: str
    move_head_relayed: str
    combine_writes: bool
    """Whether an append's writes go as one statement (:func:`combined_append`)."""
    batch_heads: bool
    """Whether a batch reads the heads of all its appends at once (:meth:`read_heads`)."""
    batch_writes: bool
    """Whether a batch writes all its appends at once (:meth:`finish`)."""

    @classmethod
    def for_dialect(cls, dialect: str) -> Statements:
        """The statements for ``sqlite`` (qmark) or ``postgresql`` (psycopg's format)."""
        postgres = dialect == "postgresql"

        def style(sql: str) -> str:
            return sql.replace("?", "%s") if postgres else sql

        lock_head = " FOR UPDATE OF g" if postgres else ""  # SQLite: BEGIN IMMEDIATE locks
        return cls(
            insert_event=style(_INSERT_EVENT),
            insert_command=style(_INSERT_COMMAND),
            insert_game=style(_INSERT_GAME),
            insert_seat_name=style(_INSERT_SEAT_NAME),
            game_exists=style(_GAME_EXISTS),
            head_and_command=style(_HEAD_AND_COMMAND + lock_head),
            command=style(_COMMAND),
            select_entries=style(_ENTRIES_BETWEEN),
            move_head=style(_MOVE_HEAD),
            move_head_relayed=style(_MOVE_HEAD_RELAYED),
            combine_writes=postgres,  # SQLite runs in-process: a statement costs no trip
            batch_heads=postgres,
            batch_writes=postgres,
        )

    def read_heads(self, cursor: Cursor, writes: list[Write[object]]) -> None:
        """The batch-wide read of a :class:`~services.platform.store_writer.GroupWriter`
        (PostgreSQL): lock and read the head of every game the batch appends to, with each
        command's earlier result, in one statement; each append finds its row in
        :attr:`~services.platform.store_writer.Write.batched` (None: no such game). A game
        the batch writes more than once is left to read for itself, after its earlier write.
        """
        reading = [write for write in writes if write.batch_key is not None and write.sole]
        if len(reading) < 2:
            return
        keys = [cast(AppendKey, write.batch_key) for write in reading]
        cursor.execute(_HEADS_OF_BATCH, (
            [key[0] for key in keys], [key[1] for key in keys], [key[2] for key in keys],
            list(range(len(keys))),
        ))
        for write in reading:
            write.batched = None
        for position, *head in cursor.fetchall():
            reading[position].batched = tuple(head)

    def finish(self, cursor: Cursor, writes: list[Write[object]]) -> None:
        """The batch-wide write of a :class:`~services.platform.store_writer.GroupWriter`
        (PostgreSQL): every append that left its changes (:class:`DeferredAppend`) is written
        by one statement.

        :raises LostRace: if a game's head moved since the batch read it (another process).
        """
        deferred = [write.deferred for write in writes if write.deferred is not None]
        if not deferred:
            return
        rows = [row for append in deferred for row in append.rows]
        commands = [append.command for append in deferred if append.command]
        moves = [append.move for append in deferred]
        cursor.execute(_BATCH_APPEND, (
            *_columns(rows, 7), *_columns(commands, 5), *_columns(moves, 5),
        ))
        row = cursor.fetchone()
        if row is None or row[0] != len(moves):
            raise LostRace("a game's head moved past what the batch read")

    @staticmethod
    def write_blind(connection: object, appends: list[BlindAppend]) -> None:
        """The blind step of a :class:`~services.platform.store_writer.GroupWriter`
        (PostgreSQL): every append of the batch in one statement, in autocommit.

        :raises psycopg.Error: having written nothing, when a head is not where an append
            expects it, a command id was used, or a seq is taken (or the connection failed).
        """
        driver = cast(Any, connection).driver_connection
        rows = [row for append in appends for row in append.rows]
        commands = [append.command for append in appends if append.command]
        moves = [append.move for append in appends]
        driver.autocommit = True
        try:
            cast(Any, connection).cursor().execute(_BLIND_APPEND, (
                [move[0] for move in moves], *_columns(rows, 6), *_columns(commands, 5),
                *_columns(moves, 6), len(moves),
            ))
        finally:
            driver.autocommit = False

    def entries_between(
        self, cursor: Cursor, game_id: str, after: int, up_to: int
    ) -> list[LogEntry]:
        """The entries with ``after < seq <= up_to``."""
        cursor.execute(self.select_entries, (game_id, after, up_to))
        return [entry_of(event, hash_) for event, hash_ in cursor.fetchall()]

    def earlier_result(
        self, cursor: Cursor, game_id: str, key: tuple[str, str]
    ) -> AppendResult | None:
        """What the command ``key`` (``(sender, command_id)``) appended to the game, if seen."""
        cursor.execute(self.command, (game_id, *key))
        row = cursor.fetchone()
        if row is None:
            return None
        return AppendResult(self.entries_between(cursor, game_id, row[0] - 1, row[1]), True)


def _columns(rows: Sequence[tuple[object, ...]], width: int) -> list[list[object]]:
    """``rows`` of ``width`` values turned into ``width`` arrays (empty without rows)."""
    if not rows:
        return [[] for _ in range(width)]
    return [list(column) for column in zip(*rows, strict=True)]


def _event_rows(
    game_id: str, game_type: int, entries: Sequence[LogEntry], command_id: str | None
) -> list[tuple[object, ...]]:
    return [
        (game_id, entry.event.seq, game_type, entry.event.SerializeToString(deterministic=True),
         entry.hash, command_id, entry.event.at_ms)
        for entry in entries
    ]


def _insert_events(cursor: Cursor, sql: Statements, rows: list[tuple[object, ...]]) -> None:
    if len(rows) == 1:
        cursor.execute(sql.insert_event, rows[0])
    elif rows:
        cursor.executemany(sql.insert_event, rows)


def create_write(
    sql: Statements, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool,
    spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
) -> Write[None]:
    """The write creating a game (entries already checked to start a chain at seq 1), with
    its seats' display names."""
    head = entries[-1].hash if entries else GENESIS_HASH
    rows = _event_rows(game_id, game_type, entries, None)
    names = [(game_id, name.seat, name.player_id, name.display_name, name.deleted)
             for name in seat_names]

    def run(cursor: Cursor) -> None:
        cursor.execute(sql.game_exists, (game_id,))
        if cursor.fetchone() is not None:
            raise GameExists(f"game {quoted(game_id)} exists")
        cursor.execute(
            sql.insert_game,
            (game_id, game_type, len(entries), head, len(entries) if relayed else 0,
             spectators_allowed),
        )
        _insert_events(cursor, sql, rows)
        if names:
            cursor.executemany(sql.insert_seat_name, names)

    def recover(_cursor: Cursor, violation: Exception) -> None:
        raise GameExists(f"game {quoted(game_id)} exists") from violation

    return Write(run, recover, lock_key=game_id)


def append_write(
    sql: Statements,
    game_id: str,
    entries: Sequence[LogEntry],
    key: tuple[str, str] | None,
    *,
    relayed: bool,
    chain_keys: ChainKeys,
    previous_hash: bytes | None = None,
) -> Write[AppendResult]:
    """The write appending one command's entries (see :meth:`EventStore.append`); ``key`` is
    the command's ``(sender, command_id)`` (:func:`~services.platform.store.command_key`).
    With the ``previous_hash`` its caller decided after (PostgreSQL), it offers the writer a
    write that reads nothing first (:class:`BlindAppend`)."""
    entries = list(entries)
    sender, command_id = key if key is not None else (None, None)

    def blind() -> BlindAppend | None:
        assert previous_hash is not None
        previous = entries[0].event.seq - 1
        chain_key = chain_keys.known(game_id) if previous > 0 else None
        if previous > 0 and chain_key is None:
            return None  # the key comes from the game's first event: read it the usual way
        try:
            check_continuation(game_id, previous, previous_hash, entries, chain_key)
        except StoreError:
            return None  # refused the usual way, under the lock, with the stored head
        first, last = entries[0].event.seq, entries[-1].event.seq
        return BlindAppend(
            rows=[(game_id, entry.event.seq, entry.event.SerializeToString(deterministic=True),
                   entry.hash, command_id, entry.event.at_ms) for entry in entries],
            command=(game_id, sender, command_id, first, last) if key is not None else (),
            move=(game_id, last, entries[-1].hash, previous, relayed, previous_hash),
        )

    def run(cursor: Cursor) -> AppendResult:
        head = write.batched  # the batch's read of the head, if it made one
        if head is NOT_READ:
            cursor.execute(sql.head_and_command, (sender, command_id, game_id))
            head = cursor.fetchone()
        if head is None:
            raise GameNotFound(f"no game {quoted(game_id)}")
        game_type, last_seq, last_hash, seen_first, seen_last = head
        if seen_first is not None:
            seen = sql.entries_between(cursor, game_id, seen_first - 1, seen_last)
            return AppendResult(seen, duplicate=True)
        if not entries:
            raise InvalidEntries(f"game {quoted(game_id)}: a command must append at least "
                                 "one event")
        try:
            chain_key = (
                None if last_seq == 0 else chain_keys.key_for(
                    game_id, lambda: sql.entries_between(cursor, game_id, 0, 1)[0].event
                )
            )
            check_continuation(game_id, last_seq, bytes(last_hash), entries, chain_key)
        except ConcurrencyConflict:
            # PostgreSQL: a head locked after waiting for a rival's commit is re-read fresh,
            # but the joined command row is of the statement's older snapshot: the rival may
            # have been this very command's retry. Ask again in a new statement.
            earlier = sql.earlier_result(cursor, game_id, key) if key is not None else None
            if earlier is not None:
                return earlier
            raise
        # Checked under the write lock: nothing below may refuse, only fail (LostRace).
        rows = _event_rows(game_id, game_type, entries, command_id)
        first, last = entries[0].event.seq, entries[-1].event.seq
        command = (game_id, sender, command_id, first, last) if key is not None else ()
        if write.may_defer:
            write.deferred = DeferredAppend(
                rows, command, (game_id, last, entries[-1].hash, last_seq, relayed))
            return AppendResult(entries, duplicate=False)
        move: tuple[object, ...] = (
            (last, entries[-1].hash, last_seq, last, game_id, last_seq) if relayed
            else (last, entries[-1].hash, game_id, last_seq)
        )
        if sql.combine_writes:
            statement = combined_append(len(rows), bool(command), relayed)
            cursor.execute(statement, (*(value for row in rows for value in row), *command, *move))
        else:
            _insert_events(cursor, sql, rows)
            if command:
                cursor.execute(sql.insert_command, command)
            cursor.execute(sql.move_head_relayed if relayed else sql.move_head, move)
        if cursor.rowcount != 1:
            raise LostRace(f"game {quoted(game_id)}: the head moved past seq {last_seq}")
        return AppendResult(entries, duplicate=False)

    def recover(cursor: Cursor, violation: Exception) -> AppendResult:
        # Either another writer took the seq, or this very command raced its retry.
        if key is not None:
            earlier = sql.earlier_result(cursor, game_id, key)
            if earlier is not None:
                return earlier
        raise ConcurrencyConflict(
            f"game {quoted(game_id)}: seq {entries[0].event.seq} is already taken"
        ) from violation

    batch_key: AppendKey | None = (game_id, sender, command_id) if sql.batch_heads else None
    write = Write(run, recover, lock_key=game_id, batch_key=batch_key)
    if previous_hash is not None and sql.batch_writes and entries:
        write.blind = blind
        write.blind_result = AppendResult(entries, duplicate=False)
    return write
