"""Sign-in with OpenID Connect: verify an ID token from an identity provider the operator
configured, and say who it proves the caller is.

An operator lists providers in ``DAST_OIDC_PROVIDERS`` (:mod:`services.accounts.oidc_providers`,
docs/accounts.md): each has a name, an issuer, the audiences (the app's client ids) its
tokens must be meant for, and either a JWKS URL or static public keys. The
:class:`IdTokenVerifier` accepts an ID token signed with RS256, ES256 or EdDSA by a key of
that provider, whose ``iss``, ``aud``, ``exp``, ``iat`` (and ``nbf`` when present) hold with
:data:`CLOCK_SKEW_SECONDS` of skew, and which names a subject; it returns a
:class:`VerifiedIdentity`. The signature and claim checks are PyJWT's, fetching the keys is
its ``PyJWKClient``'s; this module chooses what is allowed and when keys are fetched.

Keys. A provider's JWKS is fetched on first use, off the event loop, and held for
:data:`KEYS_MAX_AGE_SECONDS`. A token naming a ``kid`` the held keys lack fetches the set
again at once (a provider rotated its keys: no restart), unless a fetch in the last
:data:`REFETCH_INTERVAL_SECONDS` was for a ``kid`` the keys lacked: a flood of tokens with
made-up ``kid`` values costs the provider one request per interval. A fetch is bounded in time
(:data:`JWKS_TIMEOUT_SECONDS`) and size (:data:`MAX_JWKS_BYTES`), never follows a redirect,
and goes to an ``https`` URL (``http`` only on a loopback address, for tests). A failed
fetch is retried after :data:`FAILED_FETCH_RETRY_SECONDS`; meanwhile keys already held keep
verifying, and a token needing keys the verifier lacks is answered UNAVAILABLE.

Refusals, each a :class:`~services.platform.errors.ServiceError` with a stable
:class:`OidcReason`::

    OidcError (ServiceError)
    ├── IdTokenRefused                  UNAUTHENTICATED  id_token_invalid, id_token_expired,
    │                                                    id_token_not_yet_valid,
    │                                                    id_token_wrong_audience,
    │                                                    id_token_wrong_issuer,
    │                                                    id_token_unknown_key,
    │                                                    id_token_algorithm_refused
    ├── IdentityProviderUnavailable     UNAVAILABLE      identity_provider_unavailable
    │                                                    (+ RetryInfo)
    └── UnknownIdentityProvider         INVALID_ARGUMENT unknown_identity_provider
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final
from urllib.parse import urlsplit

import grpc
import jwt
import structlog
from jwt.exceptions import (
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidSignatureError,
    MissingRequiredClaimError,
    PyJWKClientConnectionError,
    PyJWKClientError,
    PyJWTError,
)
from jwt.types import Options

from services.accounts.oidc_providers import OidcProvider, is_loopback_host, parse_providers
from services.platform.errors import ServiceError
from services.platform.validation import quoted_input

CLOCK_SKEW_SECONDS: Final = 60
"""How far the provider's clock and ours may disagree: a token is accepted up to this long
after its ``exp``, and from this long before its ``nbf`` or ``iat``."""
REFETCH_INTERVAL_SECONDS: Final = 30.0
"""Least time between two fetches of one provider's keys for a ``kid`` it lacked."""
KEYS_MAX_AGE_SECONDS: Final = 900.0
"""How long fetched keys are used before the next token fetches them again (a key the
provider withdrew stops verifying this long after at most)."""
FAILED_FETCH_RETRY_SECONDS: Final = 5.0
"""Least time between a failed fetch of a provider's keys and the next attempt."""
JWKS_TIMEOUT_SECONDS: Final = 5.0
"""Longest a fetch of a provider's keys may take before it counts as failed."""
MAX_JWKS_BYTES: Final = 256 * 1024
"""Largest JWKS document accepted (a provider's is a few kilobytes)."""
MAX_ID_TOKEN_CHARS: Final = 16 * 1024
"""Longest ID token looked at (providers' are one or two kilobytes)."""
MAX_SUBJECT_CHARS: Final = 255
"""Longest ``sub`` (OpenID Connect Core 2: at most 255 ASCII characters)."""
MAX_PROFILE_CHARS: Final = 1024
"""Longest ``email`` or ``name`` accepted."""

_REQUIRED_CLAIMS: Final = ["iss", "aud", "sub", "exp", "iat"]
_TIME_CLAIMS: Final = ("exp", "iat", "nbf")
_log = structlog.get_logger(component="accounts.oidc")

__all__ = [
    "CLOCK_SKEW_SECONDS", "IdTokenRefused", "IdTokenVerifier", "IdentityProviderUnavailable",
    "OidcError", "OidcProvider", "OidcReason", "UnknownIdentityProvider", "VerifiedIdentity",
    "parse_providers",
]


class OidcReason(StrEnum):
    """Why an ID token signed no one in."""

    ID_TOKEN_INVALID = "id_token_invalid"
    """Not a well-formed ID token with a good signature: garbage, a signature that does not
    verify, a required claim missing (``sub``, ``exp``, ...) or of the wrong type."""
    ID_TOKEN_EXPIRED = "id_token_expired"
    """Its ``exp`` passed (beyond the skew): the app gets a fresh token and retries."""
    ID_TOKEN_NOT_YET_VALID = "id_token_not_yet_valid"
    """Its ``nbf`` or ``iat`` is in the future (beyond the skew): a clock is wrong."""
    ID_TOKEN_WRONG_AUDIENCE = "id_token_wrong_audience"
    """Issued to another app (``aud`` names none of the provider's configured audiences)."""
    ID_TOKEN_WRONG_ISSUER = "id_token_wrong_issuer"
    """Its ``iss`` is not the named provider's issuer."""
    ID_TOKEN_UNKNOWN_KEY = "id_token_unknown_key"
    """Its ``kid`` names none of the provider's keys (none at all, or not one held)."""
    ID_TOKEN_ALGORITHM_REFUSED = "id_token_algorithm_refused"
    """Its ``alg`` is not one the provider signs with (``none`` and HMAC never are)."""
    IDENTITY_PROVIDER_UNAVAILABLE = "identity_provider_unavailable"
    """The provider's keys could not be fetched just now: retry after the RetryInfo delay."""
    UNKNOWN_IDENTITY_PROVIDER = "unknown_identity_provider"
    """No provider of that name (or that issuer) is configured on this server."""


class OidcError(ServiceError):
    """An ID token signed no one in; :attr:`reason` is an :class:`OidcReason`."""

    def __init__(
        self, code: grpc.StatusCode, reason: OidcReason, message: str, *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, reason, message, retry_after=retry_after)


class IdTokenRefused(OidcError):
    """The token proves nothing: UNAUTHENTICATED."""

    def __init__(self, reason: OidcReason, message: str) -> None:
        super().__init__(grpc.StatusCode.UNAUTHENTICATED, reason, message)


class IdentityProviderUnavailable(OidcError):
    """The provider's keys are out of reach for now: UNAVAILABLE, worth a retry."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(grpc.StatusCode.UNAVAILABLE, OidcReason.IDENTITY_PROVIDER_UNAVAILABLE,
                         message, retry_after=retry_after)


class UnknownIdentityProvider(OidcError):
    """No such provider is configured: INVALID_ARGUMENT."""

    def __init__(self, message: str) -> None:
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT,
                         OidcReason.UNKNOWN_IDENTITY_PROVIDER, message)


def _invalid(message: str) -> IdTokenRefused:
    return IdTokenRefused(OidcReason.ID_TOKEN_INVALID, message)


# ---- fetching keys ----------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: the keys come from the configured URL or not at all."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _JwksClient(jwt.PyJWKClient):
    """PyJWT's JWKS client reading at most :data:`MAX_JWKS_BYTES` within its timeout, without
    following redirects (and without a proxy to a loopback address). It caches nothing:
    :class:`_ProviderKeys` decides when to fetch."""

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(url, cache_jwk_set=False, timeout=timeout, cooldown_duration=0,
                         headers={"Accept": "application/json", "User-Agent": "dast-accounts"})
        handlers: list[urllib.request.BaseHandler] = [_NoRedirects()]
        if is_loopback_host(urlsplit(url).hostname or ""):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def fetch_data(self) -> Any:
        deadline = time.monotonic() + self.timeout
        request = urllib.request.Request(self.uri, headers=self.headers)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                body = _read_bounded(response, deadline)
        except (OSError, http.client.HTTPException) as error:  # URLError, HTTPError, timeouts
            raise PyJWKClientConnectionError(f"fetching {self.uri} failed: {error}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise PyJWKClientError(f"{self.uri} answered something else than JSON") from None


def _read_bounded(response: http.client.HTTPResponse, deadline: float) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_JWKS_BYTES:
        raise PyJWKClientConnectionError(f"the key set has {declared} bytes, over the limit")
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read1(16 * 1024):  # one receive at a time: the deadline holds
        size += len(chunk)
        if size > MAX_JWKS_BYTES:
            raise PyJWKClientConnectionError(f"the key set is over {MAX_JWKS_BYTES} bytes")
        if time.monotonic() > deadline:
            raise PyJWKClientConnectionError("the key set took too long to arrive")
        chunks.append(chunk)
    return b"".join(chunks)


def _usable_keys(keys: Iterable[jwt.PyJWK], algorithms: Iterable[str]) -> dict[str, jwt.PyJWK]:
    """The keys by ``kid`` that may verify one of ``algorithms`` (never a secret key)."""
    allowed = set(algorithms)
    return {
        key.key_id: key for key in keys
        if isinstance(key.key_id, str) and key.key_type != "oct" and key.algorithm_name in allowed
    }


class _ProviderKeys:
    """One provider's keys and when to fetch them (the policy of the module docstring)."""

    def __init__(self, provider: OidcProvider, *, monotonic: Callable[[], float],
                 timeout: float) -> None:
        self.provider = provider
        self._monotonic = monotonic
        self._timeout = timeout
        self._client = None if provider.jwks_url is None else _JwksClient(
            provider.jwks_url, timeout)
        self._keys = _usable_keys((jwt.PyJWK(dict(key)) for key in provider.static_keys),
                                  provider.algorithms)
        self._fetched_at: float | None = None
        self._missed_at: float | None = None
        """When a fetch last started for a ``kid`` the fresh keys lacked, or ended without
        the ``kid`` it was for: the start of the refetch interval."""
        self._failed_at: float | None = None
        self._lock = asyncio.Lock()

    async def key(self, kid: str) -> jwt.PyJWK:
        """The key named ``kid``, fetching the provider's keys when the policy says so.

        :raises IdTokenRefused: ``id_token_unknown_key``.
        :raises IdentityProviderUnavailable: no keys could be fetched, and none held serves.
        """
        key = self._keys.get(kid)
        if self._client is None:
            if key is None:
                raise self._unknown(kid, "")
            return key
        if key is not None and self._is_fresh(self._monotonic()):
            return key
        async with self._lock:  # one fetch at a time; waiters then see its keys
            return await self._fetch_for(kid)

    async def _fetch_for(self, kid: str) -> jwt.PyJWK:
        now = self._monotonic()
        held = self._keys.get(kid)
        fresh = self._is_fresh(now)
        if fresh and held is not None:
            return held  # fetched by the task this one waited for
        if self._failed_at is not None and now - self._failed_at < FAILED_FETCH_RETRY_SECONDS:
            if held is not None:
                return held  # the provider is down: the keys held keep verifying
            raise self._unavailable(FAILED_FETCH_RETRY_SECONDS - (now - self._failed_at))
        if fresh:  # a kid the keys lack: fetch them again, once per interval
            if self._missed_at is not None and now - self._missed_at < REFETCH_INTERVAL_SECONDS:
                wait = REFETCH_INTERVAL_SECONDS - (now - self._missed_at)
                if self._failed_at is not None:  # that fetch failed: the kid may be new
                    raise self._unavailable(wait)
                raise self._unknown(kid, f"; they are fetched again in {wait:.0f} s at the soonest")
            self._missed_at = now
        try:
            await self._fetch()
        except IdentityProviderUnavailable:
            if held is not None:
                return held
            raise
        fetched = self._keys.get(kid)
        if fetched is None:
            self._missed_at = self._fetched_at
            raise self._unknown(kid, " (fetched just now)")
        return fetched

    async def _fetch(self) -> None:
        assert self._client is not None
        try:
            keys = await asyncio.wait_for(
                asyncio.to_thread(self._client.get_signing_keys, True), self._timeout)
        except (TimeoutError, PyJWTError, OSError, ValueError, TypeError) as error:
            # A provider's answer is input from afar: a malformed key set is its outage.
            self._failed_at = self._monotonic()
            _log.warning("jwks_fetch_failed", provider=self.provider.name,
                         error_type=type(error).__name__, error=str(error)[:200])
            raise self._unavailable(FAILED_FETCH_RETRY_SECONDS) from None
        self._keys = _usable_keys(keys, self.provider.algorithms)
        self._fetched_at = self._monotonic()
        self._failed_at = None
        _log.info("jwks_fetched", provider=self.provider.name, kids=sorted(self._keys))

    def _is_fresh(self, now: float) -> bool:
        return self._fetched_at is not None and now - self._fetched_at < KEYS_MAX_AGE_SECONDS

    def _unknown(self, kid: str, detail: str) -> IdTokenRefused:
        return IdTokenRefused(OidcReason.ID_TOKEN_UNKNOWN_KEY,
                              f"the ID token's kid {quoted_input(kid)} names none of "
                              f"{self.provider.name}'s keys{detail}")

    def _unavailable(self, retry_after: float) -> IdentityProviderUnavailable:
        return IdentityProviderUnavailable(
            f"{self.provider.name}'s keys cannot be fetched just now; retry in a few seconds",
            retry_after=max(1.0, math.ceil(retry_after)))


# ---- verifying --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerifiedIdentity:
    """Who a verified ID token says the caller is."""

    provider: str
    """The configured provider's name."""
    subject: str
    """The provider's stable id of the person (``sub``): with ``provider``, the account key."""
    email: str | None = None
    """The address the token gives; the person's own only when ``email_verified``."""
    email_verified: bool | None = None
    """Whether the provider checked ``email`` (None: the token does not say)."""
    name: str | None = None
    """The person's name as the provider knows it (a suggestion for a display name)."""


_DECODE_OPTIONS: Final[Options] = {
    "require": _REQUIRED_CLAIMS, "verify_signature": True, "verify_exp": True,
    "verify_nbf": True, "verify_iat": True, "verify_aud": True, "verify_iss": True,
    "verify_sub": False, "enforce_minimum_key_length": True,  # _identity checks sub
}


class IdTokenVerifier:
    """Verifies ID tokens of the configured providers (one instance per process, used from
    one event loop).

    :param providers: from :func:`parse_providers`.
    :param monotonic: the clock of the key policy (tests pass their own); the tokens' times
        are compared with the wall clock.
    :param jwks_timeout: longest wait for a provider's keys.
    """

    def __init__(self, providers: Iterable[OidcProvider], *,
                 monotonic: Callable[[], float] = time.monotonic,
                 jwks_timeout: float = JWKS_TIMEOUT_SECONDS) -> None:
        self._providers = {
            provider.name: _ProviderKeys(provider, monotonic=monotonic, timeout=jwks_timeout)
            for provider in providers
        }
        self._by_issuer = {
            issuer: keys for keys in self._providers.values() for issuer in keys.provider.issuers
        }

    @property
    def provider_names(self) -> tuple[str, ...]:
        """The configured providers' names."""
        return tuple(self._providers)

    async def verify(self, id_token: str, provider: str | None = None) -> VerifiedIdentity:
        """The identity ``id_token`` proves, from the provider named ``provider`` (or, when
        None, the provider whose issuer the token names).

        :raises IdTokenRefused: UNAUTHENTICATED, with the :class:`OidcReason` saying why.
        :raises IdentityProviderUnavailable: UNAVAILABLE: retry after its ``retry_after``.
        :raises UnknownIdentityProvider: INVALID_ARGUMENT.
        """
        header, claims = _unverified(id_token)
        keys = self._provider_keys(provider, claims)
        alg = header.get("alg")
        if alg not in keys.provider.algorithms:
            raise IdTokenRefused(OidcReason.ID_TOKEN_ALGORITHM_REFUSED,
                                 f"the ID token is signed with {_quoted(alg)}; "
                                 f"{keys.provider.name}'s tokens are signed with "
                                 f"{', '.join(keys.provider.algorithms)}")
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.upper() != "JWT"):
            raise _invalid(f"the token's typ is {_quoted(typ)}, not an ID token's (JWT)")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise IdTokenRefused(OidcReason.ID_TOKEN_UNKNOWN_KEY, "the ID token names no key (kid)")
        key = await keys.key(kid)
        if key.algorithm_name != alg:
            raise IdTokenRefused(OidcReason.ID_TOKEN_ALGORITHM_REFUSED,
                                 f"the ID token says {alg} but key {quoted_input(kid)} is for "
                                 f"{key.algorithm_name}")
        payload = _decode(id_token, key, keys.provider)
        return _identity(keys.provider.name, payload)

    def _provider_keys(self, name: str | None, claims: Mapping[str, Any]) -> _ProviderKeys:
        if name is not None:
            keys = self._providers.get(name)
            if keys is None:
                raise UnknownIdentityProvider(
                    f"no identity provider named {quoted_input(name)} is configured "
                    f"(configured: {', '.join(self._providers) or 'none'})")
            return keys
        issuer = claims.get("iss")
        if not isinstance(issuer, str):
            raise _invalid("the ID token names no issuer (iss)")
        by_issuer = self._by_issuer.get(issuer)
        if by_issuer is None:
            raise UnknownIdentityProvider(
                f"no configured identity provider issues tokens as {quoted_input(issuer)}")
        return by_issuer


def _quoted(value: object) -> str:
    return quoted_input(value) if isinstance(value, str) else f"a {type(value).__name__}"


def _unverified(id_token: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of ``id_token``, not yet trusted: enough to choose a provider
    and a key."""
    if not isinstance(id_token, str) or not id_token:
        raise _invalid("no ID token was given")
    if len(id_token) > MAX_ID_TOKEN_CHARS:
        raise _invalid(f"the ID token has {len(id_token)} characters; at most "
                       f"{MAX_ID_TOKEN_CHARS} are accepted")
    if not id_token.isascii():
        raise _invalid("the ID token is not a JWT (it has characters outside ASCII)")
    try:
        decoded = jwt.decode_complete(id_token, options={"verify_signature": False})
    except PyJWTError as error:
        raise _invalid(f"the ID token is not a JWT ({error})") from None
    header, claims = decoded["header"], decoded["payload"]
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise _invalid("the ID token is not a JWT (its header or claims are no JSON object)")
    for claim in _TIME_CLAIMS:  # PyJWT would take "123" and true for numbers
        value = claims.get(claim)
        if claim in claims and (isinstance(value, bool) or not isinstance(value, int | float)
                                or not math.isfinite(value)):
            raise _invalid(f"the ID token's {claim} is not a number of seconds")
    return header, claims


def _decode(id_token: str, key: jwt.PyJWK, provider: OidcProvider) -> dict[str, Any]:
    """The claims of ``id_token``, its signature and registered claims verified."""
    try:
        claims: dict[str, Any] = jwt.decode(
            id_token, key, algorithms=[key.algorithm_name], audience=list(provider.audiences),
            issuer=provider.issuers, leeway=CLOCK_SKEW_SECONDS, options=_DECODE_OPTIONS)
    except ExpiredSignatureError:
        raise IdTokenRefused(OidcReason.ID_TOKEN_EXPIRED,
                             f"the ID token expired (allowing {CLOCK_SKEW_SECONDS} s of clock "
                             "skew): get a fresh one from the provider") from None
    except ImmatureSignatureError:
        raise IdTokenRefused(OidcReason.ID_TOKEN_NOT_YET_VALID,
                             f"the ID token is not valid yet: its nbf or iat is over "
                             f"{CLOCK_SKEW_SECONDS} s in the future (is a clock wrong?)") from None
    except InvalidAudienceError:
        raise IdTokenRefused(OidcReason.ID_TOKEN_WRONG_AUDIENCE,
                             f"the ID token is meant for another app: its aud names none of "
                             f"{provider.name}'s configured audiences") from None
    except InvalidIssuerError:
        raise IdTokenRefused(OidcReason.ID_TOKEN_WRONG_ISSUER,
                             f"the ID token's iss is not {provider.name}'s issuer "
                             f"{quoted_input(provider.issuer)}") from None
    except InvalidAlgorithmError as error:
        raise IdTokenRefused(OidcReason.ID_TOKEN_ALGORITHM_REFUSED,
                             f"the ID token's algorithm is refused ({error})") from None
    except MissingRequiredClaimError as error:
        raise _invalid(f"the ID token has no {error.claim}") from None
    except InvalidSignatureError:
        raise _invalid(f"the ID token's signature does not verify with {provider.name}'s "
                       "key") from None
    except PyJWTError as error:
        raise _invalid(f"the ID token is malformed ({error})") from None
    return claims


def _identity(provider: str, claims: Mapping[str, Any]) -> VerifiedIdentity:
    """The identity of verified ``claims``; claims of the wrong type or size are refused."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise _invalid("the ID token has no sub")
    if len(subject) > MAX_SUBJECT_CHARS or not subject.isprintable():
        raise _invalid(f"the ID token's sub is not an OpenID subject (at most "
                       f"{MAX_SUBJECT_CHARS} printable characters)")
    verified = claims.get("email_verified")
    if isinstance(verified, str) and verified in ("true", "false"):  # Apple sends strings
        verified = verified == "true"
    if verified is not None and not isinstance(verified, bool):
        raise _invalid("the ID token's email_verified is not a boolean")
    return VerifiedIdentity(provider=provider, subject=subject, email=_profile(claims, "email"),
                            email_verified=verified, name=_profile(claims, "name"))


def _profile(claims: Mapping[str, Any], claim: str) -> str | None:
    value = claims.get(claim)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_PROFILE_CHARS:
        raise _invalid(f"the ID token's {claim} is not a string of at most "
                       f"{MAX_PROFILE_CHARS} characters")
    return value
