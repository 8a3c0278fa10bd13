"""The relay: store outbox → bus, promptly, with retries, and split between replicas."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from services.platform.bus import InProcessBus, LogEntry
from services.platform.relay import Relay
from services.platform.store import RELAY_LEASE_MS, MemoryEventStore, OutboxStore, open_store
from tests.services.platform.helpers import HOKM, continue_log, make_entries, marked, seqs

TIMEOUT = 10.0


class RecordingBus(InProcessBus):
    """An in-process bus that records every publish and can fail the first few."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__()
        self.failures_left = failures
        self.published: list[tuple[str, str, int]] = []

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        if self.failures_left > 0:
            self.failures_left -= 1
            raise ConnectionError("bus down")
        self.published.extend((game_type, game_id, e.event.seq) for e in entries)
        await super().publish(game_type, game_id, entries)


@pytest.fixture
async def running_relays() -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks: list[asyncio.Task[None]] = []
    yield tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_notify_publishes_an_append_at_once(
    running_relays: list[asyncio.Task[None]],
) -> None:
    store, bus = MemoryEventStore(), InProcessBus()
    relay = Relay(store, bus, poll_seconds=60)  # only notify() can wake it in time
    running_relays.append(asyncio.create_task(relay.run()))
    async with bus.live("g1") as live:
        log = make_entries(1, 2)
        store.create_game("g1", HOKM, log)
        relay.notify()
        assert seqs(await asyncio.wait_for(_take(live, 2), 2.0)) == [1, 2]
        store.append("g1", continue_log(log, 1), command_id="c", sender="p1")
        relay.notify()
        assert seqs(await asyncio.wait_for(_take(live, 1), 2.0)) == [3]
    await asyncio.wait_for(marked(store, "g1", 3), 2.0)
    assert store.claim_unrelayed() == []


async def test_failed_publishes_are_retried_until_they_succeed(
    running_relays: list[asyncio.Task[None]],
) -> None:
    store, bus = MemoryEventStore(), RecordingBus(failures=3)
    relay = Relay(store, bus, poll_seconds=60, max_backoff_seconds=0.05)
    running_relays.append(asyncio.create_task(relay.run()))
    store.create_game("g1", HOKM, make_entries(1, 3))
    relay.notify()
    await _until(lambda: len(bus.published) == 3)
    assert relay.failures == 3
    assert bus.published == [("hokm", "g1", 1), ("hokm", "g1", 2), ("hokm", "g1", 3)]


@pytest.fixture
def two_postgres_stores(pg_url: str) -> Iterator[tuple[OutboxStore, OutboxStore]]:
    first, second = open_store(pg_url), open_store(pg_url)
    yield first, second
    first.close()
    second.close()


async def test_replicas_split_the_backlog_without_duplicates(
    two_postgres_stores: tuple[OutboxStore, OutboxStore],
    running_relays: list[asyncio.Task[None]],
) -> None:
    # PostgreSQL claims games with FOR UPDATE SKIP LOCKED: each event leaves exactly once,
    # each game's events in seq order.
    first, second = two_postgres_stores
    games = [f"g{i}" for i in range(30)]
    for game_id in games:
        first.create_game(game_id, HOKM, make_entries(1, 3))
    bus = RecordingBus()
    for store in (first, second):
        relay = Relay(store, bus, poll_seconds=0.05, max_games=4)
        running_relays.append(asyncio.create_task(relay.run()))
    await _until(lambda: len(bus.published) >= 3 * len(games))
    await asyncio.sleep(0.3)  # room for a duplicate to show up
    assert len(bus.published) == 3 * len(games)
    by_game = collections.defaultdict(list)
    for _, game_id, seq in bus.published:
        by_game[game_id].append(seq)
    assert by_game == {game_id: [1, 2, 3] for game_id in games}
    assert first.claim_unrelayed() == []


async def _take(live: AsyncIterator[LogEntry], count: int) -> list[LogEntry]:
    return [await anext(live) for _ in range(count)]


async def _until(condition: collections.abc.Callable[[], bool]) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), TIMEOUT)


async def test_relay_stops_when_cancelled_mid_publish(
    nats_bus_factory: collections.abc.Callable[..., Any],
) -> None:
    # Python 3.11's asyncio.wait_for (inside nats-py) can swallow a cancel that lands as a
    # publish ack arrives; the relay must stop anyway, or a server shutdown hangs.
    bus = await nats_bus_factory()
    store = MemoryEventStore()
    for attempt in range(15):
        game_id = f"g{attempt}"
        log = make_entries(1, 1)
        store.create_game(game_id, HOKM, log)
        relay = Relay(store, bus, poll_seconds=0.01)
        task = asyncio.create_task(relay.run())
        for _ in range(attempt):
            more = continue_log(log, 1)
            store.append(game_id, more, command_id=None)
            log.extend(more)
            relay.notify()
            await asyncio.sleep(0.0005 * attempt)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=3.0)
        assert done, f"the relay ignored cancel() on attempt {attempt}"


class BlockingBus(InProcessBus):
    """An in-process bus whose publishes wait until ``opened`` is set (a slow JetStream)."""

    def __init__(self) -> None:
        super().__init__()
        self.opened = asyncio.Event()
        self.published: list[tuple[str, int]] = []

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        await self.opened.wait()
        self.published.extend((game_id, entry.event.seq) for entry in entries)
        await super().publish(game_type, game_id, entries)


async def test_a_pass_longer_than_the_lease_keeps_its_claims() -> None:
    # The claim is short, so the relay renews it while it publishes: nobody else claims the
    # games meanwhile, however long the pass takes.
    store, bus = MemoryEventStore(), BlockingBus()
    store.create_game("g1", HOKM, make_entries(1, 2))
    relay = Relay(store, bus, lease_ms=300)
    publishing = asyncio.create_task(relay.relay_once())
    await asyncio.sleep(1.0)  # more than three leases
    assert store.claim_unrelayed() == []  # another relay finds nothing to take over
    assert relay.renewals >= 2
    bus.opened.set()
    assert await asyncio.wait_for(publishing, TIMEOUT) == 2
    assert bus.published == [("g1", 1), ("g1", 2)]
    await asyncio.sleep(0.4)  # the renewals stopped with the pass: nothing more is claimed
    assert store.claim_unrelayed(lease_ms=0) == []


async def test_a_dead_relays_games_are_published_after_one_short_lease(
    running_relays: list[asyncio.Task[None]],
) -> None:
    # A relay killed (SIGKILL) holding a claim never renews nor releases it: the games wait
    # for the lease to run out, then a live relay publishes them.
    store, bus = MemoryEventStore(), RecordingBus()
    store.create_game("g1", HOKM, make_entries(1, 2))
    lease_ms = 400
    assert len(store.claim_unrelayed(lease_ms=lease_ms)) == 1  # the relay that dies
    started = asyncio.get_running_loop().time()
    live = Relay(store, bus, poll_seconds=0.05, lease_ms=lease_ms)
    running_relays.append(asyncio.create_task(live.run()))
    await _until(lambda: len(bus.published) == 2)
    waited = asyncio.get_running_loop().time() - started
    assert lease_ms / 1000 * 0.8 <= waited < lease_ms / 1000 + 2.0
    assert bus.published == [("hokm", "g1", 1), ("hokm", "g1", 2)]


def test_the_default_lease_is_a_few_seconds() -> None:
    # What a SIGKILLed replica costs live delivery: one lease, at most.
    relay = Relay(MemoryEventStore(), InProcessBus())
    assert relay._lease_ms == RELAY_LEASE_MS <= 5_000
