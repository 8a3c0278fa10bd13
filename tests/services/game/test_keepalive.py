"""Mobile clients may keep idle connections alive with pings (docs/architecture.md "gRPC surface":
keepalive settings that let mobile clients ping): a Subscribe stream left idle while the
client pings every half second must stay open and still deliver the next event, instead of
being cut with GOAWAY ``too_many_pings`` as gRPC's default server policy would."""

from __future__ import annotations

import asyncio

import grpc

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, next_move, players, stream_into

_PINGING_CLIENT = [
    ("grpc.keepalive_time_ms", 500),
    ("grpc.keepalive_timeout_ms", 5000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]


async def test_an_idle_stream_survives_frequent_client_pings(embedded: Embedded) -> None:
    channel = grpc.aio.insecure_channel(embedded.address, options=_PINGING_CLIENT)
    try:
        admin = GameClient(channel, "admin", Role.ADMIN)
        created = await admin.create(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)
        ))
        clients = [GameClient(channel, f"p{seat}") for seat in range(4)]
        events: list[log_pb2.Event] = []
        stream = asyncio.create_task(stream_into(clients[0], created.game_id, 0, events))
        # Idle for 4 s: about eight pings with no data on the connection.
        await asyncio.sleep(4)
        assert not stream.done(), "the idle stream was cut"
        seen = len(events)
        rngs = [DeterministicRandom(b"keepalive", f"seat/{s}") for s in range(4)]
        move = await next_move(clients, created.game_id, rngs)
        assert move is not None
        seat, body, seq = move
        await clients[seat].submit(created.game_id, "after-idle", body, expected_seq=seq)
        for _ in range(100):
            if len(events) > seen:
                break
            await asyncio.sleep(0.05)
        assert len(events) > seen, "the stream delivered nothing after the idle pings"
        stream.cancel()
    finally:
        await channel.close()
