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
from services.platform.token_keys import TokenKeys, generate_token_keys

TEST_KEYS: Final[TokenKeys] = generate_token_keys(suffix="test")
"""Every issuer's key, and the ring trusting each for its issuer's roles."""
SIGNER_OF_ROLE: Final = {Role.PLAYER: "accounts", Role.SERVICE: "bot", Role.ADMIN: "operator",
                          Role.REFEREE: "tournament"}
"""Which test issuer mints each role in :func:`token`."""


def signer(issuer: str) -> TokenSigner:
    """The test key of ``issuer``."""
    return TEST_KEYS.signer(issuer)


def mint_with(keys: TokenKeys, player_id: str, role: Role = Role.PLAYER, *,
              ttl_seconds: int = 24 * 3600, session_id: str | None = None) -> str:
    """A token for ``player_id`` as ``role`` (``ttl_seconds``, ``session_id``: as
    :func:`~services.platform.auth.mint_token`), signed by the issuer of ``keys`` that
    :data:`SIGNER_OF_ROLE` names for it."""
    return mint_token(keys.signer(SIGNER_OF_ROLE[role]), player_id, role,
                      ttl_seconds=ttl_seconds, session_id=session_id)


def token(player_id: str, role: Role = Role.PLAYER, *, ttl_seconds: int = 24 * 3600,
          session_id: str | None = None) -> str:
    """:func:`mint_with` the test keys."""
    return mint_with(TEST_KEYS, player_id, role, ttl_seconds=ttl_seconds, session_id=session_id)


def bearer(player_id: str, role: Role = Role.PLAYER, *, ttl_seconds: int = 24 * 3600,
           session_id: str | None = None) -> tuple[tuple[str, str]]:
    """The ``authorization`` metadata of :func:`token`."""
    return (("authorization",
             f"Bearer {token(player_id, role, ttl_seconds=ttl_seconds, session_id=session_id)}"),)


def token_environment(services: Iterable[str] = ()) -> dict[str, str]:
    """``DAST_TOKEN_KEYS`` (every test key) and ``DAST_TOKEN_SIGNING_KEYS`` (only the keys
    of ``services``; none for a game replica) for a process running ``services``."""
    return TEST_KEYS.for_services(services).environment()


STRANGERS: Final[TokenKeys] = generate_token_keys(suffix="test")
"""Keys under the same kids as :data:`TEST_KEYS`, which no test server trusts: what someone
without the issuers' private keys signs with."""


def stranger_token(player_id: str, role: Role = Role.PLAYER, *,
                   ttl_seconds: int = 24 * 3600) -> str:
    """A token that looks like :func:`token`'s but is signed with a key nobody trusts."""
    return mint_with(STRANGERS, player_id, role, ttl_seconds=ttl_seconds)
