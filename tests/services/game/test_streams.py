"""Subscribe's merge of store and bus (docs/architecture.md "gRPC surface": replay after after_seq,
then live, no gap and no duplicate)."""

from __future__ import annotations

import asyncio

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.chain import chain_entries, chain_log, log_chain_key
from engine.core.rng import DeterministicRandom
from services.game.streams import log_after
from services.platform.bus import InProcessBus
from services.platform.store import MemoryEventStore


def started_game(store: MemoryEventStore) -> list[log_pb2.LogEntry]:
    events = hokm.start(hokm_pb2.HokmRules(), bytes(32),
                        [common_pb2.Player(player_id=f"p{s}") for s in range(4)])
    entries = chain_log(events)
    store.create_game("g", common_pb2.GAME_TYPE_HOKM, entries)
    return entries


def next_entries(entries: list[log_pb2.LogEntry]) -> list[log_pb2.LogEntry]:
    state = hokm.replay(e.event for e in entries)
    seat = hokm.to_act(state)
    assert seat is not None
    legal = hokm.legal(state, seat)
    command = legal[DeterministicRandom(bytes(32), "x").randbelow(len(legal))]
    key = log_chain_key(entries[0].event)
    return chain_entries(hokm.decide(state, command), entries[-1].hash, key=key)


async def test_a_stream_replays_then_follows_the_bus_without_repeats() -> None:
    store, bus = MemoryEventStore(), InProcessBus()
    await bus.start()
    entries = started_game(store)
    received: list[int] = []

    async def follow() -> None:
        async for entry in log_after(store, bus, hokm, "g", 2, poll_seconds=(5.0,)):
            received.append(entry.event.seq)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.05)
    more = next_entries(entries)
    store.append("g", more, command_id="c1", sender="p1")
    # The bus carries one entry twice (a relay that resent): it is streamed once.
    await bus.publish("hokm", "g", more)
    await bus.publish("hokm", "g", more)
    await asyncio.sleep(0.05)
    task.cancel()
    await bus.close()
    assert received == list(range(3, more[-1].event.seq + 1))


async def test_a_stream_fills_what_the_bus_never_carried_from_the_store() -> None:
    store, bus = MemoryEventStore(), InProcessBus()
    await bus.start()
    entries = started_game(store)
    received: list[int] = []

    async def follow() -> None:
        async for entry in log_after(store, bus, hokm, "g", 0, poll_seconds=(0.05,)):
            received.append(entry.event.seq)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.05)
    first = next_entries(entries)
    store.append("g", first, command_id="c1", sender="p1")  # never published: bus was down
    second = next_entries(entries + first)
    store.append("g", second, command_id="c2", sender="p1")
    await bus.publish("hokm", "g", second)  # a gap before it: filled from the store
    await asyncio.sleep(0.3)
    task.cancel()
    await bus.close()
    assert received == list(range(1, second[-1].event.seq + 1))
