"""Seat control in the game's log, through real gRPC (engine/core/control.py,
services/game/control.py, services/bot/presence.py, services/platform/presence_kv.py).

Two game replicas share PostgreSQL and NATS, each reporting its players' streams to one
JetStream key-value bucket; two takeover sweepers (as two bot replicas run them) read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from services.bot.client import GrpcGameApi
from services.bot.presence import Takeovers
from services.game.app import mount_game_service
from services.platform.auth import Role
from services.platform.errors import reason_of
from services.platform.limits import MACHINE_SPEED
from services.platform.metrics import GameMetrics
from services.platform.presence_kv import NatsPresenceBoard, PresenceReporter
from services.platform.relay import Relay
from services.platform.server import bind, make_server
from services.platform.store import OutboxStore, open_store
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, players
from tests.support.tokens import TEST_KEYS, signer

pytestmark = pytest.mark.timeout(90)

DISCONNECTED = log_pb2.SEAT_CONTROL_REASON_DISCONNECTED
RECONNECTED = log_pb2.SEAT_CONTROL_REASON_RECONNECTED
GRACE_MS = 600


def _humans_and_bots() -> list[common_pb2.Player]:
    """Seat 0 a person (p0), seats 1-3 the table's bots at level greedy."""
    seated = players(4)
    for seat in (1, 2, 3):
        seated[seat].player_id = f"bot:greedy:{seat}"
        seated[seat].is_bot = True
    return seated


async def _create(channel: grpc.aio.Channel) -> str:
    lobby = GameClient(channel, "lobby", Role.SERVICE)
    reply = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=1),
        players=_humans_and_bots(),
    ))
    return reply.game_id


async def _control(client: GameClient, game_id: str, seat: int, *, bot: bool,
                   reason: int = DISCONNECTED) -> game_pb2.ControlSeatResponse:
    reply: game_pb2.ControlSeatResponse = await client.stub.ControlSeat(
        game_pb2.ControlSeatRequest(game_id=game_id, seat=seat, bot=bot,
                                    bot_level="basic" if bot else "", reason=reason),  # type: ignore[arg-type]
        metadata=client.metadata,
    )
    return reply


async def _view(client: GameClient, game_id: str) -> game_pb2.GetViewResponse:
    reply: game_pb2.GetViewResponse = await client.stub.GetView(
        game_pb2.GetViewRequest(game_id=game_id), metadata=client.metadata)
    return reply


def _controls(store: OutboxStore, game_id: str) -> list[log_pb2.Event]:
    return [e.event for e in store.load(game_id, 0) if e.event.HasField("seat_control")]


async def _wait_for(predicate: Callable[[], Any], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


# --- one game service (in memory) -------------------------------------------------------


async def test_a_player_may_not_forge_seat_control(embedded: Embedded) -> None:
    game_id = await _create(embedded.channel)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _control(embedded.client("p0"), game_id, 0, bot=True)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert reason_of(refused.value) == "role_required"
    assert _controls(embedded.store, game_id) == []


async def test_a_takeover_is_an_event_with_reason_and_requester_and_views_show_it(
    embedded: Embedded,
) -> None:
    game_id = await _create(embedded.channel)
    presence = embedded.client("presence", Role.SERVICE)
    taken = await _control(presence, game_id, 0, bot=True)
    assert taken.changed and taken.event.seq == taken.seq and len(taken.hash) == 32
    control = taken.event.seat_control
    assert (control.seat, control.bot, control.bot_level) == (0, True, "basic")
    assert (control.reason, control.requested_by) == (DISCONNECTED, "service:presence")
    # Asking again (another replica, a retry) changes nothing and appends nothing.
    again = await _control(presence, game_id, 0, bot=True)
    assert not again.changed and again.seq == taken.seq
    assert len(_controls(embedded.store, game_id)) == 1
    # Every view, the player's own and a spectator's, says who controls each seat.
    for viewer in (embedded.client("p0"), embedded.client("someone")):
        view = await _view(viewer, game_id)
        assert [c.bot for c in view.seat_control] == [True, False, False, False]
        assert view.seat_control[0].bot_level == "basic"
    # A bot seated from the start is never taken over nor given back.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _control(presence, game_id, 2, bot=False)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(refused.value) == "seat_is_a_bot"


async def test_the_players_new_stream_gives_the_seat_back(embedded: Embedded) -> None:
    game_id = await _create(embedded.channel)
    await _control(embedded.client("presence", Role.SERVICE), game_id, 0, bot=True)
    player = embedded.client("p0")
    stream = player.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                   metadata=player.metadata)
    seen = [(await anext(aiter(stream))).event]

    async def returned() -> bool:
        return len(_controls(embedded.store, game_id)) == 2

    await _wait_for(returned)
    back = _controls(embedded.store, game_id)[1].seat_control
    assert (back.bot, back.reason, back.requested_by) == (False, RECONNECTED, "player:p0")
    # The stream carries the seat-control events too, whole (they hide nothing).
    async for response in stream:
        seen.append(response.event)
        if sum(e.HasField("seat_control") for e in seen) == 2:
            break
    stream.cancel()
    assert not (await _view(player, game_id)).seat_control[0].bot


# --- two game replicas sharing PostgreSQL and NATS ---------------------------------------


@dataclass
class Replica:
    address: str
    channel: grpc.aio.Channel
    reporter: PresenceReporter


@dataclass
class Cluster:
    store: OutboxStore
    replicas: list[Replica]
    sweepers: list[Takeovers]
    bucket: str


@pytest.fixture
async def cluster(pg_url: str, nats_url: str, nats_bus_factory: Any) -> AsyncIterator[Cluster]:
    bucket = f"TEST_PRESENCE_{uuid.uuid4().hex[:12]}"
    boards: list[NatsPresenceBoard] = []
    tasks: list[asyncio.Task[None]] = []
    stops: list[Any] = []
    store = await asyncio.to_thread(open_store, pg_url)

    async def board() -> NatsPresenceBoard:
        made = NatsPresenceBoard(nats_url, bucket=bucket, ttl_ms=60_000)
        await made.start()
        boards.append(made)
        return made

    replicas = []
    for _ in range(2):
        replica_store = await asyncio.to_thread(open_store, pg_url)
        bus = await nats_bus_factory()
        relay = Relay(replica_store, bus, poll_seconds=0.2)
        tasks.append(asyncio.create_task(relay.run()))
        reporter = PresenceReporter(await board(), heartbeat_ms=200)
        tasks.append(asyncio.create_task(reporter.run()))
        server = make_server(TEST_KEYS.ring, limits=MACHINE_SPEED)
        mount_game_service(server, replica_store, bus, relay.notify,
                           metrics=GameMetrics(CollectorRegistry()), presence=reporter)
        port = bind(server, "127.0.0.1:0")
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        replicas.append(Replica(f"127.0.0.1:{port}", channel, reporter))
        stops.append((server, channel, replica_store))
    # One sweeper per bot replica, each calling a different game replica.
    sweepers = [
        Takeovers(await board(), GrpcGameApi(replica.channel, signer("bot"), player_id="presence"),
                  grace_ms=GRACE_MS, stale_ms=1_000)
        for replica in replicas
    ]
    try:
        yield Cluster(store, replicas, sweepers, bucket)
    finally:
        for task in tasks:
            task.cancel()
        for server, channel, replica_store in stops:
            await channel.close()
            await server.stop(None)
            await asyncio.to_thread(replica_store.close)
        for made in boards:
            await made.close()
        await asyncio.to_thread(store.close)
        import nats

        with contextlib.suppress(Exception):
            connection = await nats.connect(nats_url, connect_timeout=2)
            await connection.jetstream().delete_key_value(bucket)
            await connection.close()


async def _sweep_all(cluster: Cluster) -> int:
    """Both sweepers at the same moment, as two bot replicas would."""
    counts = await asyncio.gather(*(sweeper.sweep() for sweeper in cluster.sweepers))
    return sum(counts)


def _subscribe(replica: Replica, game_id: str) -> grpc.aio.UnaryStreamCall:
    player = GameClient(replica.channel, "p0")
    return player.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                 metadata=player.metadata)


async def test_a_player_whose_stream_moves_to_another_replica_keeps_the_seat(
    cluster: Cluster,
) -> None:
    a, b = cluster.replicas
    game_id = await _create(a.channel)
    on_a = _subscribe(a, game_id)
    await anext(aiter(on_a))
    # The connection moves: a stream on replica B opens, then A's closes.
    on_b = _subscribe(b, game_id)
    await anext(aiter(on_b))
    on_a.cancel()

    async def a_reported_the_close() -> bool:
        records = await cluster.sweepers[0].board.records()
        return any(r.replica_id == a.reporter.replica_id and "p0" in r.closed for r in records)

    await _wait_for(a_reported_the_close)
    # Well past the grace: replica A alone would call p0 away, but B still holds a stream.
    for _ in range(4):
        await asyncio.sleep(GRACE_MS / 1000 / 2)
        assert await _sweep_all(cluster) == 0
    assert _controls(cluster.store, game_id) == []
    on_b.cancel()


async def test_a_player_gone_longer_than_the_grace_is_taken_over_exactly_once(
    cluster: Cluster,
) -> None:
    a, b = cluster.replicas
    game_id = await _create(a.channel)
    stream = _subscribe(a, game_id)
    await anext(aiter(stream))
    stream.cancel()
    taken = 0
    for _ in range(40):  # both sweepers, together, until the grace has passed
        taken += await _sweep_all(cluster)
        if taken:
            break
        await asyncio.sleep(0.05)
    for _ in range(5):  # and some more sweeps: nobody takes the seat a second time
        taken += await _sweep_all(cluster)
    assert taken == 1
    [event] = _controls(cluster.store, game_id)
    control = event.seat_control
    assert (control.seat, control.bot, control.reason) == (0, True, DISCONNECTED)
    assert control.requested_by == "service:presence"
    assert control.bot_level == "greedy"  # the level of the match's own bots
    # The player comes back on the other replica: the seat is theirs again, in the log.
    back = _subscribe(b, game_id)
    await anext(aiter(back))

    async def returned() -> bool:
        return len(_controls(cluster.store, game_id)) == 2

    await _wait_for(returned)
    assert not _controls(cluster.store, game_id)[1].seat_control.bot
    assert await _sweep_all(cluster) == 0
    back.cancel()
