"""The event store contract on memory, SQLite (file and in-memory) and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform import sql_engine
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


def _queued_behind_a_held_write(
    store: SqlEventStore, appends: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Queue ``appends()`` while the writer is inside another write, so that they form one
    batch; return their futures once released."""
    gate, holding = threading.Event(), threading.Event()

    def hold(cursor: Any) -> bool:
        holding.set()
        return gate.wait(TIMEOUT)

    blocked = store._writer.submit(Write(hold))
    assert holding.wait(TIMEOUT)
    futures = appends()
    gate.set()
    assert blocked.result(TIMEOUT)
    return futures


def _watch_finish(
    store: SqlEventStore, change: Callable[[list[Any]], None] = lambda writes: None,
) -> list[int]:
    """Count what each batch's single write carries (after ``change`` alters the writes)."""
    finish = store._writer._finish
    assert finish is not None
    carried: list[int] = []

    def watched(cursor: Any, writes: list[Any]) -> None:
        change(writes)
        carried.append(sum(write.deferred is not None for write in writes))
        finish(cursor, writes)

    store._writer._finish = watched
    return carried


def test_postgres_batch_writes_all_its_appends_in_one_statement(pg_url: str) -> None:
    # Each game's append in a batch leaves its rows to one statement at the end (a round trip
    # per batch, not per append); a duplicate answers from what is stored and writes nothing.
    store = SqlEventStore.open(pg_url)
    try:
        logs = {game_id: make_entries(1, 2) for game_id in ("b1", "b2", "b3")}
        for game_id, log in logs.items():
            store.create_game(game_id, HOKM, log, relayed=game_id == "b2")
        seen = store.append("b3", continue_log(logs["b3"], 1), command_id="c1", sender="p1")
        logs["b3"] += seen.entries
        carried = _watch_finish(store)
        nexts = {game_id: continue_log(log, 2) for game_id, log in logs.items()}
        futures = _queued_behind_a_held_write(store, lambda: {
            "b1": store.append_future("b1", nexts["b1"], command_id="c1", sender="p1"),
            "b2": store.append_future("b2", nexts["b2"], command_id="c1", sender="p2",
                                      relayed=True),
            "b3": store.append_future("b3", nexts["b3"], command_id="c2", sender="p1"),
            "b3 duplicate": store.append_future("b3", continue_log(logs["b3"], 1),
                                                command_id="c1", sender="p1"),
        })
        for game_id in ("b1", "b2", "b3"):
            assert futures[game_id].result(TIMEOUT) == AppendResult(nexts[game_id], False)
        assert futures["b3 duplicate"].result(TIMEOUT) == AppendResult(seen.entries, True)
        assert carried == [2]  # b1 and b2; b3, written twice in the batch, wrote itself
        for game_id in ("b1", "b2", "b3"):
            assert store.load(game_id) == logs[game_id] + nexts[game_id]
            assert store.find_command(game_id, "p2" if game_id == "b2" else "p1",
                                      "c1") is not None
        unrelayed = {claim.game_id: claim for claim in store.claim_unrelayed()}
        assert "b2" not in unrelayed  # published by its caller: the watermark moved with it
        assert seqs(unrelayed["b1"].entries) == [1, 2, 3, 4]
    finally:
        store.close()


def test_postgres_batch_whose_single_write_fails_runs_again_write_by_write(
    pg_url: str,
) -> None:
    # The single statement finds a head elsewhere than the checks did (as when another process
    # moved it): the batch rolls back and each append runs alone, with its own outcome.
    store = SqlEventStore.open(pg_url)
    try:
        logs = {game_id: make_entries(1, 2) for game_id in ("r1", "r2")}
        for game_id, log in logs.items():
            store.create_game(game_id, HOKM, log)

        def misplace_a_head(writes: list[Any]) -> None:
            deferred = writes[0].deferred
            game_id, last, last_hash, previous, relayed = deferred.move
            writes[0].deferred = dataclasses.replace(
                deferred, move=(game_id, last, last_hash, previous - 1, relayed))

        carried = _watch_finish(store, misplace_a_head)
        nexts = {game_id: continue_log(log, 1) for game_id, log in logs.items()}
        futures = _queued_behind_a_held_write(store, lambda: {
            game_id: store.append_future(game_id, nexts[game_id], command_id="c1",
                                         sender="p1")
            for game_id in logs
        })
        for game_id in logs:
            assert futures[game_id].result(TIMEOUT) == AppendResult(nexts[game_id], False)
            assert store.load(game_id) == logs[game_id] + nexts[game_id]
            assert store.last_seq(game_id) == 3  # the head moved with the events
        assert carried == [2]  # the batch tried once; the appends then wrote alone
    finally:
        store.close()


def test_postgres_a_store_frozen_inside_a_transaction_holds_no_other_store_for_long(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A replica stopped (SIGSTOP, a paused VM) between two statements of a transaction keeps
    # its rows locked: the other replicas' appends to that game would wait for as long as it
    # is frozen, and their writer thread with every other game behind it. The server ends
    # such a session after IDLE_IN_TRANSACTION_MS (half a second here).
    monkeypatch.setattr(sql_engine, "IDLE_IN_TRANSACTION_MS", 500)
    frozen, live = SqlEventStore.open(pg_url), SqlEventStore.open(pg_url)
    gate, holding = threading.Event(), threading.Event()
    try:
        log = make_entries(1, 2)
        live.create_game("g", HOKM, log)

        def lock_and_freeze(cursor: Any) -> bool:
            cursor.execute("SELECT last_seq FROM games WHERE game_id = %s FOR UPDATE", ("g",))
            holding.set()
            return gate.wait(TIMEOUT)

        frozen_write = frozen._writer.submit(Write(lock_and_freeze))
        assert holding.wait(TIMEOUT)
        started = time.monotonic()
        following = continue_log(log, 1)
        assert live.append("g", following, command_id="c1", sender="p1") == AppendResult(
            following, duplicate=False)
        assert time.monotonic() - started < TIMEOUT / 2  # not until the frozen one wakes

        gate.set()  # it wakes: its transaction is gone, and its store goes on
        with contextlib.suppress(Exception):
            frozen_write.result(TIMEOUT)
        after = continue_log(log + following, 1)
        assert frozen.append("g", after, command_id="c2", sender="p1") == AppendResult(
            after, duplicate=False)
        assert seqs(live.load("g")) == [1, 2, 3, 4]
    finally:
        gate.set()
        frozen.close()
        live.close()


def _cyclic_garbage_of_appends(store: SqlEventStore) -> list[str]:
    """Append 20 commands (10 from a thread's future, 10 awaited on a loop) with the cyclic
    collector off, and name what only it could have freed afterwards."""
    log = make_entries(1, 1)
    store.create_game("g-cycles", HOKM, log)

    async def appended_on_a_loop() -> None:
        for number in range(10):
            entries = continue_log(log, 1)
            await store.append_async("g-cycles", entries, command_id=f"a{number}", sender="p")
            log.extend(entries)

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for number in range(10):
            entries = continue_log(log, 1)
            store.append("g-cycles", entries, command_id=f"s{number}", sender="p")
            log.extend(entries)
        asyncio.run(appended_on_a_loop())
        gc.collect()
        return sorted({type(thing).__name__ for thing in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_appends_leave_nothing_to_the_cyclic_collector(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # A write's steps are closures referring back to the write: unless the writer drops
    # them once the write is settled, every command leaves a cycle (the write, its entries,
    # result and future) that only a collection frees, stalling the request loop.
    url = (f"sqlite:///{tmp_path / 'events.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    store = open_store(url)
    try:
        assert isinstance(store, SqlEventStore)
        garbage = _cyclic_garbage_of_appends(store)
    finally:
        store.close()
    ours = {"Write", "AppendResult", "LogEntry", "DeferredAppend", "Future", "function", "cell"}
    assert ours.isdisjoint(garbage), garbage
