"""Group commit under the game service, on PostgreSQL: commands that arrive while the
store's writer has a transaction in flight are committed together in its next one, and
each command still gets its own outcome (an illegal one among them fails alone)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from services.game.app import mount_game_service
from services.platform.auth import Role
from services.platform.bus import InProcessBus
from services.platform.limits import MACHINE_SPEED, CallerLimiter
from services.platform.metrics import GameMetrics
from services.platform.relay import Relay
from services.platform.server import bind, make_server
from services.platform.store_sql import SqlEventStore
from tests.services.game.helpers import GameClient, next_move, players
from tests.support.tokens import TEST_KEYS

GAMES = 8


@dataclass
class Served:
    channel: grpc.aio.Channel
    batches: list[int]
    """The size of every batch the store's writer ran."""


@pytest.fixture
async def served(pg_url: str) -> AsyncIterator[Served]:
    batches: list[int] = []
    store = SqlEventStore.open(pg_url, on_batch=batches.append)
    bus = InProcessBus()
    await bus.start()
    relay = Relay(store, bus, poll_seconds=0.2)
    relaying = asyncio.create_task(relay.run())
    server = make_server(TEST_KEYS.ring, limiter=CallerLimiter(MACHINE_SPEED))
    mount_game_service(server, store, bus, relay.notify,
                       metrics=GameMetrics(CollectorRegistry()))
    port = bind(server, "127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Served(channel, batches)
    finally:
        await channel.close()
        await server.stop(None)
        relaying.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await relaying
        await bus.close()
        store.close()


async def test_commands_arriving_during_a_transaction_commit_together_each_with_its_outcome(
    served: Served, pg_url: str
) -> None:
    lobby = GameClient(served.channel, "lobby", Role.SERVICE)
    rngs = [DeterministicRandom(bytes(32), f"group-commit/{seat}") for seat in range(4)]
    games = []
    seats: dict[str, list[GameClient]] = {}
    moves = {}
    for number in range(GAMES):
        # Players of their own per game: a caller's commands are handled in order.
        reply = await lobby.create(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=1),
            players=players(4, prefix=f"g{number}p")))
        games.append(reply.game_id)
        seats[reply.game_id] = [GameClient(served.channel, f"g{number}p{seat}")
                                for seat in range(4)]
        move = await next_move(seats[reply.game_id], reply.game_id, rngs)
        assert move is not None
        moves[reply.game_id] = move
    held, *others = games

    rival = create_engine(pg_url)
    try:
        with rival.connect() as holder:
            # Another connection holds the first game's row: the writer's transaction for
            # its command waits, and the others' commands arrive meanwhile.
            holder.execute(text("SELECT 1 FROM games WHERE game_id = :g FOR UPDATE"),
                           {"g": held})
            served.batches.clear()
            seat, move, _ = moves[held]
            first = asyncio.create_task(seats[held][seat].submit(held, "c-held", move))
            while not served.batches:
                await asyncio.sleep(0.01)
            arriving = []
            for game_id in others:
                seat, move, _ = moves[game_id]
                arriving.append(asyncio.create_task(
                    seats[game_id][seat].submit(game_id, "c", move)))
            # Out of turn: the engine refuses it, and only it.
            seat, move, _ = moves[others[0]]
            illegal = asyncio.create_task(
                seats[others[0]][(seat + 1) % 4].submit(others[0], "c-illegal", move))
            await asyncio.sleep(0.3)  # every command reached the writer's queue
            assert not first.done()
            holder.rollback()
        accepted = await asyncio.gather(first, *arriving)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await illegal
    finally:
        rival.dispose()

    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert all(not reply.duplicate for reply in accepted)
    assert served.batches == [1, len(others)]  # the held one, then all that came meanwhile
    admin = GameClient(served.channel, "ops", Role.ADMIN)
    for game_id, answer in zip([held, *others], accepted, strict=True):
        assert answer.events[0].seq == moves[game_id][2] + 1  # each its own game's next seq
        assert [entry.event.seq for entry in await admin.export(game_id)][-1] == answer.seq
