"""Every RPC of every service, sent hostile messages, answers with a documented status.

A whole process (lobby, game service with presence; events and tables in PostgreSQL, where
a NUL byte once leaked the SQL error) serves on loopback. Hypothesis sends every method
of ``GameService`` and ``LobbyService`` (read from the proto descriptors, so a new RPC is
covered without touching this file) random messages built from the descriptors: strings
with NUL, control, format and direction-override characters, strings past any limit, raw
and invalid-UTF-8 bytes, unknown enum values, empty oneofs, and raw garbage instead of a
message, with valid, expired, forged and missing tokens. Every reply must be:

- OK or one of the statuses the API documents (never UNKNOWN or INTERNAL);
- free of tracebacks, SQL, library names and the server's file paths, in its message and
  its details; an error carries ``ErrorInfo`` in domain ``dast``;

and afterwards no game has an event that an accepted call did not append, and the server
answers normally.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc
from services.compose import StackOptions, running_stack
from services.platform.auth import Role, mint_token
from services.platform.limits import MACHINE_SPEED

pytestmark = pytest.mark.timeout(180)

SECRET: Final = "hostile-rpcs-test-secret-0123456789abcdef0123456789"
ROOT: Final = str(Path(__file__).resolve().parents[2])
SERVICES: Final = (
    game_pb2.DESCRIPTOR.services_by_name["GameService"],
    lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"],
)
METHODS: Final = [method for service in SERVICES for method in service.methods]
DOCUMENTED: Final = frozenset({
    grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
})
LEAKS: Final = ("Traceback", 'File "', "sqlalchemy", "psycopg", "SELECT ", "INSERT INTO",
                " WHERE ", "site-packages", ROOT, "Exception", "Error:")
CHANGING: Final = frozenset({"CreateGame", "SubmitCommand", "StartGame", "Rematch",
                             "QuickMatch", "ControlSeat", "LeaveTable", "JoinTable",
                             "Subscribe"})
"""The methods that may append to a game (create one, or act in one; a seat handed to a bot
or back is an event too: leaving or joining a playing table, or a seated player's stream)."""
VALID_TOKENS: Final = ("seated", "stranger", "service", "admin")
"""Tokens that pass authentication (drawn more often, so calls reach the services)."""
STREAM_WAIT_SECONDS: Final = 0.2
"""How long a stream that answered normally is followed before the client cancels it."""
HOSTILE_TEXT: Final = (
    "x\x00", "\x00", "a\nb", "\x1b[2J", "\u202egnp.exe", "zero\u200bwidth", "\ufeff", "\r\n",
    "../../etc/passwd", "' OR 1=1 --", "%s%n", "\U0010ffff", "g" * 65, "x" * 300,
)


def _path(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


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
            SECRET, store_url=pg_url, limits=MACHINE_SPEED,
            options=StackOptions(bots=False, timers=False, presence=True),
        ))
        channel = await stack.enter_async_context(grpc.aio.insecure_channel(run.address))
        host = await _sign_in(channel, "device-hostile-host")
        metadata = (("authorization", f"Bearer {host.token}"),)
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        settings_ = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True)
        table = await lobby.CreateTable(lobby_pb2.CreateTableRequest(settings=settings_),
                                        metadata=metadata)
        started = await lobby.StartGame(
            lobby_pb2.StartGameRequest(table_id=table.table_id), metadata=metadata)
        tokens: dict[str, str | None] = {
            "none": None,
            "seated": host.token,
            "stranger": mint_token(SECRET, "g-stranger"),
            "service": mint_token(SECRET, "lobby", Role.SERVICE),
            "admin": mint_token(SECRET, "root", Role.ADMIN),
            "expired": mint_token(SECRET, host.player_id, ttl_seconds=-60),
            "forged": mint_token("another-secret-0123456789abcdef0123456789", "root",
                                 Role.ADMIN),
            "garbage": "not.a.token",
        }
        ids = [started.game_id, table.table_id, table.invite_code, host.player_id,
               started.seats[1].player_id, f"{host.player_id}:1"]
        return World(run.address, pg_url, loop, channel, tokens, ids, started.game_id)

    try:
        yield loop.run_until_complete(start())
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()


# ---- strategies built from the descriptors ------------------------------------------

_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_INTS: Final = {
    FieldDescriptor.TYPE_INT32: _INT32, FieldDescriptor.TYPE_SINT32: _INT32,
    FieldDescriptor.TYPE_INT64: _INT64, FieldDescriptor.TYPE_SINT64: _INT64,
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1), FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _texts(ids: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(ids), st.sampled_from(HOSTILE_TEXT), st.text(max_size=12),
        st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Mn"]),
                max_size=8),
        st.builds(lambda known, hostile: known + hostile, st.sampled_from(ids),
                  st.sampled_from(HOSTILE_TEXT)),
    )


def _scalar(field: FieldDescriptor, ids: list[str]) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _texts(ids)
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.binary(max_size=40), st.just(b"\xff\xfe\x00" * 500),
                         st.binary(min_size=32, max_size=32))
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_ENUM:
        known = [value.number for value in field.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-3, 40),
                         st.integers(-(2**31), 2**31 - 1))
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.one_of(st.integers(0, 110), st.integers(low, high))
    if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(allow_nan=True)
    raise AssertionError(f"no strategy for {field.full_name}")


def messages(descriptor: Descriptor, ids: list[str], depth: int = 0) -> st.SearchStrategy[Message]:
    """Random messages of ``descriptor``: any subset of its fields (so empty oneofs too)."""
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field_ in descriptor.fields:
        if field_.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 3 or field_.message_type.GetOptions().map_entry:
                continue
            # The depth bound ends recursive schemas (a message holding its own type).
            single: st.SearchStrategy[Any] = messages(field_.message_type, ids, depth + 1)
        else:
            single = _scalar(field_, ids)
        optional[field_.name] = st.lists(single, max_size=3) if field_.is_repeated else single
    cls = GetMessageClass(descriptor)

    def build(values: dict[str, Any]) -> Message:
        message = cls()
        for name, value in values.items():
            field_ = descriptor.fields_by_name[name]
            if field_.type == FieldDescriptor.TYPE_MESSAGE:
                if field_.is_repeated:
                    for item in value:
                        getattr(message, name).add().CopyFrom(item)
                else:
                    getattr(message, name).CopyFrom(value)
            elif field_.is_repeated:
                getattr(message, name).extend(value)
            else:
                setattr(message, name, value)
        return message

    return st.fixed_dictionaries({}, optional=optional).map(build)


@st.composite
def calls(
    draw: st.DrawFn, ids: list[str], token_names: list[str]
) -> tuple[MethodDescriptor, bytes, str]:
    """A method, the bytes of its request (a random message, or raw garbage), a token."""
    method = draw(st.sampled_from(METHODS))
    if draw(st.integers(0, 9)) == 0:
        payload = draw(st.one_of(st.binary(max_size=64), st.just(b"\xff" * 9)))
    else:
        payload = draw(messages(method.input_type, ids)).SerializeToString()
    valid = [name for name in token_names if name in VALID_TOKENS]
    token = draw(st.one_of(st.sampled_from(valid), st.sampled_from(valid),
                           st.sampled_from(token_names)))
    return method, payload, token


# ---- calling and judging -------------------------------------------------------------


async def _call(world: World, method: MethodDescriptor, payload: bytes,
                token: str | None) -> tuple[grpc.StatusCode, list[bytes], grpc.RpcError | None]:
    """Send raw ``payload`` to ``method``; its status and the raw replies it streamed."""
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    replies: list[bytes] = []
    try:
        if method.server_streaming:
            call = world.channel.unary_stream(_path(method))(payload, metadata=metadata)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STREAM_WAIT_SECONDS):
                    async for reply in call:
                        replies.append(reply)
            call.cancel()
        else:
            replies.append(await world.channel.unary_unary(_path(method))(
                payload, metadata=metadata, timeout=10))
    except grpc.aio.AioRpcError as error:
        return error.code(), replies, error
    return grpc.StatusCode.OK, replies, None


def judge(world: World, method: MethodDescriptor, payload: bytes, token_name: str,
          code: grpc.StatusCode, replies: list[bytes], error: grpc.RpcError | None) -> None:
    where = f"{method.name} with token {token_name}, request {payload[:80]!r}"
    assert code in DOCUMENTED, f"{where}: {code} {error}"
    if error is None:
        if method.name in CHANGING:
            request = GetMessageClass(method.input_type).FromString(payload)
            reply_class = GetMessageClass(method.output_type)
            for message in (request, *(reply_class.FromString(raw) for raw in replies)):
                world.changed_by_calls |= game_ids_in(message)
        return
    message = error.details() or ""
    status = rpc_status.from_call(error)
    details_text = "" if status is None else str(status)
    for leak in LEAKS:
        assert leak not in message and leak not in details_text, f"{where}: leaks {leak!r}"
    if status is None:
        # Only gRPC's own refusal of an oversized request comes without dast details.
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and len(payload) > 60_000, where
        return
    info = error_details_pb2.ErrorInfo()
    assert any(detail.Unpack(info) for detail in status.details), f"{where}: {status}"
    assert info.domain == "dast" and info.reason, f"{where}: {status}"


def game_ids_in(reply: Message) -> set[str]:
    """Game ids a message names, nested messages included."""
    found: set[str] = set()
    for field_, value in reply.ListFields():
        if field_.name == "game_id" and isinstance(value, str):
            found.add(value)
        elif field_.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if field_.is_repeated else (value,):
                found |= game_ids_in(item)
    return found


async def _garbage_everywhere(world: World) -> None:
    """The issue's cases, on every method with every token: NUL in every string field,
    invalid UTF-8 where a string belongs, and bytes that are no message at all."""
    for method in METHODS:
        nul = GetMessageClass(method.input_type)()
        for field_ in method.input_type.fields:
            if field_.type == FieldDescriptor.TYPE_STRING and not field_.is_repeated:
                setattr(nul, field_.name, "x\x00")
        payloads = [nul.SerializeToString(), b"\x0a\x03\xff\xfe\x00", b"\xff" * 9, b"\x08"]
        for payload in payloads:
            for name, token in world.tokens.items():
                code, replies, error = await _call(world, method, payload, token)
                judge(world, method, payload, name, code, replies, error)
                if token is None and not method.name.startswith("SignIn"):
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
    @given(calls(world.ids, token_names))
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
        seated = (("authorization", f"Bearer {world.tokens['seated']}"),)
        view = await game_pb2_grpc.GameServiceStub(world.channel).GetView(
            game_pb2.GetViewRequest(game_id=world.game_id), metadata=seated)
        assert view.seq == after[world.game_id]
        fresh = await _sign_in(world.channel, "device-after-the-storm")
        assert fresh.token

    world.run(still_serving())
