"""The event store on SQL: SQLite (the embedded default) and PostgreSQL (production).

Both use the tables of :mod:`services.platform.models`. PostgreSQL is migrated with Alembic
(:func:`services.platform.migrations.upgrade_database`); SQLite gets the same tables from
``SQLModel.metadata.create_all``, and a file made before a schema change is brought up to
date by :func:`upgrade_sqlite` (the steps of the Alembic revisions, as SQLite allows).
SQLite write transactions start with ``BEGIN IMMEDIATE`` so that two writers queue on the
busy timeout instead of failing to upgrade a read lock.

Writes (``create_game``, ``append``) go through a :class:`~services.platform.store_writer.
GroupWriter`: one thread with its own DBAPI connection running pre-built SQL, which commits
the writes queued meanwhile together (group commit). An append is one read of the game's
head (with the command's earlier result, if any; ``FOR UPDATE`` on PostgreSQL) and three
writes: the events (one ``executemany``), the command, and the head moved under an
``last_seq`` guard; on PostgreSQL the three writes are one statement and a batch reads the
heads of all its appends in one statement. On PostgreSQL an append that carries the head its
caller decided after (``previous_hash``: the game service's appends do) usually reads nothing:
its batch is one statement in autocommit, failing by itself if a head moved
(:mod:`services.platform.store_writer`). Reads go through SQLAlchemy Core, and so does the
relay's outbox on SQLite; on PostgreSQL the relay's steps are one statement each, on a
connection of their own (:mod:`services.platform.store_outbox_pg`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    bindparam,
    create_engine,
    event,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlmodel import SQLModel

from engine.core.chain import GENESIS_HASH
from services.platform.clock import wall_clock_ms as now_ms
from services.platform.metrics import game_metrics
from services.platform.models import CommandRow, EventRow, GameRow, SeatNameRow
from services.platform.sql_engine import open_sql_engine
from services.platform.store import (
    INTERRUPTED_LEASE_MS,
    RELAY_LEASE_MS,
    AppendResult,
    ChainKeys,
    GameNotFound,
    LogEntry,
    SeatName,
    Unrelayed,
    check_continuation,
    command_key,
    quoted,
)
from services.platform.store_outbox_pg import PostgresOutbox
from services.platform.store_sql_writes import Statements, append_write, create_write, entry_of
from services.platform.store_writer import Cursor, GroupWriter

GAMES = GameRow.__table__  # type: ignore[attr-defined]
EVENTS = EventRow.__table__  # type: ignore[attr-defined]
COMMANDS = CommandRow.__table__  # type: ignore[attr-defined]
SEAT_NAMES = SeatNameRow.__table__  # type: ignore[attr-defined]

SQLITE_BUSY_TIMEOUT_MS = 30_000

def _entry(event_bytes: bytes, hash_: bytes) -> LogEntry:
    return entry_of(event_bytes, hash_)


def _sqlite_columns(connection: Connection, table: str) -> set[str]:
    return {row[1] for row in connection.exec_driver_sql(f"PRAGMA table_info({table})")}


def upgrade_sqlite(engine: Engine) -> None:
    """Bring a SQLite file made by an older version to the tables of the models.

    Revision 0002 (command ids belong to their sender): SQLite cannot change a primary key in
    place, so ``commands`` is rebuilt, its old rows getting sender ``""`` as on PostgreSQL.
    Revision 0003 (the game keeps whether it admits spectators): ``games`` gains the column,
    true for the games already stored, as on PostgreSQL. Revision 0010 (``game_seat_names``)
    is a new table, which ``create_all`` makes.
    """
    with engine.begin() as connection:
        if "sender" not in _sqlite_columns(connection, "commands"):
            connection.exec_driver_sql("ALTER TABLE commands RENAME TO commands_0001")
            COMMANDS.create(connection)
            connection.exec_driver_sql(
                "INSERT INTO commands (game_id, sender, command_id, first_seq, last_seq) "
                "SELECT game_id, '', command_id, first_seq, last_seq FROM commands_0001"
            )
            connection.exec_driver_sql("DROP TABLE commands_0001")
        if "spectators_allowed" not in _sqlite_columns(connection, "games"):
            connection.exec_driver_sql(
                "ALTER TABLE games ADD COLUMN spectators_allowed BOOLEAN NOT NULL DEFAULT 1"
            )


def _sqlite_engine(url: str) -> Engine:
    in_memory = make_url(url).database in (None, "", ":memory:")
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        # One shared connection keeps an in-memory database alive across threads.
        poolclass=StaticPool if in_memory else None,
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class SqlEventStore:
    """:class:`~services.platform.store.OutboxStore` on SQLAlchemy Core over SQLModel tables."""

    def __init__(
        self, engine: Engine, *, on_batch: Callable[[int], None] | None = None
    ) -> None:
        """``on_batch``: told the size of every batch of writes committed together (by
        default the process's ``dast_store_batch_writes`` histogram)."""
        self._engine = engine
        self._is_postgres = engine.dialect.name == "postgresql"
        # SQLite has one writer anyway; serializing in-process keeps the shared in-memory
        # connection safe and spares threads the busy-timeout polling.
        self._lock: contextlib.AbstractContextManager[Any] = (
            contextlib.nullcontext() if self._is_postgres else threading.RLock()
        )
        self._sql = Statements.for_dialect(engine.dialect.name)
        self._chain_keys = ChainKeys()
        self._writer = GroupWriter(
            engine.raw_connection,
            begin=None if self._is_postgres else "BEGIN IMMEDIATE",
            lock=self._lock,
            integrity_error=engine.dialect.loaded_dbapi.IntegrityError,
            prepare=self._sql.read_heads if self._sql.batch_heads else None,
            finish=self._sql.finish if self._sql.batch_writes else None,
            blind=self._sql.write_blind if self._sql.batch_writes else None,
            on_batch=on_batch or game_metrics().store_batch_writes.observe,
        )
        self._outbox = PostgresOutbox(engine.raw_connection) if self._is_postgres else None

    @classmethod
    def open(
        cls, url: str | None, *, on_batch: Callable[[int], None] | None = None
    ) -> SqlEventStore:
        """Open (and create or migrate) the store at ``url``; see :func:`store.open_store`
        (``on_batch``: see the constructor).

        :raises ValueError: if ``url`` is neither SQLite nor PostgreSQL.
        """
        url = url or "sqlite://"
        backend = make_url(url).get_backend_name()
        if backend == "sqlite":
            engine = _sqlite_engine(url)
            SQLModel.metadata.create_all(engine, tables=[GAMES, EVENTS, COMMANDS, SEAT_NAMES])
            upgrade_sqlite(engine)
            return cls(engine, on_batch=on_batch)
        if backend == "postgresql":
            from services.platform.migrations import upgrade_database

            upgrade_database(url)
            return cls(open_sql_engine(url, owner="event"), on_batch=on_batch)
        raise ValueError(f"unsupported event store URL {make_url(url)!r}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with self._lock, self._engine.begin() as connection:
            yield connection

    def create_game(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> None:
        """See :meth:`EventStore.create_game`."""
        self.create_game_future(
            game_id, game_type, entries, relayed=relayed, spectators_allowed=spectators_allowed,
            seat_names=seat_names,
        ).result()

    def create_game_future(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> Future[None]:
        """:meth:`create_game`, done when committed (its errors in the future)."""
        check_continuation(game_id, 0, GENESIS_HASH, entries)
        return self._writer.submit(create_write(
            self._sql, game_id, game_type, entries, relayed=relayed,
            spectators_allowed=spectators_allowed, seat_names=seat_names,
        ))

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
        return self.append_future(
            game_id, entries, command_id=command_id, sender=sender, relayed=relayed
        ).result()

    def append_future(
        self,
        game_id: str,
        entries: Sequence[LogEntry],
        *,
        command_id: str | None,
        sender: str | None = None,
        relayed: bool = False,
        previous_hash: bytes | None = None,
    ) -> Future[AppendResult]:
        """:meth:`append`, done when committed (its errors in the future); ``previous_hash``
        as for :meth:`append_async`.

        :raises ValueError: at once, if a ``command_id`` comes without its ``sender``.
        """
        key = command_key(command_id, sender)
        return self._writer.submit(append_write(
            self._sql, game_id, entries, key, relayed=relayed, chain_keys=self._chain_keys,
            previous_hash=previous_hash,
        ))

    async def create_game_async(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True, seat_names: Sequence[SeatName] = (),
    ) -> None:
        """See :meth:`SubmitsWrites.create_game_async`."""
        check_continuation(game_id, 0, GENESIS_HASH, entries)
        await self._writer.submit_async(create_write(
            self._sql, game_id, game_type, entries, relayed=relayed,
            spectators_allowed=spectators_allowed, seat_names=seat_names,
        ))

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
        """See :meth:`SubmitsWrites.append_async`."""
        key = command_key(command_id, sender)
        return await self._writer.submit_async(
            append_write(
                self._sql, game_id, entries, key, relayed=relayed, chain_keys=self._chain_keys,
                previous_hash=previous_hash,
            )
        )

    def find_command(self, game_id: str, sender: str, command_id: str) -> AppendResult | None:
        """See :meth:`EventStore.find_command`."""
        with self._lock:
            raw = self._engine.raw_connection()
            try:
                cursor: Cursor = raw.cursor()
                earlier = self._sql.earlier_result(cursor, game_id, (sender, command_id))
                if earlier is None:
                    cursor.execute(self._sql.game_exists, (game_id,))
                    if cursor.fetchone() is None:
                        raise GameNotFound(f"no game {quoted(game_id)}")
                raw.rollback()
                return earlier
            finally:
                raw.close()

    @staticmethod
    def _select_entries(
        connection: Connection, game_id: str, after_seq: int, up_to_seq: int | None = None
    ) -> list[LogEntry]:
        query = select(EVENTS.c.event, EVENTS.c.hash).where(
            EVENTS.c.game_id == game_id, EVENTS.c.seq > after_seq
        )
        if up_to_seq is not None:
            query = query.where(EVENTS.c.seq <= up_to_seq)
        rows = connection.execute(query.order_by(EVENTS.c.seq))
        return [_entry(row.event, row.hash) for row in rows]

    def _head(self, connection: Connection, game_id: str) -> Any:
        head = connection.execute(
            select(GAMES.c.game_type, GAMES.c.last_seq).where(GAMES.c.game_id == game_id)
        ).first()
        if head is None:
            raise GameNotFound(f"no game {quoted(game_id)}")
        return head

    def load(self, game_id: str, after_seq: int = 0) -> list[LogEntry]:
        """See :meth:`EventStore.load`."""
        with self._transaction() as connection:
            self._head(connection, game_id)
            return self._select_entries(connection, game_id, after_seq)

    def game_type(self, game_id: str) -> int:
        """See :meth:`EventStore.game_type`."""
        with self._transaction() as connection:
            return int(self._head(connection, game_id).game_type)

    def last_seq(self, game_id: str) -> int:
        """See :meth:`EventStore.last_seq`."""
        with self._transaction() as connection:
            return int(self._head(connection, game_id).last_seq)

    def spectators_allowed(self, game_id: str) -> bool:
        """See :meth:`EventStore.spectators_allowed`."""
        with self._transaction() as connection:
            allowed = connection.execute(
                select(GAMES.c.spectators_allowed).where(GAMES.c.game_id == game_id)
            ).scalar_one_or_none()
        if allowed is None:
            raise GameNotFound(f"no game {quoted(game_id)}")
        return bool(allowed)

    def seat_names(self, game_id: str) -> list[SeatName]:
        """See :meth:`EventStore.seat_names`."""
        with self._transaction() as connection:
            rows = connection.execute(
                select(SEAT_NAMES.c.seat, SEAT_NAMES.c.player_id, SEAT_NAMES.c.display_name,
                       SEAT_NAMES.c.deleted)
                .where(SEAT_NAMES.c.game_id == game_id).order_by(SEAT_NAMES.c.seat)
            ).all()
        return [SeatName(row.seat, row.player_id, row.display_name, bool(row.deleted))
                for row in rows]

    def erase_names(self, player_id: str) -> int:
        """See :meth:`EventStore.erase_names`."""
        with self._transaction() as connection:
            changed = connection.execute(
                update(SEAT_NAMES)
                .where(SEAT_NAMES.c.player_id == player_id, SEAT_NAMES.c.deleted.is_(False))
                .values(display_name="", deleted=True)
            ).rowcount
        return int(changed)

    def close(self) -> None:
        """Finish queued writes, then dispose of the connection pool."""
        self._writer.close()
        if self._outbox is not None:
            self._outbox.close()
        self._engine.dispose()

    def claim_unrelayed(
        self, *, max_games: int = 100, max_events: int = 500, lease_ms: int = RELAY_LEASE_MS
    ) -> list[Unrelayed]:
        """See :meth:`OutboxStore.claim_unrelayed`."""
        if self._outbox is not None:
            return self._outbox.claim_unrelayed(
                max_games=max_games, max_events=max_events, lease_ms=lease_ms)
        now = now_ms()
        with self._transaction() as connection:
            games = list(
                connection.execute(
                    select(
                        GAMES.c.game_id,
                        GAMES.c.game_type,
                        GAMES.c.relayed_seq,
                        GAMES.c.relay_lease_until_ms.label("previous_lease"),
                    )
                    .where(
                        GAMES.c.relayed_seq < GAMES.c.last_seq,
                        GAMES.c.relay_lease_until_ms <= now,
                    )
                    .order_by(GAMES.c.game_id)
                    .limit(max_games)
                )
            )
            if games:
                connection.execute(
                    update(GAMES)
                    .where(GAMES.c.game_id.in_([game.game_id for game in games]))
                    .values(relay_lease_until_ms=now + lease_ms)
                )
            return [
                Unrelayed(
                    game.game_id,
                    game.game_type,
                    self._select_entries(
                        connection, game.game_id, game.relayed_seq,
                        game.relayed_seq + max_events,
                    ),
                    interrupted=game.previous_lease != 0,
                )
                for game in games
            ]

    def mark_relayed(self, game_id: str, seq: int) -> None:
        """See :meth:`OutboxStore.mark_relayed`."""
        self.mark_relayed_many([(game_id, seq)])

    def mark_relayed_many(self, marks: Sequence[tuple[str, int]]) -> None:
        """See :meth:`OutboxStore.mark_relayed_many`."""
        if self._outbox is not None:
            self._outbox.mark_relayed_many(marks)
            return
        if not marks:
            return
        with self._transaction() as connection:
            connection.execute(
                update(GAMES)
                .where(
                    GAMES.c.game_id == bindparam("marked_game"),
                    GAMES.c.relayed_seq < bindparam("marked_seq"),
                )
                .values(relayed_seq=bindparam("marked_seq"), relay_lease_until_ms=0),
                # in game_id order, as the store's writer locks games: no deadlock between them
                [{"marked_game": game, "marked_seq": seq} for game, seq in sorted(marks)],
            )

    def release(self, game_ids: Sequence[str], *, interrupted: bool = False) -> None:
        """See :meth:`OutboxStore.release`."""
        if self._outbox is not None:
            self._outbox.release(game_ids, interrupted=interrupted)
            return
        if not game_ids:
            return
        with self._transaction() as connection:
            connection.execute(
                update(GAMES)
                .where(GAMES.c.game_id.in_(list(game_ids)))
                .values(relay_lease_until_ms=INTERRUPTED_LEASE_MS if interrupted else 0)
            )

    def renew_claims(self, game_ids: Sequence[str], *, lease_ms: int = RELAY_LEASE_MS) -> None:
        """See :meth:`OutboxStore.renew_claims`."""
        if self._outbox is not None:
            self._outbox.renew_claims(game_ids, lease_ms=lease_ms)
            return
        if not game_ids:
            return
        now = now_ms()
        with self._transaction() as connection:
            connection.execute(
                update(GAMES)
                .where(GAMES.c.game_id.in_(list(game_ids)),
                       GAMES.c.relay_lease_until_ms > now)
                .values(relay_lease_until_ms=now + lease_ms)
            )
