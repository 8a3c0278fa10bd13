"""The Alembic migrations of the PostgreSQL event store (and of the accounts' and table
talk's tables)."""

from __future__ import annotations

import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, create_engine, inspect, text

from services.accounts.moderation_store import TABLES as MODERATION_TABLES
from services.accounts.store import TABLES as ACCOUNTS_TABLES
from services.chat.store import TABLES as CHAT_TABLES
from services.platform.migrations import alembic_config, upgrade_database
from services.platform.store import open_store
from services.platform.store_sql import COMMANDS, EVENTS, GAMES, SEAT_NAMES
from tests.services.platform.helpers import HOKM, make_entries

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def _revision_and_tables(url: str) -> tuple[str | None, set[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            revision = MigrationContext.configure(connection).get_current_revision()
            tables = set(inspect(connection).get_table_names())
    finally:
        engine.dispose()
    return revision, tables


def test_upgrade_from_a_clean_database_creates_the_tables(pg_url: str) -> None:
    assert _revision_and_tables(pg_url) == (None, set())
    upgrade_database(pg_url)
    assert _revision_and_tables(pg_url) == (
        HEAD,
        {"alembic_version", "games", "events", "commands", "game_seat_names",
         "accounts_players",
         "accounts_devices", "accounts_sessions", "accounts_refresh_tokens",
         "accounts_identities", "accounts_bans", "accounts_admin_actions",
         "accounts_erasures", "chat_reports", "chat_mutes"},
    )


def test_upgrade_is_idempotent_and_keeps_data(pg_url: str) -> None:
    store = open_store(pg_url)  # migrates
    store.create_game("g1", HOKM, make_entries(1, 2))
    store.close()
    upgrade_database(pg_url)
    again = open_store(pg_url)
    assert again.load("g1") == make_entries(1, 2)
    again.close()
    assert _revision_and_tables(pg_url)[0] == HEAD


def test_replicas_migrating_at_once_do_not_collide(pg_url: str) -> None:
    # env.py takes a PostgreSQL advisory lock, so the second replica waits and finds it done.
    script = (
        "import sys; from services.platform.migrations import upgrade_database; "
        "upgrade_database(sys.argv[1])"
    )
    replicas = [subprocess.Popen([sys.executable, "-c", script, pg_url]) for _ in range(3)]
    assert [replica.wait(timeout=60) for replica in replicas] == [0, 0, 0]
    assert _revision_and_tables(pg_url)[0] == HEAD


def test_migrations_match_the_models(pg_url: str) -> None:
    # models.py (and the accounts service's models, revisions 0005 on) and versions/ describe
    # the same schema: autogenerate finds nothing to do.
    upgrade_database(pg_url)
    ours = MetaData()
    for table in (GAMES, EVENTS, COMMANDS, SEAT_NAMES, *ACCOUNTS_TABLES, *MODERATION_TABLES,
                  *CHAT_TABLES):
        table.to_metadata(ours)
    engine = create_engine(pg_url)
    try:
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), ours)
    finally:
        engine.dispose()
    assert differences == []


def test_players_stored_before_profiles_get_no_avatar_and_no_locale(pg_url: str) -> None:
    upgrade_database(pg_url, "0006")
    engine = create_engine(pg_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO accounts_players VALUES ('g-0000000000000001', 'Old', 5)"))
        upgrade_database(pg_url)
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT player_id, display_name, avatar_id, locale FROM accounts_players")).all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in rows] == [("g-0000000000000001", "Old", "", "")]
