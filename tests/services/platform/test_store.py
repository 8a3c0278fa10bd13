"""The event store contract on memory, SQLite (file and in-memory) and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.platform.store import MemoryEventStore, OutboxStore, open_store
from services.platform.store_sql import SqlEventStore
from tests.services.platform.helpers import HOKM, make_entries
from tests.services.platform.store_contract import EventStoreContract


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
