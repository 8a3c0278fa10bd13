"""Token keys for the tests: one key per issuer, made once per test run, and helpers that
mint a token of any role with the issuer that may sign it (services/platform/token_keys.py).

Servers in the tests verify with :data:`TEST_KEYS` ``.ring``; a process started by a test
takes :func:`token_environment` (the ring, and the private keys of the services it runs
only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from services.platform.auth import Role, TokenSigner, mint_token
from services.platform.token_keys import SERVICE_ISSUERS, TokenKeys, generate_token_keys

TEST_KEYS: Final[TokenKeys] = generate_token_keys(suffix="test")
"""Every issuer's key, and the ring trusting each for its issuer's roles."""
SIGNER_OF_ROLE: Final = {Role.PLAYER: "accounts", Role.SERVICE: "bot", Role.ADMIN: "operator"}
"""Which test issuer mints each role in :func:`token`."""


def signer(issuer: str) -> TokenSigner:
    """The test key of ``issuer``."""
    return TEST_KEYS.signer(issuer)


def token(player_id: str, role: Role = Role.PLAYER, *, ttl_seconds: int = 24 * 3600,
          session_id: str | None = None) -> str:
    """A token for ``player_id`` as ``role`` (``ttl_seconds``, ``session_id``: as
    :func:`~services.platform.auth.mint_token`), signed by a test issuer that may sign it."""
    return mint_token(signer(SIGNER_OF_ROLE[role]), player_id, role, ttl_seconds=ttl_seconds,
                      session_id=session_id)


def bearer(player_id: str, role: Role = Role.PLAYER, *, ttl_seconds: int = 24 * 3600,
           session_id: str | None = None) -> tuple[tuple[str, str]]:
    """The ``authorization`` metadata of :func:`token`."""
    return (("authorization",
             f"Bearer {token(player_id, role, ttl_seconds=ttl_seconds, session_id=session_id)}"),)


def token_environment(services: Iterable[str] = ()) -> dict[str, str]:
    """``DAST_TOKEN_KEYS`` (every test key) and ``DAST_TOKEN_SIGNING_KEYS`` (only the keys
    of ``services``; none for a game replica) for a process running ``services``."""
    issuers = {SERVICE_ISSUERS[name] for name in services if name in SERVICE_ISSUERS}
    keys = TEST_KEYS.only(issuers)
    environment = {"DAST_TOKEN_KEYS": keys.ring_document()}
    if keys.signers:
        environment["DAST_TOKEN_SIGNING_KEYS"] = keys.signing_document()
    return environment
