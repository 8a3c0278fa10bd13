"""The lobby store on SQLite and PostgreSQL: versioned saves and recorded updates."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dast.v1 import common_pb2, lobby_pb2
from services.lobby import tables
from services.lobby.store import LobbyStore, StaleTable, TableNotFound


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[LobbyStore]:
    url = None if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = LobbyStore.open(url)
    yield opened
    opened.close()


def _new_table(store: LobbyStore, table_id: str) -> lobby_pb2.Table:
    settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True)
    change = tables.new_table(table_id, settings, "host", "Host", "code-" + table_id)
    return store.create(change.table, change.updates, at_ms=1)


def test_a_save_at_a_stale_version_is_refused(store: LobbyStore) -> None:
    table = _new_table(store, "t1")
    first = tables.join(table, "p2", "P2", None)
    second = tables.join(table, "p3", "P3", None)
    saved = store.save(first.table, table.version, first.updates, at_ms=2)
    assert saved.version == 2
    with pytest.raises(StaleTable):
        store.save(second.table, table.version, second.updates, at_ms=3)
    assert store.get("t1").seats[1].player_id == "p2"
    kinds = [u.kind for u in store.updates_after("t1", 0)]
    assert kinds == [lobby_pb2.TABLE_UPDATE_KIND_CREATED, lobby_pb2.TABLE_UPDATE_KIND_PLAYER_JOINED]


def test_tables_are_found_by_invite_code_and_guests_keep_their_id(store: LobbyStore) -> None:
    _new_table(store, "t2")
    assert store.by_invite("code-t2").table_id == "t2"
    with pytest.raises(TableNotFound):
        store.by_invite("nope")
    assert store.listed(0, include_playing=True) == []  # private tables are not listed
    assert store.guest("device-a", "", "g-1") == ("g-1", "Guest-g-1")
    assert store.guest("device-a", "Ali", "g-2") == ("g-1", "Ali")
    assert store.name_of("g-1") == "Ali"


def test_each_match_keeps_the_seats_it_started_with_after_a_rematch(store: LobbyStore) -> None:
    table = _new_table(store, "t3")
    joined = tables.join(table, "p2", "P2", None)
    table = store.save(joined.table, table.version, joined.updates, at_ms=2)
    started = tables.start(table, "host", "game-1")
    table = store.save(started.table, table.version, started.updates, at_ms=3)
    left = tables.leave(table, "p2")
    table = store.save(left.table, table.version, left.updates, at_ms=4)
    finished = tables.finish(table, "game-1")
    table = store.save(finished.table, table.version, finished.updates, at_ms=5)
    again = tables.rematch(table, "host", "game-2")
    table = store.save(again.table, table.version, again.updates, at_ms=6)
    first = store.match_table("game-1")
    assert (first.table_id, first.game_id) == ("t3", "game-1")
    assert [seat.player_id for seat in first.seats][:2] == ["host", "p2"]
    second = store.match_table("game-2")
    assert second.game_id == "game-2"
    assert second.seats[1].is_bot  # p2 left: the rematch seated a bot
    assert store.by_game("game-2").table_id == "t3"
    with pytest.raises(TableNotFound):
        store.match_table("game-3")
