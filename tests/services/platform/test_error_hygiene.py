"""What the server's interceptor chain answers before and after a handler runs
(services/platform/server.py, auth.py, errors.py): authentication first, UNAUTHENTICATED with
ErrorInfo, unparsable requests, and unexpected exceptions as INTERNAL with a correlation id
that the log line carries too, never the exception's text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from dast.v1 import game_pb2
from services.platform import errors
from services.platform.auth import Role
from services.platform.errors import error_info_of, reason_of
from services.platform.server import bind, make_server
from tests.support.tokens import TEST_KEYS, stranger_token, token

SECRET_TEXT = "SELECT * FROM events WHERE game_id = 'x' -- /work/main/services/platform"
BOOM = "/dast.v1.Probe/Boom"
STREAM_BOOM = "/dast.v1.Probe/StreamBoom"
ECHO = "/dast.v1.Probe/Echo"


class Recorder:
    """Stands in for the errors module's logger: keeps what it was asked to log."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def error(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


async def _boom(request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext) -> Any:
    raise RuntimeError(SECRET_TEXT)


async def _stream_boom(
    request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext
) -> AsyncIterator[game_pb2.GetViewResponse]:
    yield game_pb2.GetViewResponse(seq=1)
    raise KeyError(SECRET_TEXT)


async def _echo(
    request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext
) -> game_pb2.GetViewResponse:
    return game_pb2.GetViewResponse(seq=len(request.game_id))


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    server = make_server(TEST_KEYS.ring)
    parse, write = game_pb2.GetViewRequest.FromString, game_pb2.GetViewResponse.SerializeToString
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("dast.v1.Probe", {
        "Boom": grpc.unary_unary_rpc_method_handler(_boom, parse, write),
        "StreamBoom": grpc.unary_stream_rpc_method_handler(_stream_boom, parse, write),
        "Echo": grpc.unary_unary_rpc_method_handler(_echo, parse, write),
    }),))
    port = bind(server, "127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as opened:
        yield opened
    await server.stop(None)


def _auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def _failure(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


@pytest.mark.parametrize(("metadata", "reason"), [
    ((), "unauthenticated"),
    (_auth(token("alice", ttl_seconds=-5)), "token_expired"),
    (_auth(stranger_token("alice")), "token_invalid"),
    (_auth("not-a-token"), "token_invalid"),
])
async def test_unauthenticated_replies_carry_error_info(
    channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...], reason: str
) -> None:
    echo = channel.unary_unary(ECHO, game_pb2.GetViewRequest.SerializeToString,
                               game_pb2.GetViewResponse.FromString)
    error = await _failure(echo(game_pb2.GetViewRequest(game_id="g"), metadata=metadata))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    info = error_info_of(error)
    assert info is not None and info.domain == "dast.dev"
    assert info.reason == f"ERROR_REASON_{reason.upper()}"


async def test_authentication_comes_before_parsing(channel: grpc.aio.Channel) -> None:
    raw = channel.unary_unary(ECHO)
    garbage = b"\xff\xff\xff"
    anonymous = await _failure(raw(garbage))
    assert anonymous.code() == grpc.StatusCode.UNAUTHENTICATED
    signed_in = await _failure(raw(garbage, metadata=_auth(token("alice"))))
    assert signed_in.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason_of(signed_in) == "malformed_request"


async def test_a_bad_field_is_refused_before_the_handler(channel: grpc.aio.Channel) -> None:
    echo = channel.unary_unary(ECHO, game_pb2.GetViewRequest.SerializeToString,
                               game_pb2.GetViewResponse.FromString)
    error = await _failure(echo(game_pb2.GetViewRequest(game_id="x\x00"),
                                metadata=_auth(token("alice"))))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info_of(error)
    assert info is not None and info.reason == "ERROR_REASON_INVALID_REQUEST"
    assert dict(info.metadata) == {"field": "game_id"}


@pytest.mark.parametrize("method", [BOOM, STREAM_BOOM])
async def test_an_unexpected_exception_is_internal_with_a_reference_found_in_the_log(
    channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    log = Recorder()
    monkeypatch.setattr(errors, "_log", log)
    metadata = _auth(token("svc", Role.SERVICE))
    request = game_pb2.GetViewRequest(game_id="g").SerializeToString()
    if method == BOOM:
        error = await _failure(channel.unary_unary(method)(request, metadata=metadata))
    else:
        call = channel.unary_stream(method)(request, metadata=metadata)
        error = await _failure(_drain(call))
    assert error.code() == grpc.StatusCode.INTERNAL
    info = error_info_of(error)
    assert info is not None and info.reason == "ERROR_REASON_INTERNAL"
    ref = info.metadata["ref"]
    assert error.details() == f"internal error (ref {ref})"
    assert "SELECT" not in str(error.debug_error_string()) and "/work" not in error.details()
    [(event, fields)] = log.lines
    assert event == "internal_error" and fields["ref"] == ref and fields["method"] == method
    assert SECRET_TEXT in repr(fields["exc_info"])  # the operator sees what happened


async def _drain(call: Any) -> None:
    async for _ in call:
        pass
