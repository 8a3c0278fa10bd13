"""Bots act over Play streams (services/bot/streams.py): one stream per game for all of its
bot seats, with no SubmitCommand, the same logs as the calls made, and a stream cut or a game
replica killed mid-command resumed with the command applied once."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2
from engine import hokm
from engine.core.audit import audit_log
from services.bot.client import GrpcGameApi
from services.bot.policies import SeatView, decide
from services.bot.seats import LogSeats
from services.bot.service import BotService
from services.bot.streams import UNTOLD, GameStream, Turn
from services.platform.auth import Role
from services.platform.limits import CallerLimiter, CallerLimits
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, two_servers
from tests.services.game.test_matches import TABLES, Table
from tests.services.game.test_play_stream import FIXED_MS, SEED, serving
from tests.support.tokens import signer, token

pytestmark = pytest.mark.timeout(120)


class CountingCalls(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Counts the unary calls a channel makes, by method (:attr:`streams` its Play
    streams: a channel files an interceptor under one kind of call only)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.streams = _CountingStreams(self.calls)

    async def intercept_unary_unary(self, continuation: Callable[..., Any],
                                    details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        _count(self.calls, details)
        return await continuation(details, request)


class _CountingStreams(grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    def __init__(self, calls: Counter[str]) -> None:
        self.calls = calls

    async def intercept_stream_stream(self, continuation: Callable[..., Any],
                                      details: grpc.aio.ClientCallDetails,
                                      requests: Any) -> Any:
        _count(self.calls, details)
        return await continuation(details, requests)


def _count(calls: Counter[str], details: grpc.aio.ClientCallDetails) -> None:
    method = details.method
    name = method.decode() if isinstance(method, bytes) else str(method)
    calls[name.rsplit("/", 1)[-1]] += 1


def _bots(count: int) -> list[common_pb2.Player]:
    return [common_pb2.Player(player_id=f"bot:basic:{seat}", display_name=f"Bot {seat}",
                              is_bot=True) for seat in range(count)]


async def _create(client: GameClient, table: Table, game_id: str) -> None:
    """A bot-only match of ``table`` with the fixed server seed (an admin may choose it)."""
    request = game_pb2.CreateGameRequest(game_type=table.game.GAME_TYPE, game_id=game_id,
                                         players=_bots(table.seats), server_seed=SEED)
    getattr(request, table.game.NAME).CopyFrom(table.rules)
    await client.create(request)


async def _bots_by_calls(server: Embedded, game_id: str) -> None:
    """The bot service's moves as the unary path made them: the public GetView, the seat's
    GetView, the basic policy, SubmitCommand with the bot's command id."""
    bots = server.client("bots", Role.SERVICE)
    while True:
        public = SeatView.of(await bots.view(game_id))
        if public.is_over or public.turn is None:
            return
        own = SeatView.of(await bots.view(game_id, public.turn))
        command = decide(own, "basic", game_id)
        await bots.submit(game_id, f"bot:{game_id}:{own.seq}", command,
                          expected_seq=own.seq, seat=public.turn, game=own.game)


@contextlib.asynccontextmanager
async def _bot_replica(address: str) -> AsyncIterator[tuple[BotService, CountingCalls]]:
    """A bot service over its own channel to ``address``, counting the calls it makes."""
    counting = CountingCalls()
    interceptors = [counting, counting.streams]
    async with grpc.aio.insecure_channel(address, interceptors=interceptors) as channel:
        bots = BotService(GrpcGameApi(channel, signer("bot")), LogSeats())
        try:
            yield bots, counting
        finally:
            await bots.stop()


@pytest.mark.parametrize("name", list(TABLES))
async def test_bots_over_streams_log_the_same_bytes_as_over_calls_and_submit_nothing(
    name: str,
) -> None:
    table = TABLES[name]
    async with serving(clock=lambda: FIXED_MS) as by_calls:
        await _create(by_calls.client("operator", Role.ADMIN), table, "bots")
        await _bots_by_calls(by_calls, "bots")
        unary_log = [entry.SerializeToString()
                     for entry in await by_calls.client("operator", Role.ADMIN).export("bots")]
    async with serving(clock=lambda: FIXED_MS) as by_streams, \
            _bot_replica(by_streams.address) as (bots, counting):
        await _create(by_streams.client("operator", Role.ADMIN), table, "bots")
        bots.kick("bots")
        await asyncio.wait_for(bots.idle(), 90)  # the worker ends with the match
        play_log = [entry.SerializeToString()
                    for entry in await by_streams.client("operator", Role.ADMIN).export("bots")]
    assert play_log == unary_log
    assert bots.moves > 0
    # GetView to learn the match has bots and the first turn, one stream, and no call
    # per move.
    assert counting.calls["SubmitCommand"] == 0
    assert counting.calls["GetView"] < bots.moves / 4
    assert counting.calls["Play"] == 1


async def _told(stream: GameStream, after_seq: int) -> Turn:
    """The next turn the stream tells after ``after_seq`` (past its reopenings)."""
    while True:
        turn = await asyncio.wait_for(stream.next_turn(after_seq), 10)
        assert turn is not None, "the stream ended"
        if turn is not UNTOLD:
            assert isinstance(turn, Turn)
            return turn


@pytest.mark.parametrize("applied_before_cut", [True, False])
async def test_a_bot_stream_cut_mid_command_resends_it_and_it_is_applied_once(
    applied_before_cut: bool,
) -> None:
    async with serving(clock=lambda: FIXED_MS) as server, \
            grpc.aio.insecure_channel(server.address) as channel:
        admin = server.client("operator", Role.ADMIN)
        await _create(admin, TABLES["hokm-4"], "cut")
        api = GrpcGameApi(channel, signer("bot"))
        public = SeatView.of(await server.client("bots", Role.SERVICE).view("cut"))
        # From the event before the head: the head comes with its turn.
        async with api.streams.use("cut", after_seq=public.seq - 1,
                                   seat_control=public.seat_control) as stream:
            turn = await _told(stream, 0)
            assert turn is not None and turn.seq == public.seq
            command = decide(turn.view, "basic", "cut")
            command_id = f"bot:cut:{turn.seq}"
            if applied_before_cut:
                # The command went through before the cut (here by a call of the same
                # caller and id): the resend on the new stream gets the first outcome.
                reply = await server.client("bots", Role.SERVICE).submit(
                    "cut", command_id, command, expected_seq=turn.seq, seat=turn.seat)
                # Its events reached the stream: it reopens after them all, and the
                # resend's outcome must not wait for events that will not come again.
                while stream.seq < reply.seq:
                    await asyncio.sleep(0.01)
            submitted = asyncio.create_task(api.submit(
                "cut", turn.seat, command, command_id=command_id, expected_seq=turn.seq,
                automatic=False))
            await asyncio.sleep(0)  # sent (queued on the stream) …
            assert stream.opened == 1
            call = stream._call  # … and the connection cut before its outcome came back
            assert call is not None
            call.cancel()
            appended = await asyncio.wait_for(submitted, 10)
            assert stream.opened >= 2  # opened again, the command sent again with its id
            assert appended is not applied_before_cut
            after = await _told(stream, turn.seq)
            assert after is not None and after.seq > turn.seq
        log = [entry.SerializeToString() for entry in await admin.export("cut")]
    # Applied once: the log is, byte for byte, the one the command sent once makes.
    async with serving(clock=lambda: FIXED_MS) as once:
        await _create(once.client("operator", Role.ADMIN), TABLES["hokm-4"], "cut")
        await once.client("bots", Role.SERVICE).submit(
            "cut", command_id, command, expected_seq=turn.seq, seat=turn.seat)
        expected = [entry.SerializeToString()
                    for entry in await once.client("operator", Role.ADMIN).export("cut")]
    assert log == expected


async def test_a_bot_stream_renews_its_token_and_outlives_it() -> None:
    async with serving() as server, grpc.aio.insecure_channel(server.address) as channel:
        await _create(server.client("operator", Role.ADMIN), TABLES["hokm-4"], "renew")
        api = GrpcGameApi(channel, signer("bot"))
        api.streams.token_seconds = 4  # renewed every 2 s, before the 4 s token expires
        public = SeatView.of(await server.client("bots", Role.SERVICE).view("renew"))
        async with api.streams.use("renew", after_seq=public.seq - 1) as stream:
            turn = await _told(stream, 0)
            assert turn is not None
            await asyncio.sleep(5)  # past the first token's expiry
            appended = await api.submit("renew", turn.seat, decide(turn.view, "basic", "renew"),
                                        command_id="after-expiry", expected_seq=turn.seq,
                                        automatic=False)
            assert appended
            assert stream.opened == 1  # the same stream all along: renewed, not reopened


async def test_a_player_stream_may_not_take_the_seat_to_act_views_nor_act_for_another_seat(
) -> None:
    async with serving() as server, grpc.aio.insecure_channel(server.address) as channel:
        await _create(server.client("operator", Role.ADMIN), TABLES["hokm-4"], "strict")
        stub = game_pb2_grpc.GameServiceStub(channel)
        # A player asking for the seat to act's views: PERMISSION_DENIED.
        call = stub.Play(iter([game_pb2.PlayRequest(open=game_pb2.PlayOpen(
            game_id="strict", seat_to_act_views=True))]),
            metadata=(("authorization", f"Bearer {token('bot:basic:0')}"),))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in call:
                pass
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # A service naming a seat and asking for them: INVALID_ARGUMENT.
        call = stub.Play(iter([game_pb2.PlayRequest(open=game_pb2.PlayOpen(
            game_id="strict", seat=0, seat_to_act_views=True))]),
            metadata=(("authorization", f"Bearer {token('bots', Role.SERVICE)}"),))
        with pytest.raises(grpc.aio.AioRpcError) as invalid:
            async for _ in call:
                pass
        assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.timeout(180)
async def test_bots_finish_a_match_when_the_game_replica_their_stream_is_on_is_killed(
    database_url: str, nats_url: str,
) -> None:
    env = {"DAST_DATABASE_URL": database_url, "DAST_NATS_URL": nats_url}
    game_id = f"kill-{uuid.uuid4().hex[:8]}"
    with two_servers(env) as (first, second):
        async with grpc.aio.insecure_channel(second.address) as survivor:
            admin = GameClient(survivor, "operator", Role.ADMIN)
            await admin.create(game_pb2.CreateGameRequest(
                game_type=common_pb2.GAME_TYPE_HOKM, game_id=game_id, players=_bots(4),
                hokm=hokm_pb2.HokmRules(target_score=2)))
            # The bots' channel reaches the first replica, and the second once it is gone.
            both = f"ipv4:{first.address},{second.address}"
            async with _bot_replica(both) as (bots, counting):
                bots.kick(game_id)
                while (await admin.view(game_id)).seq < 20:
                    await asyncio.sleep(0.05)
                first.kill()
                await asyncio.wait_for(bots.idle(), 120)
                stream_openings = counting.calls["Play"]
            log = await admin.export(game_id)
    assert hokm.is_over(hokm.replay(entry.event for entry in log))
    assert audit_log(log).ok
    assert counting.calls["SubmitCommand"] == 0
    assert stream_openings >= 2  # opened again on the surviving replica


async def test_a_bot_refused_for_its_rate_plays_the_turn_again_and_it_is_applied_once(
) -> None:
    # A refusal worth retrying (RESOURCE_EXHAUSTED rate_limited, as UNAVAILABLE when the
    # store is away) appends nothing, so no event tells a next turn: the bot plays the
    # same turn again, with the same command id.
    table = TABLES["hokm-4"]
    # Two calls of a method at once (the bot's two GetViews), then one each 5 s.
    slow = CallerLimiter(CallerLimits(service_calls_per_second=0.2, service_call_burst=2))
    async with serving(clock=lambda: FIXED_MS, limiter=slow) as throttled, \
            _bot_replica(throttled.address) as (bots, _):
        admin = throttled.client("operator", Role.ADMIN)
        await _create(admin, table, "rate")
        created_seq = len(throttled.store.load("rate", 0))  # (GetView is limited too)
        # The bots' SubmitCommand tokens spent: their first command on the stream is
        # refused (unless the bot took 5 s to send it), and the bucket has a token again 5 s
        # later.
        for spent in range(2):
            with pytest.raises(grpc.aio.AioRpcError):
                await throttled.client("bots", Role.SERVICE).submit(
                    "no-such-game", f"spend-{spent}", hokm_pb2.HokmCommand(), seat=0)
        bots.kick("rate")
        while len(throttled.store.load("rate", 0)) == created_seq:
            await asyncio.sleep(0.05)
        await bots.stop()
        refused = sum(sample.value for metric in throttled.service.metrics.commands.collect()
                      for sample in metric.samples
                      if sample.name.endswith("_total")
                      and "resource_exhausted" in sample.labels.values())
        played = [entry.SerializeToString() for entry in await admin.export("rate")]
    assert refused > 0
    # Applied once: the log is, byte for byte, the one the bot's first move makes by a call.
    async with serving(clock=lambda: FIXED_MS) as once:
        await _create(once.client("operator", Role.ADMIN), table, "rate")
        bots_client = once.client("bots", Role.SERVICE)
        seat = SeatView.of(await bots_client.view("rate")).turn
        assert seat is not None
        own = SeatView.of(await bots_client.view("rate", seat))
        await bots_client.submit("rate", f"bot:rate:{own.seq}", decide(own, "basic", "rate"),
                                 expected_seq=own.seq, seat=seat)
        expected = [entry.SerializeToString()
                    for entry in await once.client("operator", Role.ADMIN).export("rate")]
    assert played[:len(expected)] == expected
