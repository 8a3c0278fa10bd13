"""Alembic environment: runs migrations on the connection handed over in ``attributes``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.pool import NullPool
from sqlmodel import SQLModel

from services.platform import models  # noqa: F401  (registers the tables)

# Any constant works: it only has to be the same for every replica running migrations.
_MIGRATION_LOCK_KEY = 0x64617374  # "dast"


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=SQLModel.metadata)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY}
            )
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate through the given connection, or one opened from ``sqlalchemy.url``."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        connection.commit()
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("no connection or sqlalchemy.url given to the migrations")
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as own_connection:
        _run(own_connection)
        own_connection.commit()


if context.is_offline_mode():
    raise RuntimeError("dast migrations run online only: use upgrade_database(url)")
run_migrations_online()
