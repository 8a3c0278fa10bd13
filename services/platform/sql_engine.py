"""The SQLAlchemy engine of a service's own tables: PostgreSQL in production, SQLite
embedded, each configured the one way the services rely on.

- PostgreSQL: a pool whose connections are checked before use (``pool_pre_ping``), so a
  database that restarted costs a reconnect, not an error.
- SQLite: the file in WAL mode, a 30 s busy timeout, and every transaction ``BEGIN
  IMMEDIATE`` (it takes the write lock first, so two writers queue instead of failing half
  way); an in-memory database is one shared connection. The driver's own transaction
  handling is off so that SQLAlchemy's ``begin`` is the one that counts.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool


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
        if pool_size is None:
            return create_engine(url, pool_pre_ping=True)
        return create_engine(url, pool_pre_ping=True, pool_size=pool_size,
                             max_overflow=pool_size)
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
