"""Identity: signed JWT bearer tokens checked by a gRPC server interceptor.

A token (HS256, secret from ``DAST_JWT_SECRET``) names one player (``sub``) and a role:

- ``player``: acts only for the seat it holds in a match; watches other matches as a
  spectator;
- ``service``: the lobby, bots and timers: creates matches, acts for any seat;
- ``admin``: everything a service may do, plus exporting unfinished logs and choosing the
  server seed of a match (tests, incident replays).

The interceptor rejects calls without a valid token (UNAUTHENTICATED) except the
health and reflection services and the lobby's guest sign-in (which hands out tokens), and
makes the caller's :class:`Identity` available to the handler through
:func:`current_identity`.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import grpc
import jwt

_ALGORITHM: Final = "HS256"
_ISSUER: Final = "dast"
_OPEN_PREFIXES: Final = (
    "/grpc.health.v1.Health/", "/grpc.reflection.", "/dast.v1.LobbyService/SignInGuest",
)


class Role(StrEnum):
    """What a token may do."""

    PLAYER = "player"
    SERVICE = "service"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Identity:
    """The authenticated caller of an RPC."""

    player_id: str
    role: Role

    @property
    def is_privileged(self) -> bool:
        """Service and admin tokens may act for any seat and create matches."""
        return self.role in (Role.SERVICE, Role.ADMIN)


class AuthError(Exception):
    """A token that is missing, malformed, expired or badly signed."""


def mint_token(
    secret: str, player_id: str, role: Role = Role.PLAYER, *, ttl_seconds: int = 24 * 3600
) -> str:
    """A signed bearer token for ``player_id`` acting as ``role``.

    >>> token = mint_token("s" * 32, "p1")
    >>> verify_token("s" * 32, token)
    Identity(player_id='p1', role=<Role.PLAYER: 'player'>)
    """
    now = int(time.time())
    claims = {"sub": player_id, "role": str(role), "iss": _ISSUER, "iat": now,
              "exp": now + ttl_seconds}
    return jwt.encode(claims, secret, algorithm=_ALGORITHM)


def verify_token(secret: str, token: str) -> Identity:
    """The identity a token carries.

    :raises AuthError: if the token is invalid, expired, or names no player or role.
    """
    return _verify(secret, token)[0]


def _verify(secret: str, token: str) -> tuple[Identity, int]:
    """The identity a token carries and when it expires (epoch seconds)."""
    try:
        claims = jwt.decode(
            token, secret, algorithms=[_ALGORITHM], issuer=_ISSUER,
            options={"require": ["sub", "exp", "iss"]},
        )
    except jwt.PyJWTError as exc:
        raise AuthError(f"invalid token: {exc}") from exc
    player_id = claims.get("sub")
    if not isinstance(player_id, str) or not player_id:
        raise AuthError("token names no player")
    try:
        role = Role(claims.get("role", Role.PLAYER))
    except ValueError as exc:
        raise AuthError(f"unknown role {claims.get('role')!r}") from exc
    return Identity(player_id, role), int(claims["exp"])


class TokenCache:
    """Verified tokens until they expire: a client sends the same token with every call,
    and checking an HMAC signature and its claims costs more than the rest of a cheap RPC."""

    def __init__(self, secret: str, max_size: int = 50_000) -> None:
        self._secret = secret
        self._max_size = max_size
        self._verified: dict[str, tuple[Identity, int]] = {}

    def identity(self, token: str) -> Identity:
        """The identity ``token`` carries.

        :raises AuthError: if the token is invalid or expired.
        """
        hit = self._verified.get(token)
        if hit is not None and hit[1] > time.time():
            return hit[0]
        identity, expires = _verify(self._secret, token)
        if len(self._verified) >= self._max_size:
            self._verified.clear()  # rare; a cold cache only costs verifications
        self._verified[token] = (identity, expires)
        return identity


def bearer_of(metadata: Any) -> str | None:
    """The token of an ``authorization: Bearer <token>`` metadata entry, if any."""
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else str(value)
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


_CURRENT: contextvars.ContextVar[Identity | None] = contextvars.ContextVar(
    "dast_identity", default=None
)


def current_identity() -> Identity:
    """The identity of the RPC being served.

    :raises AuthError: outside an authenticated call (a wiring bug).
    """
    identity = _CURRENT.get()
    if identity is None:
        raise AuthError("no authenticated caller")
    return identity


def _denied(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    """``handler`` with its behaviour replaced by an UNAUTHENTICATED abort."""

    async def deny(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def deny_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - makes this an async generator

    if handler.unary_stream is not None:
        return handler._replace(unary_stream=deny_stream)
    return handler._replace(unary_unary=deny)


def _wrap_unary(
    behavior: Callable[[Any, Any], Awaitable[Any]], identity: Identity
) -> Callable[[Any, Any], Awaitable[Any]]:
    async def run(request: Any, context: Any) -> Any:
        token = _CURRENT.set(identity)
        try:
            return await behavior(request, context)
        finally:
            _CURRENT.reset(token)

    return run


def _wrap_stream(
    behavior: Callable[[Any, Any], AsyncIterator[Any]], identity: Identity
) -> Callable[[Any, Any], AsyncIterator[Any]]:
    async def run(request: Any, context: Any) -> AsyncIterator[Any]:
        _CURRENT.set(identity)  # the generator runs in its own context copy
        async for response in behavior(request, context):
            yield response

    return run


_MAX_WRAPPED: Final = 10_000
"""Wrapped handlers an interceptor remembers (one per method and caller identity)."""


class WrappedHandlers:
    """Handlers an interceptor derived from the server's, remembered so that a call does not
    build closures and a new handler tuple every time (keyed by the original handler)."""

    def __init__(self) -> None:
        self._wrapped: dict[tuple[int, object], tuple[grpc.RpcMethodHandler, Any]] = {}

    def get(self, handler: grpc.RpcMethodHandler, key: object) -> Any:
        """The wrapper stored for ``handler`` and ``key``, or None."""
        found = self._wrapped.get((id(handler), key))
        return found[1] if found is not None and found[0] is handler else None

    def put(self, handler: grpc.RpcMethodHandler, key: object, wrapped: Any) -> Any:
        """Remember ``wrapped`` for ``handler`` and ``key``; return it."""
        if len(self._wrapped) >= _MAX_WRAPPED:
            self._wrapped.clear()  # rare (many identities); costs only re-wrapping
        self._wrapped[(id(handler), key)] = (handler, wrapped)
        return wrapped


class TokenCheck:
    """Puts every call's handler behind its bearer token and exposes the caller's identity
    (one stage of :class:`services.platform.server.DastInterceptor`)."""

    def __init__(self, secret: str) -> None:
        self._tokens = TokenCache(secret)
        self._handlers = WrappedHandlers()

    def resolve(
        self, handler: grpc.RpcMethodHandler | None, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        """The handler to run for this call: ``handler`` behind the token check."""
        if handler is None or details.method.startswith(_OPEN_PREFIXES):
            return handler
        token = bearer_of(details.invocation_metadata)
        if token is None:
            return _denied(handler, "missing bearer token in 'authorization' metadata")
        try:
            identity = self._tokens.identity(token)
        except AuthError as exc:
            return _denied(handler, str(exc))
        wrapped = self._handlers.get(handler, identity)
        if wrapped is not None:
            return wrapped
        if handler.unary_unary is not None:
            wrapped = handler._replace(unary_unary=_wrap_unary(handler.unary_unary, identity))
        elif handler.unary_stream is not None:
            wrapped = handler._replace(unary_stream=_wrap_stream(handler.unary_stream, identity))
        else:
            return handler
        return self._handlers.put(handler, identity, wrapped)
