"""Fixtures of the game-service tests: an in-process server. PostgreSQL and NATS come from
tests/conftest.py (``database_url``, ``nats_url``: fail under CI=true when unreachable)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import grpc
import pytest
from prometheus_client import CollectorRegistry

from services.game.app import SERVICE_NAME, mount_game_service
from services.game.service import GameService
from services.platform.auth import Role
from services.platform.bans import Bans
from services.platform.bus import InProcessBus
from services.platform.clock import wall_clock_ms
from services.platform.limits import MACHINE_SPEED, CallerLimiter
from services.platform.metrics import GameMetrics
from services.platform.relay import Relay
from services.platform.revocations import Revocations
from services.platform.server import add_health_and_reflection, bind, make_server
from services.platform.store import MemoryEventStore
from tests.services.game.helpers import GameClient
from tests.support.tokens import TEST_KEYS


@dataclass
class Embedded:
    """A game service on loopback over the in-memory store and the in-process bus."""

    address: str
    channel: grpc.aio.Channel
    store: MemoryEventStore
    service: GameService

    def client(self, player_id: str, role: Role = Role.PLAYER) -> GameClient:
        return GameClient(self.channel, player_id, role)


@pytest.fixture
def limiter() -> CallerLimiter:
    """The limits of the ``embedded`` server (a test module may override this fixture)."""
    return CallerLimiter(MACHINE_SPEED)


@pytest.fixture
async def embedded(limiter: CallerLimiter) -> AsyncIterator[Embedded]:
    async with serve_embedded(limiter) as running:
        yield running


@contextlib.asynccontextmanager
async def serve_embedded(
    limiter: CallerLimiter, *, clock: Callable[[], int] = wall_clock_ms,
    revocations: Revocations | None = None, bans: Bans | None = None,
) -> AsyncIterator[Embedded]:
    """The ``embedded`` server, with a clock, revocations and bans of the test's choice."""
    store = MemoryEventStore()
    bus = InProcessBus()
    await bus.start()
    relay = Relay(store, bus, poll_seconds=0.2)
    relay_task = asyncio.create_task(relay.run())
    server = make_server(TEST_KEYS.ring, limiter=limiter, revocations=revocations, bans=bans)
    service = mount_game_service(
        server, store, bus, relay.notify, metrics=GameMetrics(CollectorRegistry()), clock=clock
    )
    await add_health_and_reflection(server, [SERVICE_NAME])
    port = bind(server, "127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Embedded(f"127.0.0.1:{port}", channel, store, service)
    finally:
        await channel.close()
        await server.stop(None)
        relay_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await relay_task
        await bus.close()
