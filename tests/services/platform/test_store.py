"""The event store contract on memory, SQLite (file and in-memory) and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform.store import (
    AppendResult,
    ConcurrencyConflict,
    GameNotFound,
    MemoryEventStore,
    OutboxStore,
    open_store,
)
from services.platform.store_sql import SqlEventStore
from services.platform.store_writer import Write
from tests.services.platform.helpers import HOKM, continue_log, make_entries, seqs
from tests.services.platform.store_contract import EventStoreContract

TIMEOUT = 10.0


class TestMemoryEventStore(EventStoreContract):
    @pytest.fixture
    def store(self) -> OutboxStore:
        return MemoryEventStore()


class TestSqliteEventStore(EventStoreContract):
    @pytest.fixture
    def store_url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'events.db'}"

    @pytest.fixture
    def store(self, store_url: str) -> Iterator[OutboxStore]:
        store = open_store(store_url)
        yield store
        store.close()

    @pytest.fixture
    def rival(self, store_url: str) -> Iterator[Callable[[], OutboxStore]]:
        opened: list[OutboxStore] = []

        def open_rival() -> OutboxStore:
            opened.append(open_store(store_url))
            return opened[-1]

        yield open_rival
        for store in opened:
            store.close()

    def test_file_survives_reopening(self, store_url: str) -> None:
        first = open_store(store_url)
        first.create_game("g1", HOKM, make_entries(1, 2))
        first.close()
        reopened = open_store(store_url)
        assert reopened.load("g1") == make_entries(1, 2)
        reopened.close()


class TestSqliteInMemoryEventStore(EventStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[OutboxStore]:
        store = open_store(None)
        yield store
        store.close()


class TestPostgresEventStore(EventStoreContract):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[OutboxStore]:
        store = open_store(pg_url)
        yield store
        store.close()

    @pytest.fixture
    def rival(self, pg_url: str) -> Iterator[Callable[[], OutboxStore]]:
        opened: list[OutboxStore] = []

        def open_rival() -> OutboxStore:
            opened.append(SqlEventStore.open(pg_url))
            return opened[-1]

        yield open_rival
        for store in opened:
            store.close()


def test_open_store_rejects_unknown_urls() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        open_store("mysql://localhost/db")


def test_postgres_batch_reads_every_head_at_once_and_each_append_keeps_its_outcome(
    pg_url: str,
) -> None:
    # A batch of appends on PostgreSQL reads (and locks) all their games' heads in one
    # statement; each append still gets its own answer: applied, duplicate, not found, or
    # stale; a game written twice in the batch reads its head itself, after its first write.
    store = SqlEventStore.open(pg_url)
    try:
        logs = {game_id: make_entries(1, 2) for game_id in ("g1", "g2", "g3", "g4")}
        for game_id, log in logs.items():
            store.create_game(game_id, HOKM, log)
        seen = store.append("g3", continue_log(logs["g3"], 1), command_id="c1", sender="p1")
        logs["g3"] += seen.entries
        writer = store._writer
        reads: list[int] = []
        prepare = writer._prepare
        assert prepare is not None

        def counted(cursor: Any, writes: list[Any]) -> None:
            reads.append(len(writes))
            prepare(cursor, writes)

        writer._prepare = counted
        gate, holding = threading.Event(), threading.Event()

        def hold(cursor: Any) -> bool:
            holding.set()
            return gate.wait(TIMEOUT)

        # The writer is inside this write (not merely handed it) before the appends queue,
        # so they cannot join its batch.
        blocked = writer.submit(Write(hold))
        assert holding.wait(TIMEOUT)
        g1_next = continue_log(logs["g1"], 2)
        g1_after = continue_log(logs["g1"] + g1_next, 1)
        futures = {
            "g1": store.append_future("g1", g1_next, command_id="c1", sender="p1"),
            "g1 again": store.append_future("g1", g1_after, command_id="c2", sender="p1"),
            "g2": store.append_future("g2", continue_log(logs["g2"], 1), command_id="c1",
                                      sender="p2"),
            "g3 duplicate": store.append_future("g3", continue_log(logs["g3"], 1),
                                                command_id="c1", sender="p1"),
            "g4 stale": store.append_future("g4", make_entries(2, 1, logs["g4"][0].hash),
                                            command_id="c1", sender="p1"),
            "missing": store.append_future("nope", make_entries(3, 1), command_id="c1",
                                           sender="p1"),
        }
        gate.set()
        assert blocked.result(TIMEOUT)
        assert futures["g1"].result(TIMEOUT) == AppendResult(g1_next, duplicate=False)
        assert futures["g1 again"].result(TIMEOUT) == AppendResult(g1_after, duplicate=False)
        assert futures["g2"].result(TIMEOUT).duplicate is False
        assert futures["g3 duplicate"].result(TIMEOUT) == AppendResult(seen.entries, True)
        with pytest.raises(ConcurrencyConflict):
            futures["g4 stale"].result(TIMEOUT)
        with pytest.raises(GameNotFound):
            futures["missing"].result(TIMEOUT)
        assert reads == [6]  # the six appends went as one batch, with one read of the heads
        assert seqs(store.load("g1")) == [1, 2, 3, 4, 5]
        assert seqs(store.load("g2")) == [1, 2, 3]
        assert seqs(store.load("g3")) == [1, 2, 3]
        assert seqs(store.load("g4")) == [1, 2]
    finally:
        store.close()
