"""Two game replicas over one PostgreSQL store: the seat names one writes with a game, the
other reads; an erasure (every replica is told of it) blanks them in the shared table and
in each replica's cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.game.names import SeatNames
from services.platform.store import SeatName, open_store
from services.platform.store_sql import SqlEventStore
from tests.services.platform.helpers import HOKM, make_entries

NAMES = [SeatName(0, "p0", "Ali"), SeatName(1, "p1", "Sara")]


@pytest.fixture
def stores(pg_url: str) -> Iterator[tuple[SqlEventStore, SqlEventStore]]:
    first, second = open_store(pg_url), open_store(pg_url)
    assert isinstance(first, SqlEventStore) and isinstance(second, SqlEventStore)
    yield first, second
    first.close()
    second.close()


async def test_replicas_share_the_names_and_each_forgets_an_erased_one(
    stores: tuple[SqlEventStore, SqlEventStore],
) -> None:
    first_store, second_store = stores
    first, second = SeatNames(first_store), SeatNames(second_store)
    await first_store.create_game_async("g1", HOKM, make_entries(1, 2), seat_names=NAMES)
    first.remember("g1", NAMES)
    assert (await second.of("g1"))["p1"] == SeatName(1, "p1", "Sara")

    # The ban list tells every replica; the first to act blanks the shared rows...
    assert await second.erase("p1") == 1
    assert (await second.of("g1"))["p1"] == SeatName(1, "p1", "", deleted=True)
    # ...and each replica forgets what it held, though it has nothing left to change.
    assert (await first.of("g1"))["p1"].display_name == "Sara"  # not told yet
    assert await first.erase("p1") == 0
    assert (await first.of("g1"))["p1"] == SeatName(1, "p1", "", deleted=True)
    assert (await first.of("g1"))["p0"] == SeatName(0, "p0", "Ali")
    assert first_store.load("g1") == make_entries(1, 2)  # the log is untouched
