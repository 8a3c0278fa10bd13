"""Group commit on PostgreSQL (services/platform/store_writer.py): what arrives while a
transaction is in flight is committed together in the next one, and each write keeps its
own outcome there."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from sqlalchemy import create_engine, text

from services.platform.store import AppendResult, ConcurrencyConflict
from services.platform.store_sql import SqlEventStore
from tests.services.platform.helpers import HOKM, continue_log, make_entries

TIMEOUT = 10.0


@pytest.fixture
def batches() -> list[int]:
    """The size of every batch the store's writer ran, in order."""
    return []


@pytest.fixture
def store(pg_url: str, batches: list[int]) -> Iterator[SqlEventStore]:
    store = SqlEventStore.open(pg_url, on_batch=batches.append)
    yield store
    store.close()


def test_appends_arriving_during_a_transaction_commit_together_each_with_its_outcome(
    store: SqlEventStore, batches: list[int], pg_url: str
) -> None:
    logs = {game_id: make_entries(1, 2) for game_id in ("a", "b", "c", "d", "e")}
    for game_id, log in logs.items():
        store.create_game(game_id, HOKM, log)
    # e has moved on since its rival decided: the rival's seq 3 is taken.
    taken = continue_log(logs["e"], 1)
    store.append("e", taken, command_id="first", sender="p")
    stale = continue_log(logs["e"], 1, at_ms=2_000)
    batches.clear()

    # Another connection holds game a's row: the writer's transaction for a waits on it.
    rival = create_engine(pg_url)
    try:
        with rival.connect() as holder:
            holder.execute(text("SELECT 1 FROM games WHERE game_id = 'a' FOR UPDATE"))
            in_flight = store.append_future("a", continue_log(logs["a"], 1), command_id="c",
                                            sender="p")
            while not batches:  # the writer took a's append into a transaction
                time.sleep(0.01)
            time.sleep(0.1)
            arriving: dict[str, Future[AppendResult]] = {}
            for game_id in ("b", "c", "d"):
                arriving[game_id] = store.append_future(
                    game_id, continue_log(logs[game_id], 1), command_id="c", sender="p")
                time.sleep(0.02)  # each its own arrival, while a's transaction waits
            arriving["e"] = store.append_future("e", stale, command_id="late", sender="p")
            assert not in_flight.done()
            holder.rollback()  # a's transaction goes on, and then the next one
        assert in_flight.result(TIMEOUT).duplicate is False
        for game_id in ("b", "c", "d"):
            assert arriving[game_id].result(TIMEOUT) == AppendResult(
                continue_log(logs[game_id], 1), False)
        with pytest.raises(ConcurrencyConflict):
            arriving["e"].result(TIMEOUT)  # refused alone: its batch committed the others
    finally:
        rival.dispose()

    assert batches == [1, 4]
    for game_id in ("a", "b", "c", "d"):
        assert store.load(game_id) == logs[game_id] + continue_log(logs[game_id], 1)
    assert store.load("e") == logs["e"] + taken
