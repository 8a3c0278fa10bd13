"""The SQLAlchemy engine of a service's own tables: PostgreSQL in production, SQLite
embedded, each configured the one way the services rely on.

- PostgreSQL: a pool whose connections are checked before use (``pool_pre_ping``), so a
  database that restarted costs a reconnect, not an error; and a session that stays idle
  inside a transaction longer than :data:`IDLE_IN_TRANSACTION_MS` is ended by the server.
  Our transactions run their statements back to back, so only a frozen process (stopped,
  swapped out, a pause of its whole VM) stays idle in one, and it would hold its rows'
  locks for as long as it is frozen: every other replica writing the same game would wait
  for it, and its writer thread with every other game behind it. Ended, the transaction
  rolls back; the frozen process finds its connection gone when it wakes, and runs its
  writes again (their checks then see what was written meanwhile).
- SQLite: the file in WAL mode, a 30 s busy timeout, and every transaction ``BEGIN
  IMMEDIATE`` (it takes the write lock first, so two writers queue instead of failing half
  way); an in-memory database is one shared connection. The driver's own transaction
  handling is off so that SQLAlchemy's ``begin`` is the one that counts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Engine, MetaData, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

IDLE_IN_TRANSACTION_MS = 5_000
"""How long PostgreSQL lets a session of ours sit idle inside a transaction (see above)."""


def open_sql_engine(url: str, *, owner: str, pool_size: int | None = None,
                    sqlite_synchronous: str | None = None) -> Engine:
    """An engine for ``url`` (PostgreSQL or SQLite).

    :param owner: whose store it is (named in the error of an unsupported URL).
    :param pool_size: PostgreSQL connections kept open (with as many more on demand);
        None: SQLAlchemy's default.
    :param sqlite_synchronous: SQLite's ``synchronous`` pragma (e.g. ``NORMAL`` for tables
        rebuilt from a durable log anyway); None: SQLite's default (``FULL``).
    :raises ValueError: for a URL of another database.
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        pool = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": pool_size}
        return create_engine(
            url, pool_pre_ping=True,
            connect_args={"options": _session_options(parsed.query.get("options"))}, **pool,
        )
    if backend != "sqlite":
        raise ValueError(f"unsupported {owner} store URL {parsed!r}")
    in_memory = parsed.database in (None, "", ":memory:")
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                           poolclass=StaticPool if in_memory else None)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        if sqlite_synchronous is not None:
            cursor.execute(f"PRAGMA synchronous={sqlite_synchronous}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _session_options(in_url: str | tuple[str, ...] | None) -> str:
    """libpq's ``options`` with our session settings after any the URL gives (a URL's
    ``?options=`` would otherwise be replaced, not joined)."""
    ours = f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
    given = " ".join(in_url) if isinstance(in_url, tuple) else in_url
    return f"{given} {ours}" if given else ours


def open_tables(url: str | None, metadata: MetaData, *, owner: str,
                pool_size: int | None = None, sqlite_synchronous: str | None = None) -> Engine:
    """:func:`open_sql_engine` for ``url`` (None: a private in-memory SQLite database) with
    ``metadata``'s tables created when missing.

    :raises ValueError: for a URL of another database.
    """
    engine = open_sql_engine(url or "sqlite://", owner=owner, pool_size=pool_size,
                             sqlite_synchronous=sqlite_synchronous)
    try:
        metadata.create_all(engine)
    except DBAPIError:
        # Another replica created the tables at the same moment: they exist now.
        metadata.create_all(engine)
    return engine


class SqlTables:
    """What a service's own store shares with the others: its engine, and on SQLite one
    lock around every use of it (one file, one writer; an in-memory database is a single
    connection). Synchronous and thread-safe; async code calls it with ``asyncio.to_thread``.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock: contextlib.AbstractContextManager[Any] = (
            contextlib.nullcontext() if engine.dialect.name == "postgresql" else threading.RLock()
        )

    def close(self) -> None:
        """Release connections (after any call still running in another thread: an
        in-memory SQLite database is one connection, closing it under a query crashes)."""
        with self._lock:
            self._engine.dispose()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with self._lock, self._engine.begin() as connection:
            yield connection

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._lock, self._engine.connect() as connection:
            yield connection
