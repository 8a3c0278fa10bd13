"""The gRPC server every dast process runs: options, interceptors, health and reflection.

Keepalive options let mobile clients keep idle connections alive with pings (at most
one every 10 s, with or without calls in flight) instead of being cut off with
``GOAWAY too_many_pings``; pings more often than that are tolerated too (no strike limit),
so the services' own channels ping every 5 s to find a frozen replica quickly
(:mod:`services.platform.channels`). Requests larger than ``max_message_bytes`` are refused with
RESOURCE_EXHAUSTED before any handler runs.

Every call then passes the stages of :class:`DastInterceptor`, in this order:

1. **authentication** (:class:`~services.platform.auth.TokenCheck`): no valid token,
   UNAUTHENTICATED, and nothing else is looked at;
2. **limits** (:class:`~services.platform.limits.CallerLimiter`): over the caller's
   limits, its address's share or the process's budget of streams and calls in flight,
   RESOURCE_EXHAUSTED with RetryInfo;
3. **the request guard** (:class:`RequestGuard`): bytes that do not parse, or a field no
   service may receive (:func:`~services.platform.validation.request_problem`),
   INVALID_ARGUMENT; and any exception escaping the handler becomes INTERNAL with a
   correlation id (:func:`~services.platform.errors.abort_with`), never its text. A
   stream's handler may send a response it serialised itself (``bytes``, made once for
   every stream that sees it alike: :func:`passing_encoded`).

With a revocation list (:mod:`services.platform.revocations`), authentication refuses the
tokens of ended sessions (UNAUTHENTICATED ``session_revoked``); with a ban list
(:mod:`services.platform.bans`), the tokens of banned players (PERMISSION_DENIED
``player_banned``). Every server stream of a session or a player (bidirectional ones too)
is registered in :class:`~services.platform.revocations.SessionStreams` while it is open, so
that it ends with that status as soon as its session is revoked or its player banned.

A bidirectional stream (``GameService.Play``) passes the same stages once, when it opens;
each message it carries is then checked by the request guard as a unary request is (one that
does not parse, or carries a bad field, ends the stream with INVALID_ARGUMENT), and its
handler gets a :class:`~services.platform.stream_caller.StreamCaller`: the opening token's
expiry, renewal by a fresh token, and the per-caller limits of the commands it carries.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.platform.auth import (
    AuthError,
    Identity,
    Role,
    TokenCheck,
    TokenKeyRing,
    WrappedHandlers,
    bearer_of,
    denied,
    with_identity,
)
from services.platform.bans import Ban, Bans
from services.platform.errors import Reason, ServiceError, abort_with
from services.platform.limits import CallerLimiter, CallerLimits
from services.platform.reflection import enable_server_reflection
from services.platform.revocations import Revocations, SessionStreams
from services.platform.stream_caller import StreamCaller, serving
from services.platform.validation import request_problem

KEEPALIVE_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.keepalive_time_ms", 60_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.max_ping_strikes", 0),
)
PENDING_CALL_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.server.max_pending_requests", 10_000),
    ("grpc.server.max_pending_requests_hard_limit", 20_000),
)
"""How many calls may wait for the event loop to take them up. gRPC's defaults (1,000, and
3,000 beyond which every new call is refused) cancel calls whenever the loop falls a second
or two behind a burst of opens (thousands of players reconnecting after a restart): each
cancelled open then comes back as a retry, so the queue is cheaper than the refusals."""
_DAST_METHODS: Final = "/dast."
"""Prefix of the dast API's methods (the open ones among them are rate limited per address)."""


def server_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """Channel options of a dast server."""
    return [
        *KEEPALIVE_OPTIONS,
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", 16 * 1024 * 1024),
        ("grpc.so_reuseport", 0),
        *PENDING_CALL_OPTIONS,
    ]


class _Malformed:
    """What a request that failed to parse deserializes to (instead of an exception)."""


_MALFORMED: Final = _Malformed()
_PASSING: Final = (grpc.aio.AbortError, asyncio.CancelledError)
"""Exceptions that end a call on purpose: an abort already carrying its status, a cancel."""


async def _refuse_request(context: grpc.aio.ServicerContext, request: Any, method: str) -> None:
    """Abort with INVALID_ARGUMENT if ``request`` did not parse or carries a bad field."""
    if request is _MALFORMED:
        await abort_with(context, ServiceError(
            grpc.StatusCode.INVALID_ARGUMENT, Reason.MALFORMED_REQUEST,
            f"{method}: request does not parse",
        ))
    problem = request_problem(request)
    if problem is not None:
        await abort_with(context, problem)


class RequestGuard:
    """Answers requests that do not parse or carry a field no service may receive with
    INVALID_ARGUMENT (not UNKNOWN), and any exception escaping a handler with INTERNAL and
    a correlation id (stage 3 of :class:`DastInterceptor`)."""

    def __init__(self) -> None:
        self._handlers = WrappedHandlers()

    def resolve(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        """``handler`` behind the guard (built once per handler)."""
        wrapped = self._handlers.get(handler, method)
        if wrapped is None:
            wrapped = self._handlers.put(handler, method, _guarded(handler, method))
        return wrapped


def passing_encoded(serialize: Callable[[Any], bytes] | None) -> Callable[[Any], bytes] | None:
    """``serialize``, except that a response already serialised (``bytes``) goes out as it
    is: a stream handler may send bytes it encoded once for many streams (every spectator
    of a match gets the same bytes of an event). Clients see the method's message type."""
    if serialize is None:
        return None
    encode = serialize

    def serialized(response: Any) -> bytes:
        return response if type(response) is bytes else encode(response)

    return serialized


def _guarded(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    parse = handler.request_deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data) if parse is not None else data
        except DecodeError:
            return _MALFORMED

    if handler.unary_unary is not None:
        behavior = handler.unary_unary

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                await _refuse_request(context, request, method)
                return await behavior(request, context)
            except _PASSING:
                raise
            except Exception as exc:
                await abort_with(context, exc, method=method)

        return handler._replace(request_deserializer=deserialize, unary_unary=unary)
    stream_behavior = handler.unary_stream or handler.stream_stream
    if stream_behavior is not None:
        bidirectional = handler.stream_stream is not None

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                if bidirectional:  # the request is the stream of requests: each is checked
                    request = _checked(request, method)
                else:
                    await _refuse_request(context, request, method)
                async for response in stream_behavior(request, context):
                    yield response
            except _PASSING:
                raise
            except Exception as exc:
                await abort_with(context, exc, method=method)

        return _streaming(handler._replace(
            request_deserializer=deserialize,
            response_serializer=passing_encoded(handler.response_serializer),
        ), stream)
    return handler  # client streaming: the dast API has none


async def _checked(requests: AsyncIterator[Any], method: str) -> AsyncIterator[Any]:
    """A bidirectional stream's requests, each checked as a unary call's request is: one
    that does not parse or carries a bad field raises its INVALID_ARGUMENT, which ends the
    stream (a client's bug, not a refusal a handler answers and goes on)."""
    async for request in requests:
        if request is _MALFORMED:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.MALFORMED_REQUEST,
                               f"{method}: a message does not parse")
        problem = request_problem(request)
        if problem is not None:
            raise problem
        yield request


def _address(context: grpc.aio.ServicerContext, limiter: CallerLimiter) -> str:
    """The client address of the call (:class:`~services.platform.limits.ClientAddress`)."""
    return limiter.addresses.of(context.peer(), context.invocation_metadata)


def _limited(
    handler: grpc.RpcMethodHandler, method: str, identity: Identity, limiter: CallerLimiter
) -> grpc.RpcMethodHandler:
    """``handler`` admitting calls of ``identity`` within ``limiter``'s limits (stage 2):
    its call rate, and for players the process's and their address's budgets of calls in
    flight (a stream counts as one until it settles: its first response, or caught up)
    and of streams."""
    if handler.unary_unary is not None:
        behavior = handler.unary_unary
        if identity.is_backend:

            async def privileged(request: Any, context: grpc.aio.ServicerContext) -> Any:
                try:
                    limiter.admit_call(identity, method)
                except ServiceError as refused:
                    await abort_with(context, refused)
                return await behavior(request, context)

            return handler._replace(unary_unary=privileged)

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            address = _address(context, limiter)
            try:
                limiter.admit_call(identity, method)
                limiter.enter_call(address)
            except ServiceError as refused:
                await abort_with(context, refused)
            try:
                return await behavior(request, context)
            finally:
                limiter.leave_call(address)

        return handler._replace(unary_unary=unary)
    stream_behavior = handler.unary_stream or handler.stream_stream
    if stream_behavior is not None:
        # A bidirectional stream's request is its stream of requests: the same wrapper.

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            ticket = None
            try:
                limiter.admit_call(identity, method)
                if not identity.is_backend:
                    ticket = limiter.open_stream(identity, _address(context, limiter))
            except ServiceError as refused:
                await abort_with(context, refused)
            if ticket is None:
                async for response in stream_behavior(request, context):
                    yield response
                return
            try:
                ticket.activate()  # the service may count it as a spectator's, or settle it
                async for response in stream_behavior(request, context):
                    ticket.settle()  # open: no longer a call in flight
                    yield response
            finally:
                ticket.close()

        return _streaming(handler, stream)
    return handler


def _streaming(handler: grpc.RpcMethodHandler, behavior: Any) -> grpc.RpcMethodHandler:
    """``handler`` with ``behavior`` in place of its server or bidirectional stream."""
    if handler.unary_stream is not None:
        return handler._replace(unary_stream=behavior)
    return handler._replace(stream_stream=behavior)


def _limited_open(
    handler: grpc.RpcMethodHandler, limiter: CallerLimiter
) -> grpc.RpcMethodHandler:
    """An open (tokenless) dast method admitting calls per client address and device id,
    within the address's and the process's budgets of calls in flight."""
    behavior = handler.unary_unary
    if behavior is None:
        return handler

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        device = getattr(request, "device_id", None)
        address = _address(context, limiter)
        try:
            limiter.admit_open_call(address, device if isinstance(device, str) else None)
            limiter.enter_call(address)
        except ServiceError as refused:
            await abort_with(context, refused)
        try:
            return await behavior(request, context)
        finally:
            limiter.leave_call(address)

    return handler._replace(unary_unary=unary)


def _ended_with(handler: grpc.RpcMethodHandler, keys: tuple[str, ...],
                streams: SessionStreams) -> grpc.RpcMethodHandler:
    """``handler``'s server streams registered in ``streams`` under ``keys`` (the caller's
    session, the player) while open, ending with the status they are ended with (a revoked
    session's, a ban's); bidirectional streams alike."""
    behavior = handler.unary_stream or handler.stream_stream
    if behavior is None:
        return handler

    async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        entry = streams.enter(keys)
        try:
            async for response in behavior(request, context):
                entry.at_yield = True
                yield response
                entry.at_yield = False
                if entry.ended_with is not None:
                    break
        except asyncio.CancelledError:
            if entry.ended_with is None:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            streams.leave(keys, entry)
        if entry.ended_with is not None:
            await context.abort_with_status(entry.ended_with)

    return _streaming(handler, stream)


def _with_stream_caller(handler: grpc.RpcMethodHandler, identity: Identity, auth: TokenCheck,
                        limiter: CallerLimiter) -> grpc.RpcMethodHandler:
    """``handler``'s bidirectional streams served with their
    :class:`~services.platform.stream_caller.StreamCaller`: the opening token's expiry (read
    per call: the wrapped handler is shared by every token of ``identity``), its renewal by
    ``auth``, the commands they carry admitted by ``limiter``."""
    behavior = handler.stream_stream
    if behavior is None:
        return handler

    async def bidi(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        token = bearer_of(context.invocation_metadata())
        try:  # the interceptor checked this very token an instant ago
            expires = float(auth.check(token)[1]) if token is not None else 0.0
        except AuthError:
            expires = 0.0  # it expired (or was revoked) since: the stream ends at once
        serving(StreamCaller(identity, expires, auth.check, limiter.admit_call))
        async for response in behavior(requests, context):
            yield response

    return handler._replace(stream_stream=bidi)


def player_streams_key(player_id: str) -> str:
    """The key a player's streams are registered under in :class:`SessionStreams` (apart
    from session ids, which never hold a colon)."""
    return f"player:{player_id}"


class DastInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """The server's one interceptor, running the stages of this module's docstring (one
    interceptor, not three: grpc.aio runs every interceptor of a chain as its own coroutine
    on every call). The handler of a method and caller is built once and remembered."""

    def __init__(self, token_keys: TokenKeyRing, limits: CallerLimits | None = None, *,
                 limiter: CallerLimiter | None = None,
                 revocations: Revocations | None = None, bans: Bans | None = None) -> None:
        self._auth = TokenCheck(token_keys, revocations=revocations, bans=bans)
        self.session_streams: SessionStreams | None = None
        self._end_player_streams = bans is not None
        if revocations is not None or bans is not None:
            self.session_streams = SessionStreams()
        if revocations is not None:
            revocations.listen(self.session_streams.revoked)  # type: ignore[union-attr]
        if bans is not None:
            bans.listen(self._banned)
        self.limiter = limiter or CallerLimiter(limits)
        self._guard = RequestGuard()
        self._admitted = WrappedHandlers()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return None
        method: str = details.method
        guarded = self._guard.resolve(handler, method)
        try:
            identity = self._auth.identify(details)
        except AuthError as refused:
            return denied(guarded, refused)
        wrapped = self._admitted.get(guarded, identity)
        if wrapped is not None:
            return wrapped
        if identity is None:
            admitted = (_limited_open(guarded, self.limiter)
                        if method.startswith(_DAST_METHODS) else guarded)
        else:
            served = _with_stream_caller(guarded, identity, self._auth, self.limiter)
            admitted = with_identity(_limited(served, method, identity, self.limiter), identity)
            keys = self._stream_keys(identity)
            if keys and self.session_streams is not None:
                admitted = _ended_with(admitted, keys, self.session_streams)
        return self._admitted.put(guarded, identity, admitted)

    def _stream_keys(self, identity: Identity) -> tuple[str, ...]:
        """What may end a stream of ``identity``'s: its session's revocation, a player's ban."""
        keys: tuple[str, ...] = ()
        if identity.session_id is not None:
            keys += (identity.session_id,)
        if self._end_player_streams and identity.role is Role.PLAYER:
            keys += (player_streams_key(identity.player_id),)
        return keys

    def _banned(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: end the banned player's streams."""
        if ban is not None and self.session_streams is not None:
            self.session_streams.end(player_streams_key(player_id), ban.status())


def make_server(
    token_keys: TokenKeyRing,
    *,
    max_message_bytes: int = 64 * 1024,
    limits: CallerLimits | None = None,
    limiter: CallerLimiter | None = None,
    revocations: Revocations | None = None,
    bans: Bans | None = None,
    extra_interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> grpc.aio.Server:
    """An asyncio gRPC server with authentication (tokens verified with ``token_keys``,
    those of the sessions ``revocations`` lists and the players ``bans`` lists refused),
    limits (``limiter``, or one of ``limits``, or of the defaults of :class:`CallerLimits`)
    and request checks, not yet bound nor started."""
    return grpc.aio.server(
        interceptors=[DastInterceptor(token_keys, limits, limiter=limiter,
                                      revocations=revocations, bans=bans),
                      *extra_interceptors],
        options=server_options(max_message_bytes),
    )


async def add_health_and_reflection(
    server: grpc.aio.Server, service_names: Sequence[str]
) -> health.aio.HealthServicer:
    """Register gRPC health checking (every service SERVING) and server reflection (v1alpha
    and v1, see :mod:`services.platform.reflection`)."""
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", *service_names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    enable_server_reflection(server, [*service_names, health.SERVICE_NAME])
    return health_servicer


def bind(server: grpc.aio.Server, listen: str) -> int:
    """Bind ``listen`` (host:port, port 0 picks a free one) insecurely; return the port.

    :raises RuntimeError: if the address cannot be bound.
    """
    port: int = server.add_insecure_port(listen)
    if port == 0:
        raise RuntimeError(f"cannot listen on {listen}")
    return port
