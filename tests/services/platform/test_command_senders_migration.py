"""Revision 0002: command ids belong to their sender, on stores made before it.

PostgreSQL goes through the Alembic revision (and back); a SQLite file made by an older
version is rebuilt when opened. Either way the old rows stay, under sender ``""``, which no
caller ever is, and every sender may use an old id afresh.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import Connection, create_engine, inspect, text
from sqlmodel import SQLModel

from services.platform.migrations import alembic_config, upgrade_database
from services.platform.store import AppendResult, open_store
from services.platform.store_sql import EVENTS, GAMES
from tests.services.platform.helpers import HOKM, continue_log, make_entries

LOG = make_entries(1, 2)

# The commands table as revision 0001 made it (SQLite spelling; no sender).
_COMMANDS_0001 = """
CREATE TABLE commands (
    game_id VARCHAR(64) NOT NULL, command_id VARCHAR(128) NOT NULL,
    first_seq BIGINT NOT NULL, last_seq BIGINT NOT NULL,
    PRIMARY KEY (game_id, command_id))
"""


def _write_old_rows(connection: Connection) -> None:
    """Game g1 of two events, the second appended by command c1, in the 0001 schema."""
    connection.execute(
        text("INSERT INTO games (game_id, game_type, last_seq, last_hash, relayed_seq, "
             "relay_lease_until_ms) VALUES ('g1', :type, 2, :head, 2, 0)"),
        {"type": HOKM, "head": LOG[-1].hash},
    )
    for entry in LOG:
        connection.execute(
            text("INSERT INTO events (game_id, seq, game_type, event, hash, command_id, at_ms) "
                 "VALUES ('g1', :seq, :type, :event, :hash, :command, :at)"),
            {"seq": entry.event.seq, "type": HOKM,
             "event": entry.event.SerializeToString(deterministic=True), "hash": entry.hash,
             "command": "c1" if entry.event.seq == 2 else None, "at": entry.event.at_ms},
        )
    connection.execute(text(
        "INSERT INTO commands (game_id, command_id, first_seq, last_seq) VALUES ('g1', 'c1', 2, 2)"
    ))


def _check_upgraded_store(url: str) -> None:
    store = open_store(url)
    try:
        # The old row is kept, owned by nobody who can send a command...
        assert store.find_command("g1", "", "c1") == AppendResult([LOG[1]], duplicate=True)
        assert store.find_command("g1", "player:p1", "c1") is None
        # ...so a sender's own c1 is a new command, and its retry a duplicate.
        more = continue_log(LOG, 1)
        assert store.append("g1", more, command_id="c1", sender="player:p1") == AppendResult(
            more, duplicate=False
        )
        retry = continue_log(LOG + more, 1)
        assert store.append("g1", retry, command_id="c1", sender="player:p1").duplicate
        assert store.load("g1") == LOG + more
    finally:
        store.close()


def test_postgres_revision_0002_keeps_old_commands_and_downgrades(pg_url: str) -> None:
    upgrade_database(pg_url, "0001")
    engine = create_engine(pg_url)
    try:
        with engine.begin() as connection:
            _write_old_rows(connection)
        upgrade_database(pg_url)
        _check_upgraded_store(pg_url)

        config = alembic_config()
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0001")
        with engine.connect() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("commands")}
            rows = connection.execute(text("SELECT game_id, command_id FROM commands")).all()
        # Back to one row per (game_id, command_id): the two senders' c1 became one.
        assert columns == {"game_id", "command_id", "first_seq", "last_seq"}
        assert [tuple(row) for row in rows] == [("g1", "c1")]
    finally:
        engine.dispose()


def test_sqlite_file_from_before_0002_is_upgraded_when_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    try:
        SQLModel.metadata.create_all(engine, tables=[GAMES, EVENTS])
        with engine.begin() as connection:
            connection.exec_driver_sql(_COMMANDS_0001)
            _write_old_rows(connection)
    finally:
        engine.dispose()
    _check_upgraded_store(url)
    # Opening again finds nothing left to do and keeps every row.
    store = open_store(url)
    try:
        assert store.find_command("g1", "", "c1") == AppendResult([LOG[1]], duplicate=True)
        assert store.find_command("g1", "player:p1", "c1") is not None
    finally:
        store.close()
