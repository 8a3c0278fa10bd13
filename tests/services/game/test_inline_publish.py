"""With the in-process bus the game service publishes a command's events itself.

docs/architecture.md "Event store and bus": every appended event reaches the bus in seq order. On
the
embedded backend the service publishes right after the commit (under the game's lock) and
the append moves the outbox watermark in the same transaction, so the relay has nothing
left to re-read; retries (same command_id) publish nothing again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from prometheus_client import CollectorRegistry

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine import hokm
from services.game.app import mount_game_service
from services.platform.auth import Role
from services.platform.bus import InProcessBus, Published
from services.platform.metrics import GameMetrics
from services.platform.server import bind, make_server
from services.platform.store import MemoryEventStore
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import players
from tests.support.tokens import TEST_KEYS


@pytest.fixture
async def without_relay() -> AsyncIterator[tuple[Embedded, list[str]]]:
    """The service on the in-process bus with NO relay running; records relay wake-ups."""
    store, bus, wakeups = MemoryEventStore(), InProcessBus(), list[str]()
    server = make_server(TEST_KEYS.ring)
    service = mount_game_service(
        server, store, bus, lambda: wakeups.append("notify"),
        metrics=GameMetrics(CollectorRegistry()),
    )
    port = bind(server, "127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Embedded(f"127.0.0.1:{port}", channel, store, service), wakeups
    finally:
        await channel.close()
        await server.stop(None)
        await bus.close()


async def _drain(consumer: asyncio.Queue[Published], count: int) -> list[Published]:
    return [await asyncio.wait_for(consumer.get(), 5) for _ in range(count)]


async def test_commands_reach_the_bus_in_seq_order_and_leave_no_outbox(
    without_relay: tuple[Embedded, list[str]],
) -> None:
    embedded, wakeups = without_relay
    bus = embedded.service.bus
    received: asyncio.Queue[Published] = asyncio.Queue()

    async def consume() -> None:
        async for published in bus.all_events():
            received.put_nowait(published)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)  # all_events registers on its first step
    admin = embedded.client("admin", Role.ADMIN)
    seated = players(4)
    rules = hokm_pb2.HokmRules(target_score=7)
    seed = bytes(range(32))
    created = await admin.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated, server_seed=seed,
        game_id="inline-1",
    ))
    first = await _drain(received, created.seq)
    state = hokm.replay(hokm.start(rules, seed, seated))
    seqs = [published.entry.event.seq for published in first]
    for number in range(6):
        seat = hokm.to_act(state)
        assert seat is not None
        command = hokm.legal(state, seat)[0]
        reply = await admin.submit("inline-1", f"c{number}", command.hokm, seat=seat)
        retried = await admin.submit("inline-1", f"c{number}", command.hokm, seat=seat)
        assert retried.duplicate and list(retried.events) == list(reply.events)
        seqs += [p.entry.event.seq for p in await _drain(received, len(reply.events))]
        for event in hokm.decide(state, command):
            state = hokm.evolve(state, event)
    consumer.cancel()
    assert seqs == list(range(1, len(seqs) + 1))  # every event once, in seq order
    assert received.empty()  # the retries published nothing
    assert embedded.store.claim_unrelayed(lease_ms=0) == []  # nothing left for the relay
    assert wakeups == []  # and no reason to wake it
