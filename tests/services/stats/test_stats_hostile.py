"""Every RPC of the stats service, sent hostile messages, answers with a documented status
(the rule of tests/services/test_hostile_rpcs.py, over a stats server with real figures),
and the meaning of its fields is checked: page sizes, variants, periods and page tokens."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, settings

from dast.v1 import common_pb2, log_pb2, stats_pb2, stats_pb2_grpc
from services.platform.auth import Role
from services.platform.bus import Published
from services.platform.errors import reason_of
from services.platform.server import add_health_and_reflection, bind, make_server
from services.stats.app import SERVICE_NAME, mount_stats_service
from services.stats.projector import Delivery, Projector
from services.stats.service import decode_token, encode_token, period_key
from services.stats.store import StatsStore
from tests.services.stats.matches import corpus
from tests.support.hostile import calls, garbage_payloads, reply_problem, send
from tests.support.tokens import TEST_KEYS, token

pytestmark = pytest.mark.timeout(120)
METHODS: Final = list(stats_pb2.DESCRIPTOR.services_by_name["StatsService"].methods)
T = TypeVar("T")


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    channel: grpc.aio.Channel
    tokens: dict[str, str | None]
    ids: list[str]

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    store = StatsStore.open(None)
    projector = Projector(store)
    matches = corpus(1)
    projector.project([Delivery(Published(m.game.NAME, m.game_id, log_pb2.LogEntry(event=e)))
                       for m in matches for e in m.events])
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()

    async def start() -> World:
        server = make_server(TEST_KEYS.ring)
        mount_stats_service(server, store)
        await add_health_and_reflection(server, [str(SERVICE_NAME)])
        port = bind(server, "127.0.0.1:0")
        await server.start()
        stack.push_async_callback(server.stop, None)
        channel = await stack.enter_async_context(
            grpc.aio.insecure_channel(f"127.0.0.1:{port}"))
        tokens: dict[str, str | None] = {
            "none": None, "stranger": token("g-stranger"),
            "service": token("lobby", Role.SERVICE),
            "admin": token("root", Role.ADMIN),
            "expired": token("ana", ttl_seconds=-60),
            "garbage": "not.a.token",
        }
        return World(loop, channel, tokens, ["ana", "bot:random", "babak", "4p", "2p"])

    try:
        yield loop.run_until_complete(start())
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()
        store.close()


def test_hostile_requests_get_documented_statuses(world: World) -> None:
    for method in METHODS:
        for payload in garbage_payloads(method):
            for bearer_token in world.tokens.values():
                code, _, error = world.run(send(world.channel, method, payload, bearer_token))
                assert reply_problem(code, payload, error) is None, (method.name, payload)
    seen: dict[grpc.StatusCode, int] = {}

    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(calls(METHODS, world.ids, list(world.tokens)))
    def hostile(call: tuple[MethodDescriptor, bytes, str]) -> None:
        method, payload, name = call
        code, _, error = world.run(
            send(world.channel, method, payload, world.tokens[name]))
        assert reply_problem(code, payload, error) is None, (method.name, name, payload)
        seen[code] = seen.get(code, 0) + 1

    hostile()
    assert grpc.StatusCode.INVALID_ARGUMENT in seen and grpc.StatusCode.UNAUTHENTICATED in seen


async def _refused(call: Callable[[], Awaitable[object]]) -> tuple[grpc.StatusCode, str | None]:
    try:
        await call()
    except grpc.aio.AioRpcError as error:
        return error.code(), reason_of(error)
    raise AssertionError("the call was accepted")


def test_meaningless_fields_are_refused_by_name(world: World) -> None:
    stub = stats_pb2_grpc.StatsServiceStub(world.channel)
    metadata = (("authorization", f"Bearer {world.tokens['stranger']}"),)
    hokm = common_pb2.GAME_TYPE_HOKM
    board = stats_pb2.GetLeaderboardRequest
    refusals: list[Callable[[], Awaitable[object]]] = [
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4p", page_size=101),
                            metadata=metadata),
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4P!"), metadata=metadata),
        lambda: stub.GetLeaderboard(board(variant="4p"), metadata=metadata),
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4p", page_token="%%%"),
                            metadata=metadata),
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4p", page_token=encode_token(
            "another", [1.0, "x", 1])), metadata=metadata),
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4p",
                                  period=stats_pb2.LEADERBOARD_PERIOD_WEEK,
                                  period_key="2026-W60"), metadata=metadata),
        lambda: stub.GetLeaderboard(board(game_type=hokm, variant="4p",
                                  period=stats_pb2.LEADERBOARD_PERIOD_MONTH,
                                  period_key="2026-13"), metadata=metadata),
        lambda: stub.ListMatchHistory(stats_pb2.ListMatchHistoryRequest(player_id=""),
                              metadata=metadata),
        lambda: stub.ListMatchHistory(stats_pb2.ListMatchHistoryRequest(player_id="ana",
                                                                page_token="e30"),
                              metadata=metadata),
    ]
    for call in refusals:
        code, reason = world.run(_refused(call))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, reason


def test_page_tokens_round_trip_and_refuse_forgeries() -> None:
    token = encode_token("q", [1.5, "ana", 3])
    assert decode_token(token, "q", (float, str, int)) == [1.5, "ana", 3]
    assert decode_token("", "q", (float, str, int)) is None
    from services.platform.errors import ServiceError

    for forged, kinds in [(encode_token("q", [True, "ana", 3]), (float, str, int)),
                          (encode_token("q", ["1", "ana", 3]), (float, str, int)),
                          (encode_token("q", [1.5, "ana"]), (float, str, int)),
                          (encode_token("other", [1.5, "ana", 3]), (float, str, int)),
                          ("A" * 600, (float, str, int))]:
        with pytest.raises(ServiceError):
            decode_token(forged, "q", kinds)
    assert period_key(stats_pb2.LEADERBOARD_PERIOD_WEEK, "2026-W49", 0) == "W2026-49"
    assert period_key(stats_pb2.LEADERBOARD_PERIOD_MONTH, "", 1_767_225_600_000) == "M2026-01"
