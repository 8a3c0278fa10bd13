"""``last_events``: the last event of every game, from NATS or from the process's own store.

Consumers that keep their work in memory (turn deadlines, games waiting for a bot) rebuild
it from these on start, so they never read the event store's tables themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from services.compose import in_process_bus
from services.platform.bus import InProcessBus, KnowsLastEvents
from services.platform.bus_nats import NatsBus
from services.platform.store import open_store
from tests.services.platform.helpers import HOKM, make_entries


async def test_nats_hands_over_the_last_message_of_every_game(
    nats_bus_factory: Callable[..., Awaitable[NatsBus]],
) -> None:
    bus = await nats_bus_factory()
    assert isinstance(bus, KnowsLastEvents)
    assert await bus.last_events() == []  # an empty stream
    await bus.publish("hokm", "g1", make_entries(1, 5))
    await bus.publish("hand", "g2", make_entries(1, 2))
    await bus.publish("hokm", "g1", make_entries(6, 1))
    last = {(p.game_type, p.game_id): p.entry.event.seq for p in await bus.last_events()}
    assert last == {("hokm", "g1"): 6, ("hand", "g2"): 2}


async def test_the_in_process_bus_asks_the_event_store_of_its_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'events.db'}"
    store = await asyncio.to_thread(open_store, url)
    try:
        entries = make_entries(1, 3)
        await asyncio.to_thread(store.create_game, "g1", HOKM, entries[:1])
        await asyncio.to_thread(lambda: store.append("g1", entries[1:], command_id=None))
        last = await in_process_bus(url).last_events()
        assert [(p.game_type, p.game_id, p.entry.event.seq, p.entry.hash) for p in last] == [
            ("hokm", "g1", 3, entries[-1].hash)]
    finally:
        await asyncio.to_thread(store.close)
    # A private in-memory store cannot be read from elsewhere: no history, nothing to rebuild.
    assert await InProcessBus().last_events() == []
    assert await in_process_bus(None).last_events() == []
