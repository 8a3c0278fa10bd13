"""The gRPC server every dast process runs: options, interceptors, health and reflection.

Keepalive options let mobile clients keep idle connections alive with pings (at most
one every 10 s, with or without calls in flight) instead of being cut off with
``GOAWAY too_many_pings``. Requests larger than ``max_message_bytes`` are refused with
RESOURCE_EXHAUSTED before any handler runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.platform.auth import TokenCheck, WrappedHandlers

KEEPALIVE_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.max_ping_strikes", 0),
)


def server_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """Channel options of a dast server."""
    return [
        *KEEPALIVE_OPTIONS,
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", 16 * 1024 * 1024),
        ("grpc.so_reuseport", 0),
    ]


class _Malformed:
    """What a request that failed to parse deserializes to (instead of an exception)."""


_MALFORMED: Final = _Malformed()


class MalformedRequestCheck:
    """Answers requests whose bytes do not parse with INVALID_ARGUMENT (not UNKNOWN)
    (one stage of :class:`DastInterceptor`)."""

    def __init__(self) -> None:
        self._handlers = WrappedHandlers()

    def resolve(
        self, handler: grpc.RpcMethodHandler | None, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        """The handler to run for this call: ``handler`` refusing unparsable requests."""
        if handler is None or handler.request_deserializer is None:
            return handler
        wrapped = self._handlers.get(handler, details.method)
        if wrapped is None:
            refusing = _refusing_malformed(handler, details.method)
            wrapped = self._handlers.put(handler, details.method, refusing)
        return wrapped


def _refusing_malformed(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    """``handler`` answering unparsable requests with INVALID_ARGUMENT."""
    parse = handler.request_deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except DecodeError:
            return _MALFORMED

    async def refuse(context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: request does not parse")

    if handler.unary_unary is not None:
        behavior = handler.unary_unary

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if request is _MALFORMED:
                await refuse(context)
            return await behavior(request, context)

        return handler._replace(request_deserializer=deserialize, unary_unary=unary)
    if handler.unary_stream is not None:
        stream_behavior = handler.unary_stream

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if request is _MALFORMED:
                await refuse(context)
            async for response in stream_behavior(request, context):
                yield response

        return handler._replace(request_deserializer=deserialize, unary_stream=stream)
    return handler


class DastInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """The server's one interceptor: :class:`~services.platform.auth.TokenCheck` then
    :class:`MalformedRequestCheck` (one interceptor, not two: grpc.aio runs every interceptor
    of a chain as its own coroutine on every call)."""

    def __init__(self, jwt_secret: str) -> None:
        self._auth = TokenCheck(jwt_secret)
        self._malformed = MalformedRequestCheck()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        return self._malformed.resolve(self._auth.resolve(handler, details), details)


def make_server(
    jwt_secret: str,
    *,
    max_message_bytes: int = 64 * 1024,
    extra_interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> grpc.aio.Server:
    """An asyncio gRPC server with authentication, not yet bound nor started."""
    return grpc.aio.server(
        interceptors=[DastInterceptor(jwt_secret), *extra_interceptors],
        options=server_options(max_message_bytes),
    )


async def add_health_and_reflection(
    server: grpc.aio.Server, service_names: Sequence[str]
) -> health.aio.HealthServicer:
    """Register gRPC health checking (every service SERVING) and server reflection."""
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", *service_names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        [*service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    return health_servicer


def bind(server: grpc.aio.Server, listen: str) -> int:
    """Bind ``listen`` (host:port, port 0 picks a free one) insecurely; return the port.

    :raises RuntimeError: if the address cannot be bound.
    """
    port: int = server.add_insecure_port(listen)
    if port == 0:
        raise RuntimeError(f"cannot listen on {listen}")
    return port
