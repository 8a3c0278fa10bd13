"""The game service's `dast_open_streams` gauge follows the Subscribe streams it holds."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from dast.v1 import game_pb2
from services.platform.metrics import GameMetrics
from tests.services.game.conftest import Embedded
from tests.services.game.test_errors import new_game


async def _wait_for(registry: CollectorRegistry, value: float) -> None:
    for _ in range(200):
        if registry.get_sample_value("dast_open_streams") == value:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(
        f"dast_open_streams is {registry.get_sample_value('dast_open_streams')}, not {value}"
    )


async def test_open_streams_rise_with_each_subscribe_and_fall_when_it_ends(
    embedded: Embedded,
) -> None:
    game_id, clients = await new_game(embedded)
    registry = CollectorRegistry()
    embedded.service.metrics = GameMetrics(registry)
    calls = [
        client.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id), metadata=client.metadata)
        for client in clients[:3]
    ]
    for call in calls:
        await call.read()  # the stream is open once its first event arrives
    await _wait_for(registry, 3)

    calls[0].cancel()
    await _wait_for(registry, 2)
    for call in calls[1:]:
        call.cancel()
    await _wait_for(registry, 0)
