"""Identity: signed JWT bearer tokens checked by a gRPC server interceptor.

A token is signed with an Ed25519 key (JWS ``EdDSA``) that only the service issuing it holds
(:class:`TokenSigner`, its ``kid`` in the token's header); every server verifies it against
a :class:`TokenKeyRing` of public keys, each trusted for some roles only, so a process can
mint only the tokens its own keys may sign, and one without keys (a game replica) none.
:mod:`services.platform.token_keys` reads the keys from the settings. A token names one
player (``sub``), a role and, when the accounts service issued it, the session it belongs
to (``sid``):

- ``player``: acts only for the seat it holds in a match; watches other matches as a
  spectator;
- ``service``: the lobby, bots and timers: creates matches, acts for any seat;
- ``admin``: everything a service may do, plus exporting unfinished logs and choosing the
  server seed of a match (tests, incident replays).

The interceptor rejects calls without a valid token (UNAUTHENTICATED, with an ``ErrorInfo``
reason ``unauthenticated``, ``token_expired`` or ``token_invalid``) except the health and
reflection services, the lobby's guest sign-in and the accounts service's sign-ins and
``Refresh`` (which hand out tokens), and makes the
caller's :class:`Identity` available to the handler through :func:`current_identity`.
Authentication comes before anything else looks at the request: a call without a valid
token learns nothing else (not even whether its request parses).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

import grpc
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from services.platform.errors import Reason, rich_status

if TYPE_CHECKING:
    from services.platform.bans import Bans
    from services.platform.revocations import Revocations

_ALGORITHM: Final = "EdDSA"
_ISSUER: Final = "dast"
_OPEN_PREFIXES: Final = (
    "/grpc.health.v1.Health/", "/grpc.reflection.", "/dast.v1.LobbyService/SignInGuest",
    "/dast.v1.AccountsService/SignInGuest", "/dast.v1.AccountsService/Refresh",
    "/dast.v1.AccountsService/SignInWithIdToken",
)
_NAME_CHARS: Final = 64
"""The longest display name a token may carry (the accounts service's are at most 32)."""
GUEST_ID_PREFIX: Final = "g-"
"""How every guest's player id starts (the lobby's and the accounts service's
``SignInGuest`` give out ``g-`` and 16 hex digits); an account's id, from the studio's
identity provider, never does. What tells a guest apart (:attr:`Identity.is_guest`), for
example where an operator lets only accounts create tournaments."""


class Role(StrEnum):
    """What a token may do."""

    PLAYER = "player"
    SERVICE = "service"
    ADMIN = "admin"
    REFEREE = "referee"
    """Reads the whole log of any match, running or over, and may do nothing else a player
    may not: what the tournament service's time-limit rule needs (the score of a match still
    running), without the admin role, so its key cannot sign a token that bans, erases or
    chooses a seed."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The authenticated caller of an RPC."""

    player_id: str
    role: Role
    session_id: str | None = None
    """The accounts service's session the token belongs to (its ``sid`` claim); None for
    tokens outside sessions (the lobby's guest sign-in, service tokens)."""
    has_account: bool = False
    """The player has an identity provider's identity linked (the ``acct`` claim the accounts
    service sets): a guest who linked one is a guest no more, whatever its ``g-`` id."""
    display_name: str = ""
    """The player's display name when the token was issued (the ``name`` claim the accounts
    service sets; "" without one): what tables and tournaments show for them."""

    @property
    def is_privileged(self) -> bool:
        """Service and admin tokens may act for any seat and create matches."""
        return self.role in (Role.SERVICE, Role.ADMIN)

    @property
    def reads_every_log(self) -> bool:
        """Admin and referee tokens read the whole log of a match still running."""
        return self.role in (Role.ADMIN, Role.REFEREE)

    @property
    def is_backend(self) -> bool:
        """A token one of the backend's processes calls with (service, admin, referee):
        limited by the services' call rates, not by a player's or an address's budgets."""
        return self.role is not Role.PLAYER

    @property
    def is_guest(self) -> bool:
        """A player signed in as a guest (``SignInGuest``) with no identity linked."""
        return (self.role is Role.PLAYER and not self.has_account
                and self.player_id.startswith(GUEST_ID_PREFIX))


class AuthError(Exception):
    """A token that is missing, malformed, expired or badly signed.

    :param message: for people (never the token nor a library's error text).
    :param reason: the stable ``ErrorInfo`` reason of the UNAUTHENTICATED answer.
    """

    def __init__(self, message: str, reason: Reason = Reason.TOKEN_INVALID, *,
                 status: grpc.Status | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.status = status
        """The whole answer, when it is not UNAUTHENTICATED ``reason`` (a banned player's)."""


@dataclass(frozen=True, slots=True)
class TokenSigner:
    """The private key one issuer (a service, or the operator) signs its tokens with."""

    issuer: str
    """Who holds it: a service name (``lobby``, ``accounts``, ``bot``, ``tournament``,
    ``stats``) or ``operator`` (:data:`services.platform.token_keys.ISSUER_ROLES`)."""
    kid: str
    """The key's id, in the header of every token it signs."""
    private_key: Ed25519PrivateKey = field(repr=False)

    @classmethod
    def generate(cls, issuer: str, kid: str) -> TokenSigner:
        """A fresh key (the embedded mode's first start, deploy/local-stack.sh, tests)."""
        return cls(issuer, kid, Ed25519PrivateKey.generate())

    @property
    def public_key(self) -> Ed25519PublicKey:
        """The key that verifies its tokens."""
        return self.private_key.public_key()

    @property
    def seed(self) -> bytes:
        """The 32-byte private seed."""
        return self.private_key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )


@dataclass(frozen=True, slots=True)
class TrustedKey:
    """A public key the servers verify tokens with, and the roles it may sign."""

    kid: str
    public_key: Ed25519PublicKey = field(repr=False)
    roles: frozenset[Role]


class TokenKeyRing:
    """The public keys a server trusts, by ``kid``: a token is valid only when its key is
    here and may sign its role. Two keys of one issuer are trusted at once while a key is
    rotated (docs/security.md "Token keys")."""

    def __init__(self, keys: Iterable[TrustedKey]) -> None:
        self._keys: dict[str, TrustedKey] = {}
        for key in keys:
            if key.kid in self._keys:
                raise ValueError(f"two keys have the kid {key.kid!r}")
            self._keys[key.kid] = key

    @classmethod
    def trusting(cls, signers: Mapping[TokenSigner, Iterable[Role]]) -> TokenKeyRing:
        """The ring trusting each signer's public key for its roles."""
        return cls(TrustedKey(signer.kid, signer.public_key, frozenset(roles))
                   for signer, roles in signers.items())

    def get(self, kid: str) -> TrustedKey | None:
        """The trusted key named ``kid``, or None."""
        return self._keys.get(kid)

    @property
    def keys(self) -> tuple[TrustedKey, ...]:
        """Every trusted key, in the order given."""
        return tuple(self._keys.values())


def mint_token(
    signer: TokenSigner, player_id: str, role: Role = Role.PLAYER, *,
    ttl_seconds: int = 24 * 3600, session_id: str | None = None, issued_at: int | None = None,
    has_account: bool = False, display_name: str = "",
) -> str:
    """A signed bearer token for ``player_id`` acting as ``role`` (in the session
    ``session_id``, its ``sid`` claim, when given; ``has_account``: the ``acct`` claim, a
    player with an identity linked; ``display_name``: the ``name`` claim), issued at
    ``issued_at`` (epoch seconds; None: now).

    >>> signer = TokenSigner.generate("operator", "ops-1")
    >>> ring = TokenKeyRing.trusting({signer: [Role.PLAYER, Role.ADMIN]})
    >>> identity = verify_token(ring, mint_token(signer, "p1", display_name="Nima"))
    >>> identity.player_id, identity.role, identity.session_id, identity.display_name
    ('p1', <Role.PLAYER: 'player'>, None, 'Nima')
    """
    now = int(time.time()) if issued_at is None else issued_at
    claims: dict[str, object] = {"sub": player_id, "role": str(role), "iss": _ISSUER,
                                 "iat": now, "exp": now + ttl_seconds}
    if session_id is not None:
        claims["sid"] = session_id
    if has_account:
        claims["acct"] = True
    if display_name:
        claims["name"] = display_name
    return jwt.encode(claims, signer.private_key, algorithm=_ALGORITHM,
                      headers={"kid": signer.kid})


def verify_token(keys: TokenKeyRing, token: str) -> Identity:
    """The identity a token carries.

    :raises AuthError: if the token is invalid, expired, or names no player or role, or
        its key is not in ``keys`` or may not sign its role.
    """
    return _verify(keys, token)[0]


def _trusted_key(ring: TokenKeyRing, token: str) -> TrustedKey:
    """The key of ``ring`` that must have signed ``token`` (by its header)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise AuthError("the bearer token is not a valid dast token") from exc
    if header.get("alg") != _ALGORITHM:
        raise AuthError("the bearer token is not signed with EdDSA (Ed25519), the only "
                        "algorithm dast tokens use")
    kid = header.get("kid")
    key = ring.get(kid) if isinstance(kid, str) else None
    if key is None:
        raise AuthError("the bearer token is signed with a key this server does not trust")
    return key


def _verify(keys: TokenKeyRing, token: str) -> tuple[Identity, int]:
    """The identity a token carries and when it expires (epoch seconds)."""
    trusted = _trusted_key(keys, token)
    try:
        claims = jwt.decode(
            token, trusted.public_key, algorithms=[_ALGORITHM], issuer=_ISSUER,
            options={"require": ["sub", "exp", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise AuthError("the bearer token has expired; sign in again",
                        Reason.TOKEN_EXPIRED) from exc
    except jwt.PyJWTError as exc:
        raise AuthError("the bearer token is not a valid dast token") from exc
    player_id = claims.get("sub")
    if not isinstance(player_id, str) or not player_id:
        raise AuthError("the bearer token names no player")
    try:
        role = Role(claims.get("role", Role.PLAYER))
    except ValueError as exc:
        raise AuthError("the bearer token names an unknown role") from exc
    if role not in trusted.roles:
        raise AuthError(f"the bearer token's key may not sign {role} tokens")
    session_id = claims.get("sid")
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise AuthError("the bearer token names no valid session")
    name = claims.get("name", "")
    if not isinstance(name, str) or len(name) > _NAME_CHARS:
        raise AuthError("the bearer token names no valid display name")
    return (Identity(player_id, role, session_id, claims.get("acct") is True, name),
            int(claims["exp"]))


class TokenCache:
    """Verified tokens until they expire: a client sends the same token with every call,
    and checking an Ed25519 signature and its claims costs more than the rest of a cheap
    RPC."""

    def __init__(self, keys: TokenKeyRing, max_size: int = 50_000) -> None:
        self._keys = keys
        self._max_size = max_size
        self._verified: dict[str, tuple[Identity, int]] = {}

    def identity(self, token: str) -> Identity:
        """The identity ``token`` carries.

        :raises AuthError: if the token is invalid or expired.
        """
        return self.verified(token)[0]

    def verified(self, token: str) -> tuple[Identity, int]:
        """The identity ``token`` carries and when it expires (epoch seconds).

        :raises AuthError: if the token is invalid or expired.
        """
        hit = self._verified.get(token)
        if hit is not None and hit[1] > time.time():
            return hit
        identity, expires = self._check(token)
        if len(self._verified) >= self._max_size:
            self._verified.clear()  # rare; a cold cache only costs verifications
        self._verified[token] = (identity, expires)
        return identity, expires

    def _check(self, token: str) -> tuple[Identity, int]:
        """Verify ``token`` (not cached): its identity and expiry (epoch seconds)."""
        return _verify(self._keys, token)


def bearer_of(metadata: Any) -> str | None:
    """The token of an ``authorization: Bearer <token>`` metadata entry, if any."""
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
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


def denied(handler: grpc.RpcMethodHandler, error: AuthError) -> grpc.RpcMethodHandler:
    """``handler`` with its behaviour replaced by an UNAUTHENTICATED abort carrying
    ``ErrorInfo(reason=error.reason)`` (the request, parsed or not, is never looked at)."""
    status = error.status or rich_status(grpc.StatusCode.UNAUTHENTICATED, error.reason,
                                         error.message)

    async def deny(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort_with_status(status)

    async def deny_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort_with_status(status)
        yield  # pragma: no cover - makes this an async generator

    if handler.unary_stream is not None:
        return handler._replace(unary_stream=deny_stream)
    if handler.stream_stream is not None:
        return handler._replace(stream_stream=deny_stream)
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


def with_identity(
    handler: grpc.RpcMethodHandler, identity: Identity
) -> grpc.RpcMethodHandler:
    """``handler`` running with ``identity`` as :func:`current_identity`."""
    if handler.unary_unary is not None:
        return handler._replace(unary_unary=_wrap_unary(handler.unary_unary, identity))
    if handler.unary_stream is not None:
        return handler._replace(unary_stream=_wrap_stream(handler.unary_stream, identity))
    if handler.stream_stream is not None:  # the request is then the stream of requests
        return handler._replace(stream_stream=_wrap_stream(handler.stream_stream, identity))
    return handler


class TokenCheck:
    """Finds the caller of every call from its bearer token (one stage of
    :class:`services.platform.server.DastInterceptor`, which then runs the handler
    :func:`with_identity`, or :func:`denied`)."""

    def __init__(self, keys: TokenKeyRing, *, tokens: TokenCache | None = None,
                 revocations: Revocations | None = None, bans: Bans | None = None) -> None:
        self._tokens = tokens or TokenCache(keys)
        self._revocations = revocations
        self._bans = bans

    def identify(self, details: grpc.HandlerCallDetails) -> Identity | None:
        """The caller of this call; None for the open methods (health, reflection, sign-in).

        :raises AuthError: without a valid bearer token.
        """
        if details.method.startswith(_OPEN_PREFIXES):
            return None
        token = bearer_of(details.invocation_metadata)
        if token is None:
            raise AuthError("missing bearer token in 'authorization' metadata",
                            Reason.UNAUTHENTICATED)
        return self.check(token)[0]

    def check(self, token: str) -> tuple[Identity, int]:
        """The identity of a bearer ``token`` and its expiry (epoch seconds), refused as
        :meth:`identify` refuses it (a stream's renewal is checked by this too).

        :raises AuthError: for an invalid or expired token, a banned player, a revoked
            session.
        """
        identity, expires = self._tokens.verified(token)
        # A ban first: it ends the player's sessions too, and says more (why, until when).
        if identity.role is Role.PLAYER and self._bans is not None:
            ban = self._bans.ban_of(identity.player_id)
            if ban is not None:
                raise AuthError("this player is banned", Reason.PLAYER_BANNED,
                                status=ban.status())
        if (identity.session_id is not None and self._revocations is not None
                and self._revocations.is_revoked(identity.session_id)):
            raise AuthError("this token's session was signed out (or ended): sign in again",
                            Reason.SESSION_REVOKED)
        return identity, expires
