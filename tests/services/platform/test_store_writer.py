"""Group commit (services/platform/store_writer.py): writes share a transaction, never a fate."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform.store import ConcurrencyConflict, StoreError
from services.platform.store_writer import Cursor, GroupWriter, LostRace, Write


class _Connection:
    """A sqlite3 connection with the pool proxy's ``invalidate`` (what GroupWriter expects)."""

    def __init__(self, path: Path) -> None:
        self.raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def cursor(self) -> sqlite3.Cursor:
        return self.raw.cursor()

    def close(self) -> None:
        self.raw.close()

    def invalidate(self) -> None:
        self.raw.close()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "writes.db"
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
    return path


@pytest.fixture
def held() -> threading.Lock:
    """The lock the writer takes per transaction; tests hold it to make writes pile up."""
    return threading.Lock()


@pytest.fixture
def writer(database: Path, held: threading.Lock) -> Iterator[GroupWriter]:
    group = GroupWriter(
        lambda: _Connection(database), begin="BEGIN IMMEDIATE", lock=held,
        integrity_error=sqlite3.IntegrityError,
    )
    yield group
    group.close()


def _rows(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as check:
        return dict(check.execute("SELECT k, v FROM t").fetchall())


def _insert(key: str, value: int) -> Write[str]:
    def run(cursor: Cursor) -> str:
        cursor.execute("INSERT INTO t VALUES (?, ?)", (key, value))
        return key

    return Write(run)


def _refused(key: str) -> Write[str]:
    def run(cursor: Cursor) -> str:
        cursor.execute("SELECT v FROM t WHERE k = ?", (key,))
        raise ConcurrencyConflict(f"{key} refused after reading")

    return Write(run)


def _violating(key: str, value: int) -> Write[Any]:
    """Writes, then trips the primary key: the shared transaction cannot go on."""

    def run(cursor: Cursor) -> str:
        cursor.execute("INSERT INTO t VALUES (?, ?)", (f"{key}-partial", value))
        cursor.execute("INSERT INTO t VALUES (?, ?)", (key, value))
        return key

    def recover(_cursor: Cursor, violation: Exception) -> Any:
        raise ConcurrencyConflict(f"{key} is taken") from violation

    return Write(run, recover)


def test_queued_writes_commit_in_one_transaction(
    writer: GroupWriter, held: threading.Lock, database: Path
) -> None:
    with held:  # the writer blocks on its first batch while the others queue behind it
        first = writer.submit(_insert("a", 1))
        rest = [writer.submit(_insert(key, n)) for n, key in enumerate("bcdef")]
    assert first.result(5) == "a"
    assert [future.result(5) for future in rest] == list("bcdef")
    # the first write may have been taken alone; everything queued meanwhile went together
    assert writer.batches <= 2
    assert _rows(database) == {"a": 1, "b": 0, "c": 1, "d": 2, "e": 3, "f": 4}


def test_a_refused_write_fails_alone_and_its_batch_commits(
    writer: GroupWriter, held: threading.Lock, database: Path
) -> None:
    with held:
        futures = [writer.submit(_insert("a", 1)), writer.submit(_refused("a")),
                   writer.submit(_insert("b", 2))]
    assert futures[0].result(5) == "a"
    with pytest.raises(ConcurrencyConflict):
        futures[1].result(5)
    assert futures[2].result(5) == "b"
    assert _rows(database) == {"a": 1, "b": 2}


def test_a_write_failing_midway_is_rolled_back_alone_and_the_others_are_retried(
    writer: GroupWriter, held: threading.Lock, database: Path
) -> None:
    writer.submit(_insert("taken", 0)).result(5)
    with held:
        futures = [writer.submit(_insert("a", 1)), writer.submit(_violating("taken", 9)),
                   writer.submit(_insert("b", 2))]
    assert futures[0].result(5) == "a"
    with pytest.raises(ConcurrencyConflict, match="taken is taken"):
        futures[1].result(5)
    assert futures[2].result(5) == "b"
    # all-or-nothing: the violating write's first insert did not survive
    assert _rows(database) == {"taken": 0, "a": 1, "b": 2}


def test_a_lost_race_without_recovery_reaches_the_caller(writer: GroupWriter) -> None:
    def run(_cursor: Cursor) -> None:
        raise LostRace("the head moved")

    with pytest.raises(LostRace):
        writer.submit(Write(run)).result(5)
    assert not issubclass(LostRace, StoreError)  # so that it aborts a shared batch


async def test_async_submissions_complete_on_the_loop_after_commit(
    writer: GroupWriter, database: Path
) -> None:
    results = await asyncio.gather(
        *(writer.submit_async(_insert(f"k{n}", n)) for n in range(20)),
        writer.submit_async(_refused("k0")), return_exceptions=True,
    )
    assert results[:20] == [f"k{n}" for n in range(20)]
    assert isinstance(results[20], ConcurrencyConflict)
    assert len(_rows(database)) == 20


def test_closed_writer_refuses_new_writes(writer: GroupWriter) -> None:
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(_insert("late", 1))


async def test_writes_submitted_in_one_loop_iteration_reach_the_thread_together(
    writer: GroupWriter, database: Path
) -> None:
    # One hand-over per iteration of the loop, not per write: the thread wakes once and
    # commits them in one transaction, however its timing falls.
    futures = [writer.submit_async(_insert(f"k{n}", n)) for n in range(8)]
    assert writer.batches == 0  # nothing handed over before the iteration ends
    assert await asyncio.gather(*futures) == [f"k{n}" for n in range(8)]
    assert writer.batches == 1
    assert len(_rows(database)) == 8


async def test_a_write_submitted_as_the_writer_closes_fails_instead_of_waiting(
    writer: GroupWriter, database: Path
) -> None:
    pending = writer.submit_async(_insert("late", 1))
    writer.close()  # before the loop handed the write over
    with pytest.raises(RuntimeError, match="closed"):
        await asyncio.wait_for(pending, 5)
    assert _rows(database) == {}
