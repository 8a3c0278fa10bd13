"""The relay on its own thread and event loop (what a server on NATS runs): every append
reaches the bus once, promptly after notify(), and cancelling the relay stops its thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from services.platform.bus import LiveStream
from services.platform.bus_nats import NatsBus
from services.platform.relay import RelayThread
from services.platform.store import MemoryEventStore
from tests.conftest import NatsNames
from tests.services.platform.helpers import HOKM, continue_log, make_entries, marked, seqs

TIMEOUT = 10.0


async def _take(live: LiveStream, count: int) -> list[Any]:
    return [await anext(live) for _ in range(count)]


async def _published(relay: RelayThread, count: int) -> None:
    while relay.relay is None or relay.relay.published_events < count:
        await asyncio.sleep(0.01)


async def test_a_relay_thread_publishes_each_append_once_and_stops_when_cancelled(
    nats_url: str, nats_names: NatsNames, nats_bus_factory: Callable[..., Any]
) -> None:
    reader: NatsBus = await nats_bus_factory()
    store = MemoryEventStore()

    def relay_bus() -> NatsBus:
        return NatsBus(
            nats_url, stream=nats_names.stream, subject_prefix=nats_names.subject_prefix
        )

    relay = RelayThread(store, relay_bus, poll_seconds=60)  # only notify() wakes it in time
    running = asyncio.create_task(relay.run())
    try:
        async with reader.live("g1") as live:
            await live.ensure_subscribed()
            log = make_entries(1, 2)
            store.create_game("g1", HOKM, log)
            for _ in range(100):  # the thread may still be connecting: notify until it runs
                relay.notify()
                if relay.relay is not None:
                    break
                await asyncio.sleep(0.05)
            assert seqs(await asyncio.wait_for(_take(live, 2), TIMEOUT)) == [1, 2]
            store.append("g1", continue_log(log, 1), command_id="c", sender="p1")
            relay.notify()
            relay.notify()  # a second wake-up before the first is served costs nothing
            assert seqs(await asyncio.wait_for(_take(live, 1), TIMEOUT)) == [3]
        # Subscribers see an event before the relay has JetStream's ack: wait for the ack,
        # then for the mark that follows it.
        await asyncio.wait_for(_published(relay, 3), TIMEOUT)
        await asyncio.wait_for(marked(store, "g1", 3), TIMEOUT)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert not any(thread.name == "relay" for thread in threading.enumerate())
    assert relay.relay is not None and relay.relay.published_events == 3
    assert await reader.last_published_seq("hokm", "g1") == 3
    assert store.claim_unrelayed() == []


async def test_cancelling_a_relay_thread_before_it_connects_stops_it(
    nats_url: str, nats_names: NatsNames
) -> None:
    def relay_bus() -> NatsBus:
        return NatsBus(
            nats_url, stream=nats_names.stream, subject_prefix=nats_names.subject_prefix
        )

    relay = RelayThread(MemoryEventStore(), relay_bus)
    running = asyncio.create_task(relay.run())
    await asyncio.sleep(0)  # the thread has started, the relay is not running yet
    running.cancel()
    await asyncio.wait_for(asyncio.gather(running, return_exceptions=True), TIMEOUT)
    assert not any(thread.name == "relay" for thread in threading.enumerate())
