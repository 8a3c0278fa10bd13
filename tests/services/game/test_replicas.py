"""Two game-service processes sharing PostgreSQL and NATS (docs/architecture.md "Scale-out").

Any replica takes any command (the store arbitrates races), and live streams fan out
through NATS: a stream on one replica sees the events the other appended.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.audit import audit_log
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from services.platform.errors import reason_of
from tests.services.game.helpers import (
    GameClient,
    ServerProcess,
    next_move,
    players,
    stream_into,
    two_servers,
)
from tests.services.game.test_matches import TABLES
from tests.services.game.test_play_stream import play_seats


@dataclass
class Replicas:
    a: ServerProcess
    b: ServerProcess


@pytest.fixture(scope="module")
def replicas(database_url: str, nats_url: str) -> Iterator[Replicas]:
    env = {"DAST_DATABASE_URL": database_url, "DAST_NATS_URL": nats_url}
    with two_servers(env) as (a, b):
        yield Replicas(a, b)


@dataclass
class Channels:
    a: grpc.aio.Channel
    b: grpc.aio.Channel


@pytest.fixture
async def channels(replicas: Replicas) -> AsyncIterator[Channels]:
    a = grpc.aio.insecure_channel(replicas.a.address)
    b = grpc.aio.insecure_channel(replicas.b.address)
    yield Channels(a, b)
    await a.close()
    await b.close()


async def create(channel: grpc.aio.Channel, seats: int = 4, target: int = 1) -> str:
    lobby = GameClient(channel, "lobby", Role.SERVICE)
    reply = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=target),
        players=players(seats),
    ))
    return reply.game_id


async def test_commands_alternate_between_replicas_and_streams_see_both(
    channels: Channels,
) -> None:
    game_id = await create(channels.a)
    on_a = [GameClient(channels.a, f"p{seat}") for seat in range(4)]
    on_b = [GameClient(channels.b, f"p{seat}") for seat in range(4)]
    # Streams on replica A (seats) and B (a spectator) see every command of both replicas.
    streams: dict[int | None, list[log_pb2.Event]] = {seat: [] for seat in range(4)}
    streams[None] = []
    tasks = [asyncio.create_task(stream_into(on_a[s], game_id, 0, streams[s])) for s in range(4)]
    tasks.append(asyncio.create_task(
        stream_into(GameClient(channels.b, "watcher"), game_id, 0, streams[None])))
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    count = 0
    while True:
        clients = on_a if count % 2 == 0 else on_b
        move = await next_move(clients, game_id, rngs)
        if move is None:
            break
        seat, body, seq = move
        reply = await clients[seat].submit(game_id, f"cmd-{count}", body, expected_seq=seq)
        assert not reply.duplicate and reply.seq > seq
        count += 1
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=20)
    entries = await on_b[0].export(game_id)
    assert hokm.is_over(hokm.replay(e.event for e in entries))
    for viewer, events in streams.items():
        assert events == [hokm.redact(e.event, viewer) for e in entries]


async def test_conflicting_concurrent_commands_accept_exactly_one(channels: Channels) -> None:
    game_id = await create(channels.a)
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    on_a = [GameClient(channels.a, f"p{seat}") for seat in range(4)]
    on_b = [GameClient(channels.b, f"p{seat}") for seat in range(4)]
    admin = GameClient(channels.a, "root", Role.ADMIN)
    for attempt in range(8):
        move = await next_move(on_a, game_id, rngs)
        assert move is not None
        seat, body, seq = move
        pinned = attempt % 2 == 0  # half with expected_seq, half without
        before = len(await admin.export(game_id))
        results = await asyncio.gather(
            on_a[seat].submit(game_id, f"a-{attempt}", body,
                              expected_seq=seq if pinned else None),
            on_b[seat].submit(game_id, f"b-{attempt}", body,
                              expected_seq=seq if pinned else None),
            return_exceptions=True,
        )
        accepted = [r for r in results if isinstance(r, game_pb2.SubmitCommandResponse)]
        refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
        assert len(accepted) == 1 and len(refused) == 1, results
        # The loser either lost the race on (game_id, seq) or, re-decided on the new state,
        # broke a rule (the seat is no longer to act, or no longer holds the card).
        assert refused[0].code() in (grpc.StatusCode.ABORTED,
                                     grpc.StatusCode.FAILED_PRECONDITION), refused[0]
        if pinned:
            assert refused[0].code() == grpc.StatusCode.ABORTED
            assert reason_of(refused[0]) in ("stale_expected_seq", "concurrent_command")
        after = await admin.export(game_id)
        assert len(after) == before + len(accepted[0].events)


async def test_retried_command_id_on_the_other_replica_appends_nothing(
    channels: Channels,
) -> None:
    game_id = await create(channels.a)
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    on_a = [GameClient(channels.a, f"p{seat}") for seat in range(4)]
    on_b = [GameClient(channels.b, f"p{seat}") for seat in range(4)]
    move = await next_move(on_a, game_id, rngs)
    assert move is not None
    seat, body, _ = move
    first = await on_a[seat].submit(game_id, "retry-me", body)
    again = await on_b[seat].submit(game_id, "retry-me", body)
    assert again.duplicate and list(again.events) == list(first.events)
    assert again.seq == first.seq
    view = await on_b[seat].view(game_id)
    assert view.seq == first.seq


async def test_a_match_over_play_streams_on_both_replicas(channels: Channels) -> None:
    """Play streams (services/game/play.py) whose events reach them through NATS whichever
    replica appended them: none missed or repeated, each command's outcome after its
    events (:func:`play_seats` checks both), each seat's stream its redaction of the log."""
    table = TABLES["hokm-4"]
    game_id = f"play-{uuid.uuid4().hex[:12]}"
    request = game_pb2.CreateGameRequest(game_type=table.game.GAME_TYPE, game_id=game_id,
                                         players=players(table.seats))
    getattr(request, table.game.NAME).CopyFrom(table.rules)
    await GameClient(channels.a, "lobby", Role.SERVICE).create(request)
    # Seats 0 and 2 play on one replica, 1 and 3 on the other.
    seen = await play_seats([channels.a, channels.b] * 2, table, game_id)
    entries = await GameClient(channels.b, "operator", Role.ADMIN).export(game_id)
    assert audit_log(entries).ok
    assert table.game.is_over(table.game.replay(entry.event for entry in entries))
    for seat, received in seen.items():
        assert received == [(table.game.redact(entry.event, seat).SerializeToString(),
                             entry.hash) for entry in entries]
