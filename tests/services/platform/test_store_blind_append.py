"""PostgreSQL appends that carry the head their caller decided after: one statement in
autocommit, reading nothing first; a head elsewhere, a taken seq or a used command id
writes nothing there, and the append gets the outcome the usual path gives it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from services.platform.store import AppendResult, ConcurrencyConflict, InvalidEntries
from services.platform.store_sql import SqlEventStore
from tests.services.platform.helpers import HOKM, continue_log, make_entries

TIMEOUT = 10.0


class _CountingConnection:
    """The writer's pool proxy, its cursors recording every statement they run."""

    def __init__(self, connection: Any, executed: list[str]) -> None:
        self._connection = connection
        self._executed = executed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def cursor(self) -> Any:
        cursor = self._connection.cursor()
        executed = self._executed

        class Counting:
            def __getattr__(self, name: str) -> Any:
                return getattr(cursor, name)

            def execute(self, statement: str, params: Any = None) -> Any:
                executed.append(statement.split()[0].upper())
                return cursor.execute(statement, params)

        return Counting()


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlEventStore]:
    store = SqlEventStore.open(pg_url)
    yield store
    store.close()


def _counting(store: SqlEventStore) -> list[str]:
    executed: list[str] = []
    connect = store._writer._connect
    store._writer._connect = lambda: _CountingConnection(connect(), executed)
    return executed


def _append(store: SqlEventStore, entries: list[Any], previous: bytes, command: str) -> Any:
    return store.append_future("g", entries, command_id=command, sender="p",
                               previous_hash=previous).result(TIMEOUT)


def _logged(store: SqlEventStore) -> tuple[list[Any], list[Any]]:
    """The game's log after one usual append (which also makes its chain key known)."""
    log = make_entries(1, 2)
    store.create_game("g", HOKM, log)
    first = continue_log(log, 1)
    assert store.append("g", first, command_id="c1", sender="p") == AppendResult(first, False)
    return log, log + first


def test_an_append_with_its_previous_hash_is_one_statement_in_autocommit(
    store: SqlEventStore,
) -> None:
    _, log = _logged(store)
    executed = _counting(store)
    store._writer._drop_connection(invalidate=False)  # the next batch connects, counted
    nexts = continue_log(log, 2)
    assert _append(store, nexts, log[-1].hash, "c2") == AppendResult(nexts, False)
    assert executed == ["WITH"]  # no BEGIN, no read of the head, no COMMIT
    assert store._writer.blind_batches == 1
    assert store.load("g") == log + nexts
    assert store.last_seq("g") == 5
    assert store.find_command("g", "p", "c2") == AppendResult(nexts, True)


def test_a_seq_already_taken_writes_nothing_and_is_a_conflict(store: SqlEventStore) -> None:
    # The caller decided after seq 2, but seq 3 was appended meanwhile (another replica).
    before, log = _logged(store)
    stale = continue_log(before, 1, at_ms=2_000)
    with pytest.raises(ConcurrencyConflict):
        _append(store, stale, before[-1].hash, "c2")
    assert store._writer.blind_batches == 0
    assert store.load("g") == log


def test_a_caller_lying_about_the_head_writes_nothing(store: SqlEventStore) -> None:
    # Entries chained from a head the game never had: the statement's head check refuses
    # them, and the usual path then finds they do not continue the stored chain.
    _, log = _logged(store)
    forged_head = b"\x07" * 32
    forged = make_entries(len(log) + 1, 1, forged_head)
    with pytest.raises((ConcurrencyConflict, InvalidEntries)):
        _append(store, forged, forged_head, "c2")
    assert store._writer.blind_batches == 0
    assert store.load("g") == log


def test_a_command_id_used_before_answers_the_first_result(store: SqlEventStore) -> None:
    # A retry decided on the latest state: its rows would be new, its command id is not.
    before, log = _logged(store)
    retry = continue_log(log, 1, at_ms=3_000)
    assert _append(store, retry, log[-1].hash, "c1") == AppendResult(log[len(before):], True)
    assert store._writer.blind_batches == 0
    assert store.load("g") == log
