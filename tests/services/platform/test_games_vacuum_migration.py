"""Revision 0004: autovacuum takes ``games`` by a fixed number of dead rows (and back)."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, text

from services.platform.migrations import alembic_config, upgrade_database
from services.platform.store import open_store
from tests.services.platform.helpers import HOKM, make_entries


def _games_options(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            options = connection.execute(text(
                "SELECT reloptions FROM pg_class WHERE oid = 'games'::regclass")).scalar_one()
    finally:
        engine.dispose()
    return set(options or [])


def test_games_are_vacuumed_every_10000_dead_rows_whatever_the_table_size(pg_url: str) -> None:
    upgrade_database(pg_url)
    assert _games_options(pg_url) == {
        "autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=10000",
        "autovacuum_analyze_scale_factor=0", "autovacuum_analyze_threshold=10000",
    }
    store = open_store(pg_url)
    try:
        store.create_game("g1", HOKM, make_entries(1, 2))
        assert store.load("g1") == make_entries(1, 2)
    finally:
        store.close()


def test_downgrade_gives_games_the_server_thresholds_again(pg_url: str) -> None:
    upgrade_database(pg_url)
    engine = create_engine(pg_url)
    try:
        config = alembic_config()
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0003")
    finally:
        engine.dispose()
    assert _games_options(pg_url) == set()
    upgrade_database(pg_url)
    assert len(_games_options(pg_url)) == 4
