"""Every RPC of every service, sent hostile messages, answers with a documented status.

A whole process (every service, the game service with presence; events and tables in
PostgreSQL, where a NUL byte once leaked the SQL error) serves on loopback. Hypothesis sends
every method of every service (read from the proto descriptors, so a new RPC is covered
without touching this file) random messages built from the descriptors: strings
with NUL, control, format and direction-override characters, strings past any limit, raw
and invalid-UTF-8 bytes, unknown enum values, empty oneofs, and raw garbage instead of a
message, with valid, expired, forged and missing tokens (a session of the accounts service
among the valid ones, so that calls about one's own account reach a stored player). Every
reply must be:

- OK or one of the statuses the API documents (never UNKNOWN or INTERNAL);
- free of tracebacks, SQL, library names and the server's file paths, in its message and
  its details; an error carries ``ErrorInfo`` in domain ``dast.dev`` naming an
  ``ErrorReason`` value;

and afterwards no game has an event that an accepted call did not append, and the server
answers normally.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from sqlalchemy import create_engine, text

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
)
from services.compose import StackOptions, running_stack
from services.platform.auth import Role
from services.platform.limits import MACHINE_SPEED
from tests.support.hostile import (
    calls,
    every_service,
    game_ids_in,
    garbage_payloads,
    reply_problem,
    send,
    unframed,
)
from tests.support.tokens import TEST_KEYS, stranger_token
from tests.support.tokens import token as signed_token

pytestmark = pytest.mark.timeout(180)

SERVICES: Final = every_service()
"""Every service of the API (read from the generated modules, so a new one is covered
without touching this file): the process under test serves them all."""
METHODS: Final = [method for service in SERVICES for method in service.methods]
OPEN_METHODS: Final = frozenset({"SignInGuest", "SignInWithIdToken", "Refresh"})
"""The methods a call without a token may reach (they hand out tokens)."""
CHANGING: Final = frozenset({"CreateGame", "SubmitCommand", "StartGame", "Rematch",
                             "QuickMatch", "ControlSeat", "LeaveTable", "JoinTable",
                             "Subscribe", "Play"})
"""The methods that may append to a game (create one, or act in one; a seat handed to a bot
or back is an event too: leaving or joining a playing table, or a seated player's stream)."""
REMOVING: Final = frozenset({"BanPlayer", "ErasePlayer", "DeleteAccount"})
"""The methods that take a player out of every table they sit at (the world's host, when
hypothesis moves them over to the accounts service and then bans or erases them)."""


@dataclass
class World:
    """The process under test and what the test knows about it."""

    address: str
    database_url: str
    loop: asyncio.AbstractEventLoop
    channel: grpc.aio.Channel
    tokens: dict[str, str | None]
    ids: list[str]
    game_id: str
    changed_by_calls: set[str] = field(default_factory=set)
    """Games that accepted calls of the methods that change games created or changed."""

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    def last_seqs(self) -> dict[str, int]:
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as db:
                rows = db.execute(text("SELECT game_id, max(seq) FROM events GROUP BY game_id"))
                return {str(game): int(seq) for game, seq in rows}
        finally:
            engine.dispose()


async def _sign_in(channel: grpc.aio.Channel, device: str) -> lobby_pb2.SignInGuestResponse:
    reply: lobby_pb2.SignInGuestResponse = await lobby_pb2_grpc.LobbyServiceStub(
        channel).SignInGuest(lobby_pb2.SignInGuestRequest(device_id=device, display_name="Host"))
    return reply


@pytest.fixture
def world(pg_url: str) -> Iterator[World]:
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()

    async def start() -> World:
        run = await stack.enter_async_context(running_stack(
            TEST_KEYS, store_url=pg_url, limits=MACHINE_SPEED,
            # the lobby's retired device sign-in on, so that its validation is fuzzed too
            options=StackOptions(bots=False, timers=False, presence=True,
                                 lobby_device_sign_in=True),
        ))
        channel = await stack.enter_async_context(grpc.aio.insecure_channel(run.address))
        host = await _sign_in(channel, "device-hostile-host")
        metadata = (("authorization", f"Bearer {host.token}"),)
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        settings_ = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True)
        table = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(settings=settings_),
                                        metadata=metadata)).table
        started = (await lobby.StartGame(
            lobby_pb2.StartGameRequest(table_id=table.table_id), metadata=metadata)).table
        account = await accounts_pb2_grpc.AccountsServiceStub(channel).SignInGuest(
            accounts_pb2.AccountsServiceSignInGuestRequest(device_id="device-hostile-account",
                                                           display_name="Account"))
        tokens: dict[str, str | None] = {
            "none": None,
            "seated": host.token,
            "account": account.tokens.access_token,
            "stranger": signed_token("g-stranger"),
            "service": signed_token("lobby", Role.SERVICE),
            "admin": signed_token("root", Role.ADMIN),
            "expired": signed_token(host.player_id, ttl_seconds=-60),
            "forged": stranger_token("root", Role.ADMIN),
            "garbage": "not.a.token",
        }
        ids = [started.game_id, table.table_id, table.invite_code, host.player_id,
               started.seats[1].player_id, f"{host.player_id}:1", account.player_id]
        return World(run.address, pg_url, loop, channel, tokens, ids, started.game_id)

    try:
        yield loop.run_until_complete(start())
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()


# ---- calling and judging -------------------------------------------------------------


async def _call(world: World, method: MethodDescriptor, payload: bytes,
                token: str | None) -> tuple[grpc.StatusCode, list[bytes], grpc.RpcError | None]:
    return await send(world.channel, method, payload, token)


def judge(world: World, method: MethodDescriptor, payload: bytes, token_name: str,
          code: grpc.StatusCode, replies: list[bytes], error: grpc.RpcError | None) -> None:
    where = f"{method.name} with token {token_name}, request {payload[:80]!r}"
    problem = reply_problem(code, payload, error)
    assert problem is None, f"{where}: {problem}"
    # A bidirectional stream may have applied commands before a later message ended it with
    # an error: its requests count whatever its status.
    if method.name in CHANGING and (error is None or method.client_streaming):
        request_class = GetMessageClass(method.input_type)
        if method.client_streaming:  # the requests that parse (the stream ends at the first
            requests = []            # that does not, after those before it were served)
            for raw in unframed(payload):
                try:
                    requests.append(request_class.FromString(raw))
                except DecodeError:
                    break
        else:
            requests = [request_class.FromString(payload)]
        reply_class = GetMessageClass(method.output_type)
        for message in (*requests, *(reply_class.FromString(raw) for raw in replies)):
            world.changed_by_calls |= game_ids_in(message)
    if method.name in REMOVING and error is None:
        # A ban or an erasure stands the player up from their tables: a bot takes the seat
        # of the one the world's host sits at (an event of its match).
        world.changed_by_calls.add(world.game_id)


async def _garbage_everywhere(world: World) -> None:
    """The issue's cases, on every method with every token: NUL in every string field,
    invalid UTF-8 where a string belongs, and bytes that are no message at all."""
    for method in METHODS:
        for payload in garbage_payloads(method):
            for name, token in world.tokens.items():
                code, replies, error = await _call(world, method, payload, token)
                judge(world, method, payload, name, code, replies, error)
                if token is None and method.name not in OPEN_METHODS:
                    assert code == grpc.StatusCode.UNAUTHENTICATED, method.name
                if name == "none" and method.name == "SignInGuest":
                    assert code == grpc.StatusCode.INVALID_ARGUMENT, payload


def test_hostile_requests_get_documented_statuses_and_change_nothing(world: World) -> None:
    before = world.last_seqs()
    world.run(_garbage_everywhere(world))
    token_names = list(world.tokens)
    seen: dict[grpc.StatusCode, int] = {}

    @settings(max_examples=500, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(calls(METHODS, world.ids, token_names))
    def hostile(call: tuple[MethodDescriptor, bytes, str]) -> None:
        method, payload, token_name = call
        code, replies, error = world.run(_call(world, method, payload, world.tokens[token_name]))
        judge(world, method, payload, token_name, code, replies, error)
        seen[code] = seen.get(code, 0) + 1

    hostile()
    print("hostile replies by status:", {code.name: count for code, count in seen.items()})
    # The random calls reached past the edge checks too (a real game, a real table).
    assert sum(seen.values()) >= 400
    assert {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED} <= set(seen)
    # Nothing appended to any game but by an accepted call naming it.
    after = world.last_seqs()
    changed = {game for game, seq in after.items() if before.get(game) != seq}
    unexplained = changed - world.changed_by_calls
    assert not unexplained, f"games changed without an accepted call: {unexplained}"
    # The server answers normally afterwards.

    async def still_serving() -> None:
        # (the host may have been banned or erased meanwhile: a service reads their seat)
        service = (("authorization", f"Bearer {world.tokens['service']}"),)
        view = await game_pb2_grpc.GameServiceStub(world.channel).GetView(
            game_pb2.GetViewRequest(game_id=world.game_id, seat=0), metadata=service)
        assert view.seq == after[world.game_id]
        fresh = await _sign_in(world.channel, "device-after-the-storm")
        assert fresh.token
        # (the world's account may have been deleted meanwhile: a new one reads its profile)
        accounts = accounts_pb2_grpc.AccountsServiceStub(world.channel)
        newcomer = await accounts.SignInGuest(accounts_pb2.AccountsServiceSignInGuestRequest(
            device_id="device-account-after-the-storm", display_name="Newcomer"))
        admin = (("authorization", f"Bearer {world.tokens['admin']}"),)
        profile = (await accounts.GetProfile(accounts_pb2.GetProfileRequest(
            player_id=newcomer.player_id), metadata=admin)).profile
        assert (profile.player_id, profile.display_name) == (newcomer.player_id, "Newcomer")

    world.run(still_serving())
