"""The relay's steps on PostgreSQL (services/platform/store_outbox_pg.py): one statement each
on a connection the relay keeps, locks taken in the writer's order, a lost connection
replaced."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import psycopg
import pytest
from sqlalchemy import create_engine, text

from services.platform.store_outbox_pg import PostgresOutbox
from services.platform.store_sql import SqlEventStore
from tests.services.platform.helpers import HOKM, make_entries, seqs

TIMEOUT = 10.0


class _CountingCursor:
    def __init__(self, cursor: Any, executed: list[str]) -> None:
        self._cursor = cursor
        self._executed = executed

    def execute(self, statement: str, params: Any = None) -> Any:
        self._executed.append(statement)
        return self._cursor.execute(statement, params)

    def fetchall(self) -> Any:
        return self._cursor.fetchall()


class _CountingConnection:
    """A pool proxy whose cursors record every statement they run."""

    def __init__(self, connection: Any, executed: list[str]) -> None:
        self._connection = connection
        self._executed = executed
        self.driver_connection = connection.driver_connection

    def cursor(self) -> _CountingCursor:
        return _CountingCursor(self._connection.cursor(), self._executed)

    def invalidate(self) -> None:
        self._connection.invalidate()

    def close(self) -> None:
        self._connection.close()


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlEventStore]:
    store = SqlEventStore.open(pg_url)
    yield store
    store.close()


def _counting(store: SqlEventStore) -> tuple[list[str], list[int]]:
    """Swap the store's outbox for one whose connections count statements and connects."""
    executed: list[str] = []
    connects: list[int] = []

    def connect() -> _CountingConnection:
        connects.append(1)
        return _CountingConnection(store._engine.raw_connection(), executed)

    store._outbox = PostgresOutbox(connect)
    return executed, connects


def _backend_pid(store: SqlEventStore) -> int:
    outbox = store._outbox
    assert outbox is not None and outbox._connection is not None
    return int(outbox._connection.driver_connection.info.backend_pid)


def test_a_relay_pass_is_one_statement_per_step_on_one_kept_connection(
    store: SqlEventStore,
) -> None:
    # Through the pool each step cost a checkout with its ping, BEGIN, the statement and
    # COMMIT; here the claim and its read are two statements, a mark of any number of games
    # one, a release or a renewal one, and the connection is opened once.
    for game_id in ("g1", "g2", "g3"):
        store.create_game(game_id, HOKM, make_entries(1, 2))
    executed, connects = _counting(store)

    claimed = {claim.game_id: claim for claim in store.claim_unrelayed()}
    assert {game_id: seqs(claim.entries) for game_id, claim in claimed.items()} == {
        "g1": [1, 2], "g2": [1, 2], "g3": [1, 2]}
    assert len(executed) == 2

    store.mark_relayed_many([("g1", 2), ("g2", 1), ("g2", 2), ("g3", 1)])
    assert len(executed) == 3
    store.release(["g3"])
    assert len(executed) == 4

    again = store.claim_unrelayed()  # g1 and g2 are relayed; g3 from its mark on
    assert [(claim.game_id, seqs(claim.entries), claim.interrupted) for claim in again] == [
        ("g3", [2], False)]
    store.renew_claims(["g3"])
    assert len(executed) == 7
    assert connects == [1]
    assert store.claim_unrelayed() == []  # g3's renewed lease keeps it claimed


def test_a_lost_relay_connection_fails_one_step_and_the_next_reconnects(
    store: SqlEventStore, pg_url: str
) -> None:
    store.create_game("g1", HOKM, make_entries(1, 3))
    assert [claim.game_id for claim in store.claim_unrelayed()] == ["g1"]
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"),
                               {"pid": _backend_pid(store)})
        with pytest.raises(psycopg.OperationalError):
            store.mark_relayed_many([("g1", 3)])
        store.mark_relayed_many([("g1", 3)])  # a new connection
        with admin.connect() as connection:
            relayed = connection.execute(
                text("SELECT relayed_seq, relay_lease_until_ms FROM games WHERE game_id = 'g1'")
            ).one()
        assert tuple(relayed) == (3, 0)
    finally:
        admin.dispose()


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("step", ["mark", "release", "renew"])
def test_the_relay_locks_games_in_byte_order_as_the_writer_does(
    store: SqlEventStore, pg_url: str, step: str
) -> None:
    # A batch of appends locks its games in byte order; a relay step changing several games
    # must take them in that order too, or the two can wait for each other in a circle. With
    # "b" held elsewhere, the step must hold "a" and wait, without having touched "c".
    for game_id in ("a", "b", "c"):
        store.create_game(game_id, HOKM, make_entries(1, 2))
    claimed = store.claim_unrelayed()
    assert [claim.game_id for claim in claimed] == ["a", "b", "c"]
    run: dict[str, Callable[[], None]] = {
        "mark": lambda: store.mark_relayed_many([("c", 2), ("a", 2), ("b", 2)]),
        "release": lambda: store.release(["c", "a", "b"]),
        "renew": lambda: store.renew_claims(["c", "a", "b"]),
    }
    engine = create_engine(pg_url)
    errors: list[BaseException] = []
    try:
        with engine.connect() as holder:
            holder.execute(text("SELECT 1 FROM games WHERE game_id = 'b' FOR UPDATE"))

            def stepping() -> None:
                try:
                    run[step]()
                except BaseException as error:  # reported by the main thread
                    errors.append(error)

            thread = threading.Thread(target=stepping)
            thread.start()
            _wait_until(lambda: _waits_for_a_lock(engine, _backend_pid(store)))
            with engine.connect() as prober:
                assert _locked(prober, "a")
                assert not _locked(prober, "c")
            holder.rollback()
            thread.join(TIMEOUT)
        assert not thread.is_alive() and errors == []
    finally:
        engine.dispose()
    if step == "mark":
        assert store.claim_unrelayed() == []


def _waits_for_a_lock(engine: Any, pid: int) -> bool:
    with engine.connect() as connection:
        waiting = connection.execute(
            text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
        ).scalar_one_or_none()
    return bool(waiting == "Lock")


def _locked(connection: Any, game_id: str) -> bool:
    """Whether another transaction holds ``game_id``'s row (tried without waiting)."""
    try:
        with connection.begin():
            connection.execute(
                text("SELECT 1 FROM games WHERE game_id = :game_id FOR UPDATE NOWAIT"),
                {"game_id": game_id},
            )
        return False
    except Exception as error:  # LockNotAvailable, wrapped by SQLAlchemy
        if "could not obtain lock" in str(error):
            return True
        raise


def test_the_relay_connection_in_autocommit_never_goes_back_to_the_pool(
    store: SqlEventStore,
) -> None:
    # Lent again, it would turn a borrower's transaction into statements committed one by one.
    store.create_game("g1", HOKM, make_entries(1, 2))
    assert [claim.game_id for claim in store.claim_unrelayed()] == ["g1"]
    outbox = store._outbox
    assert outbox is not None
    kept = outbox._connection.driver_connection
    outbox.close()
    borrowed = [store._engine.raw_connection() for _ in range(5)]
    try:
        assert all(connection.driver_connection is not kept for connection in borrowed)
        # driver_connection is typed Optional[Any]: a live pooled connection has its driver's.
        assert not any(cast(psycopg.Connection[Any], connection.driver_connection).autocommit
                       for connection in borrowed)
    finally:
        for connection in borrowed:
            connection.close()
    assert kept.closed
