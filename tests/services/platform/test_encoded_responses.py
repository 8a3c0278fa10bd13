"""A stream handler behind the server's interceptor may send responses it serialised itself
(bytes made once for every stream that sees them alike): clients read the method's message
either way (services.platform.server.passing_encoded)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from dast.v1 import game_pb2
from services.platform.server import bind, make_server, passing_encoded
from tests.support.tokens import TEST_KEYS, token

FIRST = game_pb2.SubscribeResponse(hash=b"\x01" * 32, server_time_ms=5)
SECOND = game_pb2.SubscribeResponse(hash=b"\x02" * 32, server_time_ms=6)


async def _mixed(request: game_pb2.SubscribeRequest, context: grpc.aio.ServicerContext
                 ) -> AsyncIterator[game_pb2.SubscribeResponse | bytes]:
    yield FIRST
    yield SECOND.SerializeToString()


async def test_a_stream_sends_messages_and_bytes_serialised_already_alike() -> None:
    server = make_server(TEST_KEYS.ring)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("dast.v1.Probe", {
        "Mixed": grpc.unary_stream_rpc_method_handler(
            _mixed, game_pb2.SubscribeRequest.FromString,
            game_pb2.SubscribeResponse.SerializeToString),
    }),))
    port = bind(server, "127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_stream(
                "/dast.v1.Probe/Mixed",
                request_serializer=game_pb2.SubscribeRequest.SerializeToString,
                response_deserializer=game_pb2.SubscribeResponse.FromString,
            )(game_pb2.SubscribeRequest(game_id="g1"),
              metadata=(("authorization", f"Bearer {token('alice')}"),))
            received = [response async for response in call]
    finally:
        await server.stop(None)
    assert received == [FIRST, SECOND]


def test_the_serializer_passes_bytes_and_serialises_messages() -> None:
    serialize = passing_encoded(game_pb2.SubscribeResponse.SerializeToString)
    assert serialize is not None
    encoded = SECOND.SerializeToString()
    assert serialize(encoded) is encoded
    assert serialize(FIRST) == FIRST.SerializeToString()
    assert passing_encoded(None) is None
