"""The store's check on append under a real game's chain key (services/platform/store.py
``check_continuation``): the key comes from the game's first event, so an append chained
under any other key (a seat's, which lacks the server seed) is refused, including by a
store handle that has never seen the game (another replica, a restart)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.chain import chain_entries, chain_log, log_chain_key
from engine.core.testing import bot_players
from services.platform.store import EventStore, InvalidEntries, MemoryEventStore, open_store

HOKM = common_pb2.GAME_TYPE_HOKM


def _start_and_next() -> tuple[list[log_pb2.LogEntry], list[log_pb2.Event]]:
    events = hokm.start(hokm_pb2.HokmRules(), bytes(range(32)), bot_players(4))
    state = hokm.replay(events)
    seat = hokm.to_act(state)
    assert seat is not None
    return chain_log(events), hokm.decide(state, hokm.legal(state, seat)[0])


@pytest.fixture(params=["memory", "sqlite"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], EventStore]]:
    """Handles on one store's data: the memory store is one handle; each SQLite handle is a
    new process's view of the same file, starting with no cached key."""
    if request.param == "memory":
        memory = MemoryEventStore()
        yield lambda: memory
        return
    url = f"sqlite:///{tmp_path / 'events.db'}"
    opened: list[EventStore] = []

    def open_handle() -> EventStore:
        opened.append(open_store(url))
        return opened[-1]

    yield open_handle
    for handle in opened:
        handle.close()


def test_an_append_must_chain_under_the_key_of_the_games_first_event(
    stores: Callable[[], EventStore],
) -> None:
    start, more = _start_and_next()
    stores().create_game("g1", HOKM, start)
    seats_key = log_chain_key(hokm.redact(start[0].event, 0))
    under_seats_key = chain_entries(more, start[-1].hash, key=seats_key)
    fresh = stores()  # has never seen g1: reads its first event for the key
    with pytest.raises(InvalidEntries, match="does not chain"):
        fresh.append("g1", under_seats_key, command_id=None)
    genuine = chain_entries(more, start[-1].hash, key=log_chain_key(start[0].event))
    assert not fresh.append("g1", genuine, command_id=None).duplicate
    assert fresh.load("g1") == start + genuine
