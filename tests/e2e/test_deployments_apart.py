"""Two deployments on one NATS server, each with its own database, never touch each other's
games, events or seats (services/platform/nats_names.py, docs/deploy.md "Several
deployments on one NATS").

Both run every service in one process (game, lobby, bots with their takeovers, presence),
and both hold a game of the same id with the same person in seat 0. The person leaves
deployment A's game and stays in B's: A hands the seat to a bot after the grace, and B keeps
it with the person. Had the deployments shared the presence bucket, A would have read B's
report of the person's open stream and never taken the seat over (and B, had the person left
there instead, would have asked its game service about A's absences).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2, log_pb2
from services.compose import Running, StackOptions, running_stack
from services.platform.auth import Role
from services.platform.bus_nats import NatsBus
from services.platform.limits import MACHINE_SPEED
from services.platform.nats_names import NatsNames
from services.platform.presence_kv import REPLICA_ALIVE, NatsPresenceBoard
from tests.conftest import delete_streams, fresh_schema
from tests.support.tokens import TEST_KEYS, token

pytestmark = pytest.mark.timeout(120)

GRACE_MS = 400
OPTIONS = StackOptions(grace_ms=GRACE_MS, presence_heartbeat_ms=200, timers=False)


async def _wait_for(check: Callable[[], Awaitable[bool]], seconds: float = 60) -> None:
    async with asyncio.timeout(seconds):
        while not await check():
            await asyncio.sleep(0.05)


def _metadata(player_id: str, role: Role = Role.PLAYER) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token(player_id, role)}"),)


async def _relayed(bus: NatsBus, game_id: str, seq: int) -> None:
    """Until the bus's stream holds the game's events up to ``seq``."""
    async def caught_up() -> bool:
        return await bus.last_published_seq("hokm", game_id) >= seq

    await _wait_for(caught_up)


def _controls(run: Running, game_id: str) -> list[log_pb2.SeatControl]:
    return [entry.event.seat_control for entry in run.store.load(game_id, 0)
            if entry.event.HasField("seat_control")]


@contextlib.asynccontextmanager
async def _deployment(database_url: str, nats_url: str) -> AsyncIterator[Running]:
    """One deployment: its own schema and name, every service in this process."""
    names = NatsNames(f"test{uuid.uuid4().hex[:12]}")
    try:
        with fresh_schema(database_url) as url:
            async with running_stack(TEST_KEYS, store_url=url, nats_url=nats_url, options=OPTIONS,
                                     limits=MACHINE_SPEED, deployment=names.deployment) as run:
                yield run
    finally:
        await delete_streams(nats_url, names)


async def test_two_deployments_on_one_nats_never_touch_each_others_games_or_seats(
    database_url: str, nats_url: str,
) -> None:
    game_id = f"shared-{uuid.uuid4().hex[:8]}"
    async with _deployment(database_url, nats_url) as a, \
            _deployment(database_url, nats_url) as b, \
            grpc.aio.insecure_channel(a.address) as to_a, \
            grpc.aio.insecure_channel(b.address) as to_b:
        seated = [common_pb2.Player(player_id="p0"), *(
            common_pb2.Player(player_id=f"bot:greedy:{seat}", is_bot=True)
            for seat in (1, 2, 3))]
        streams = []
        for channel in (to_a, to_b):
            stub = game_pb2_grpc.GameServiceStub(channel)
            # The same game id in both deployments, each in its own database.
            await stub.CreateGame(game_pb2.CreateGameRequest(
                game_id=game_id, game_type=common_pb2.GAME_TYPE_HOKM,
                hokm=hokm_pb2.HokmRules(target_score=1), players=seated,
            ), metadata=_metadata("lobby", Role.SERVICE))
            streams.append(stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                          metadata=_metadata("p0")))
            await anext(aiter(streams[-1]))
        in_a, in_b = streams
        # The person leaves A's game and stays in B's.
        in_a.cancel()

        async def a_took_the_seat() -> bool:
            return any(control.seat == 0 and control.bot for control in _controls(a, game_id))

        await _wait_for(a_took_the_seat)
        # B's sweeps go on well past the grace: the person is still there.
        await asyncio.sleep(5 * GRACE_MS / 1000)
        assert _controls(b, game_id) == []
        assert b.stack.takeovers is not None and b.stack.takeovers.taken_over == 0
        in_b.cancel()

        # Each board holds its own replica's reports only.
        for run in (a, b):
            assert isinstance(run.stack.board, NatsPresenceBoard)
            assert run.stack.reporter is not None
            replicas = {record.replica_id for record in await run.stack.board.records()}
            assert replicas == {run.stack.reporter.replica_id}
        games = {record.game_id for record in await a.stack.board.records()}
        assert games <= {game_id, REPLICA_ALIVE}

        # Each stream carries its own deployment's events of the game, and no other's.
        for run in (a, b):
            bus = run.stack.bus
            assert isinstance(bus, NatsBus)
            await _relayed(bus, game_id, run.store.load(game_id, 0)[-1].event.seq)
            last = {published.game_id: published.entry for published in await bus.last_events()}
            assert set(last) == {game_id}
            seq = last[game_id].event.seq
            assert last[game_id].hash == run.store.load(game_id, seq - 1)[0].hash
        assert a.store.load(game_id, 0)[0].hash != b.store.load(game_id, 0)[0].hash
