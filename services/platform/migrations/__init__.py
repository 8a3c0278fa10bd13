"""Alembic migrations of the event store's PostgreSQL schema, runnable from code.

``upgrade_database(url)`` brings a database to the latest revision; running it again is a
no-op, and replicas starting together take turns (a PostgreSQL advisory lock in ``env.py``).
The tables are those of :mod:`services.platform.models`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

MIGRATIONS_DIR = Path(__file__).resolve().parent

# Alembic's ``context`` is a module-level proxy: two threads migrating at once clobber it.
# Threads take turns here; processes (replicas) take turns on the advisory lock in env.py.
_ALEMBIC_LOCK = threading.Lock()


def alembic_config() -> Config:
    """An Alembic configuration pointing at this package (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade_database(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` up to ``revision`` (idempotent)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with _ALEMBIC_LOCK, engine.connect() as connection:
            config = alembic_config()
            # env.py uses this connection, so URLs with '%' escapes never pass through ini parsing.
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()
