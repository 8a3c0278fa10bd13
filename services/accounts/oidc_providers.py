"""The identity providers an operator trusts to sign players in: the ``DAST_OIDC_PROVIDERS``
setting (a JSON list, docs/accounts.md "Identity providers"), read by :func:`parse_providers`
into :class:`OidcProvider` records that :class:`services.accounts.oidc.IdTokenVerifier`
verifies tokens against.

A provider's keys come from a JWKS URL, which must be ``https`` (``http`` only to a loopback
address: a test's provider on this machine), or from static public keys given as JWKs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import jwt
from jwt.exceptions import PyJWTError
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from services.platform.config import ConfigError

Algorithm = Literal["RS256", "ES256", "EdDSA"]
ALGORITHMS: Final[tuple[Algorithm, ...]] = ("RS256", "ES256", "EdDSA")
"""The signature algorithms a provider's tokens may use (a provider may allow fewer)."""
_PRIVATE_JWK_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
"""JWK members of private and secret keys (RFC 7518 6.2.2, 6.3.2, 6.4)."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a URL's host) is this machine: ``localhost`` or a loopback address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def jwks_url_problem(url: str) -> str | None:
    """Why ``url`` may not serve a provider's keys (None when it may): ``https`` only, or
    ``http`` to a loopback address (a test's provider on this machine)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "is not a URL"
    if not host:
        return "names no host"
    if parts.username is not None or parts.password is not None:
        return "carries credentials"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and is_loopback_host(host):
        return None
    return "must be an https URL (http only to a loopback address)"


def jwk_problem(jwk: Mapping[str, Any], algorithms: Iterable[str]) -> str | None:
    """Why the static key ``jwk`` is unusable (None when it is usable): it must be a public
    RSA, EC P-256 or Ed25519 key with a ``kid``, for one of ``algorithms``."""
    kid = jwk.get("kid")
    if not isinstance(kid, str) or not kid:
        return "has no kid"
    if _PRIVATE_JWK_MEMBERS & jwk.keys():
        return f"kid {kid!r} holds private or secret key material: give only the public key"
    if jwk.get("use", "sig") != "sig":
        return f"kid {kid!r} is not a signing key (use {jwk.get('use')!r})"
    try:
        parsed = jwt.PyJWK(dict(jwk))
    except (PyJWTError, TypeError, ValueError) as error:
        return f"kid {kid!r} is not a usable key ({error})"
    if parsed.algorithm_name not in set(algorithms):
        return f"kid {kid!r} is a key for {parsed.algorithm_name}, not one of the algorithms"
    return None


class OidcProvider(BaseModel):
    """One identity provider whose ID tokens sign players in (an entry of
    ``DAST_OIDC_PROVIDERS``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    """How the service and its clients name the provider (``google``, ``apple``)."""
    issuer: str = Field(min_length=1, max_length=255)
    """The ``iss`` of its tokens, compared exactly."""
    issuer_aliases: tuple[str, ...] = ()
    """Other ``iss`` values it uses (Google also writes ``accounts.google.com``)."""
    audiences: tuple[str, ...] = Field(min_length=1)
    """The client ids of the studio's apps: a token's ``aud`` must name one."""
    jwks_url: str | None = None
    """Where its JSON Web Key Set is published; or else ``static_keys``."""
    static_keys: tuple[dict[str, Any], ...] = ()
    """Its public keys as JWKs (each with a ``kid``), for a provider without a JWKS URL."""
    algorithms: tuple[Algorithm, ...] = Field(default=ALGORITHMS, min_length=1)
    """The algorithms its tokens may be signed with."""

    @model_validator(mode="after")
    def _check(self) -> OidcProvider:
        if (self.jwks_url is None) == (not self.static_keys):
            raise ValueError("give either jwks_url or static_keys, not both or neither")
        if self.jwks_url is not None:
            problem = jwks_url_problem(self.jwks_url)
            if problem is not None:
                raise ValueError(f"jwks_url {problem}")
        for key in self.static_keys:
            problem = jwk_problem(key, self.algorithms)
            if problem is not None:
                raise ValueError(f"static key {problem}")
        if len({key["kid"] for key in self.static_keys}) != len(self.static_keys):
            raise ValueError("static_keys repeat a kid")
        if any(not audience for audience in self.audiences):
            raise ValueError("an audience is empty")
        if any(not alias for alias in self.issuer_aliases):
            raise ValueError("an issuer alias is empty")
        return self

    @property
    def issuers(self) -> tuple[str, ...]:
        """Every ``iss`` its tokens may carry."""
        return (self.issuer, *self.issuer_aliases)


_PROVIDER_LIST: Final = TypeAdapter(list[OidcProvider])


def parse_providers(text: str) -> tuple[OidcProvider, ...]:
    """The providers of a ``DAST_OIDC_PROVIDERS`` value: a JSON list of
    :class:`OidcProvider` objects (empty text: none).

    :raises ConfigError: naming every problem: bad JSON, a field missing or wrong, a
        non-https JWKS URL, a private static key, two providers with one name or issuer.
    """
    if not text.strip():
        return ()
    try:
        providers = _PROVIDER_LIST.validate_json(text)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'value'}: {item['msg']}"
            for item in error.errors()
        )
        raise ConfigError(f"DAST_OIDC_PROVIDERS is invalid: {problems}") from None
    names = [provider.name for provider in providers]
    issuers = [issuer for provider in providers for issuer in provider.issuers]
    for kind, values in (("name", names), ("issuer", issuers)):
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise ConfigError(f"DAST_OIDC_PROVIDERS gives two providers the {kind} "
                              f"{', '.join(map(repr, repeated))}")
    return tuple(providers)
