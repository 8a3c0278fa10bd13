"""The database going away is a status worth retrying, not a server fault.

A call that meets the database unreachable (restarting, failing over, a connection cut)
answers UNAVAILABLE with reason ``store_unavailable`` and a RetryInfo delay, whether the
error comes from SQLAlchemy or straight from the driver (the store's writer holds raw
connections); a fault of the code (a missing table) stays INTERNAL.
"""

from __future__ import annotations

import sqlite3

import grpc
import psycopg
import pytest
import sqlalchemy.exc

from services.platform.errors import STORE_RETRY_SECONDS, Reason, known_error


@pytest.mark.parametrize("error", [
    psycopg.OperationalError("connection to server at 127.0.0.1 failed: Connection refused"),
    sqlalchemy.exc.OperationalError("COMMIT", {}, psycopg.OperationalError(
        "server closed the connection unexpectedly")),
    sqlite3.OperationalError("database is locked"),
], ids=["driver", "sqlalchemy", "sqlite-locked"])
def test_an_unreachable_store_answers_unavailable_with_a_retry_delay(
        error: BaseException) -> None:
    known = known_error(error)
    assert known is not None
    assert known.code == grpc.StatusCode.UNAVAILABLE
    assert known.reason == Reason.STORE_UNAVAILABLE
    assert known.retry_after == STORE_RETRY_SECONDS
    assert "server closed" not in known.message and "127.0.0.1" not in known.message


def test_a_fault_of_the_code_stays_internal() -> None:
    assert known_error(sqlite3.OperationalError("no such table: events")) is None
    assert known_error(sqlalchemy.exc.OperationalError(
        "SELECT", {}, sqlite3.OperationalError("no such table: events"))) is None
