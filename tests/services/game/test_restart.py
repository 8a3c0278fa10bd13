"""A game-service process killed with SIGKILL mid-trick loses nothing (docs/architecture.md "Event
store and bus": the store is the source of truth; reconnecting is subscribing again).

Clients resubscribe from the last seq they received on the restarted process and finish
the match; the final log equals an uninterrupted run of the same commands with the same
server seed (times aside: the service clock stamps each event).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, next_move, players, start_server

SEED = bytes(range(32))


def create_request() -> game_pb2.CreateGameRequest:
    return game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=1),
        players=players(4), server_seed=SEED,
    )


def timeless(events: list[log_pb2.Event]) -> list[log_pb2.Event]:
    """The events without the service clock's stamps."""
    stripped = []
    for event in events:
        copy = log_pb2.Event()
        copy.CopyFrom(event)
        copy.at_ms = 0
        copy.deadline_ms = 0
        stripped.append(copy)
    return stripped


async def collect(client: GameClient, game_id: str, after: int, sink: list[log_pb2.Event]) -> None:
    """Stream into ``sink`` until the stream ends or the server dies."""
    with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
        async for event in client.subscribe(game_id, after):
            sink.append(event)


async def test_sigkill_mid_trick_then_restart_finishes_the_same_match(
    database_url: str, nats_url: str, embedded: Embedded
) -> None:
    env = {"DAST_DATABASE_URL": database_url, "DAST_NATS_URL": nats_url}
    server = start_server(env)
    commands: list[tuple[int, Any]] = []
    received: list[list[log_pb2.Event]] = [[] for _ in range(4)]
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    try:
        channel = grpc.aio.insecure_channel(server.address)
        admin = GameClient(channel, "root", Role.ADMIN)
        game_id = (await admin.create(create_request())).game_id
        clients = [GameClient(channel, f"p{seat}") for seat in range(4)]
        streams = [asyncio.create_task(collect(clients[s], game_id, 0, received[s]))
                   for s in range(4)]
        # Play until a trick is half done (two cards on the table), then kill the process.
        while True:
            move = await next_move(clients, game_id, rngs)
            assert move is not None
            seat, body, seq = move
            await clients[seat].submit(game_id, f"cmd-{len(commands)}", body, expected_seq=seq)
            commands.append((seat, body))
            view = (await clients[0].view(game_id)).hokm
            if len(commands) > 6 and len(view.current_trick.plays) == 2:
                break
        await asyncio.sleep(0.3)  # let the streams receive what was appended
        server.kill()
        await asyncio.wait_for(asyncio.gather(*streams), timeout=10)
        await channel.close()
        assert all(events for events in received)

        # Restart; each client resubscribes from the last seq it received and plays on.
        server = start_server(env)
        channel = grpc.aio.insecure_channel(server.address)
        clients = [GameClient(channel, f"p{seat}") for seat in range(4)]
        streams = [
            asyncio.create_task(collect(clients[s], game_id, received[s][-1].seq, received[s]))
            for s in range(4)
        ]
        while (move := await next_move(clients, game_id, rngs)) is not None:
            seat, body, seq = move
            await clients[seat].submit(game_id, f"cmd-{len(commands)}", body, expected_seq=seq)
            commands.append((seat, body))
        await asyncio.wait_for(asyncio.gather(*streams), timeout=20)
        entries = await GameClient(channel, "root", Role.ADMIN).export(game_id)
        await channel.close()
    finally:
        server.stop()

    log = [entry.event for entry in entries]
    assert hokm.is_over(hokm.replay(log))
    for seat in range(4):  # no gap and no duplicate across the reconnection
        assert received[seat] == [hokm.redact(event, seat) for event in log]

    # The same commands on an uninterrupted server with the same seed give the same log.
    admin = embedded.client("root", Role.ADMIN)
    again_id = (await admin.create(create_request())).game_id
    for number, (seat, body) in enumerate(commands):
        await embedded.client(f"p{seat}").submit(again_id, f"cmd-{number}", body)
    uninterrupted = [entry.event for entry in await admin.export(again_id)]
    assert timeless(uninterrupted) == timeless(log)
