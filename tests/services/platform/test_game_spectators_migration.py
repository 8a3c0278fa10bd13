"""Revision 0003: the game keeps whether it admits spectators, on stores made before it.

PostgreSQL goes through the Alembic revision (and back); a SQLite file made by an older
version gains the column when opened. Either way the games already stored admit spectators
(as every match the lobby did not create always did), and new games keep what they were
created with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, create_engine, inspect, text
from sqlmodel import SQLModel

from services.platform.migrations import alembic_config, upgrade_database
from services.platform.store import GameNotFound, open_store
from services.platform.store_sql import COMMANDS, EVENTS
from tests.services.platform.helpers import HOKM, make_entries

LOG = make_entries(1, 2)

# The games table as revisions 0001 and 0002 made it (SQLite spelling; no spectators_allowed).
_GAMES_0002 = """
CREATE TABLE games (
    game_id VARCHAR(64) NOT NULL PRIMARY KEY, game_type INTEGER NOT NULL,
    last_seq BIGINT NOT NULL, last_hash BLOB NOT NULL, relayed_seq BIGINT NOT NULL,
    relay_lease_until_ms BIGINT NOT NULL)
"""


def _write_old_game(connection: Connection) -> None:
    """Game g1 of two events, in the 0002 schema."""
    connection.execute(
        text("INSERT INTO games (game_id, game_type, last_seq, last_hash, relayed_seq, "
             "relay_lease_until_ms) VALUES ('g1', :type, 2, :head, 2, 0)"),
        {"type": HOKM, "head": LOG[-1].hash},
    )
    for entry in LOG:
        connection.execute(
            text("INSERT INTO events (game_id, seq, game_type, event, hash, command_id, at_ms) "
                 "VALUES ('g1', :seq, :type, :event, :hash, NULL, :at)"),
            {"seq": entry.event.seq, "type": HOKM,
             "event": entry.event.SerializeToString(deterministic=True), "hash": entry.hash,
             "at": entry.event.at_ms},
        )


def _check_upgraded_store(url: str) -> None:
    store = open_store(url)
    try:
        # The old game admits spectators and keeps its log...
        assert store.spectators_allowed("g1") is True
        assert store.load("g1") == LOG
        # ...and new games keep their own setting, true unless told otherwise.
        store.create_game("closed", HOKM, LOG, spectators_allowed=False)
        store.create_game("open", HOKM, LOG)
        assert store.spectators_allowed("closed") is False
        assert store.spectators_allowed("open") is True
        with pytest.raises(GameNotFound):
            store.spectators_allowed("nowhere")
    finally:
        store.close()


def test_postgres_revision_0003_keeps_old_games_watchable_and_downgrades(pg_url: str) -> None:
    upgrade_database(pg_url, "0002")
    engine = create_engine(pg_url)
    try:
        with engine.begin() as connection:
            _write_old_game(connection)
        upgrade_database(pg_url)
        _check_upgraded_store(pg_url)

        config = alembic_config()
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0002")
        with engine.connect() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("games")}
            games = connection.execute(text("SELECT game_id FROM games ORDER BY game_id")).all()
        assert "spectators_allowed" not in columns
        assert [row[0] for row in games] == ["closed", "g1", "open"]
    finally:
        engine.dispose()


def test_sqlite_file_from_before_0003_is_upgraded_when_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    try:
        SQLModel.metadata.create_all(engine, tables=[EVENTS, COMMANDS])
        with engine.begin() as connection:
            connection.exec_driver_sql(_GAMES_0002)
            _write_old_game(connection)
    finally:
        engine.dispose()
    _check_upgraded_store(url)
    # Opening again finds nothing left to do and keeps every game's setting.
    store = open_store(url)
    try:
        assert [store.spectators_allowed(game) for game in ("g1", "closed", "open")] == [
            True, False, True,
        ]
    finally:
        store.close()
