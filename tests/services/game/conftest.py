"""Fixtures of the game-service tests: an in-process server and PostgreSQL/NATS URLs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlparse

import grpc
import pytest
from prometheus_client import CollectorRegistry

from services.game.app import SERVICE_NAME, mount_game_service
from services.game.service import GameService
from services.platform.auth import Role
from services.platform.bus import InProcessBus
from services.platform.metrics import GameMetrics
from services.platform.relay import Relay
from services.platform.server import add_health_and_reflection, bind, make_server
from services.platform.store import MemoryEventStore
from tests.services.game.helpers import SECRET, GameClient

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


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
async def embedded() -> AsyncIterator[Embedded]:
    store = MemoryEventStore()
    bus = InProcessBus()
    await bus.start()
    relay = Relay(store, bus, poll_seconds=0.2)
    relay_task = asyncio.create_task(relay.run())
    server = make_server(SECRET)
    service = mount_game_service(
        server, store, bus, relay.notify, metrics=GameMetrics(CollectorRegistry())
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


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1",
                                       parsed.port or default_port), timeout=1):
            return True
    except OSError:
        return False


def _service_url(variable: str, default: str, port: int) -> str:
    url = os.environ.get(variable, default)
    if not _reachable(url, port):
        message = f"{variable}: nothing listens at {url}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return url


@pytest.fixture(scope="session")
def pg_url() -> str:
    """PostgreSQL of the tests (fails under CI=true when unreachable, else skips)."""
    return _service_url("DAST_TEST_DATABASE_URL", DEFAULT_DATABASE_URL, 5432)


@pytest.fixture(scope="session")
def nats_url() -> str:
    """NATS with JetStream of the tests (fails under CI=true when unreachable, else skips)."""
    return _service_url("DAST_TEST_NATS_URL", DEFAULT_NATS_URL, 4222)
