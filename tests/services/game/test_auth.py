"""Bearer tokens (services/platform/auth.py): signed, expiring, naming a player and a role."""

from __future__ import annotations

import time

import jwt
import pytest

from services.platform.auth import AuthError, Identity, Role, TokenCache, bearer_of, mint_token

SECRET = "unit-test-secret-0123456789abcdef0123456789abcdef0123456789abcdef"


def test_a_minted_token_verifies_to_its_player_and_role() -> None:
    cache = TokenCache(SECRET)
    token = mint_token(SECRET, "alice", Role.SERVICE)
    assert cache.identity(token) == Identity("alice", Role.SERVICE)
    assert cache.identity(token).is_privileged
    assert not Identity("bob", Role.PLAYER).is_privileged


@pytest.mark.parametrize("token", [
    mint_token(SECRET, "alice", ttl_seconds=-10),                     # expired
    mint_token("some-other-secret-0123456789abcdef0123", "alice"),    # another signer
    jwt.encode({"sub": "alice", "iss": "dast", "exp": 2**40, "role": "root"}, SECRET),
    jwt.encode({"sub": "", "iss": "dast", "exp": 2**40}, SECRET),       # no player
    jwt.encode({"sub": "alice", "exp": 2**40}, SECRET),                 # not ours
    jwt.encode({"sub": "alice", "iss": "dast", "exp": 2**40}, SECRET, algorithm="HS512"),
    "not-a-token",
])
def test_bad_tokens_are_refused(token: str) -> None:
    with pytest.raises(AuthError):
        TokenCache(SECRET).identity(token)


def test_a_cached_token_is_refused_once_it_expires() -> None:
    cache = TokenCache(SECRET)
    token = mint_token(SECRET, "alice", ttl_seconds=1)
    assert cache.identity(token).player_id == "alice"
    time.sleep(1.2)  # exp is whole seconds: now the token has expired
    with pytest.raises(AuthError):
        cache.identity(token)


def test_the_bearer_scheme_is_read_from_authorization_metadata() -> None:
    assert bearer_of((("x", "y"), ("authorization", "Bearer abc"))) == "abc"
    assert bearer_of((("authorization", b"bearer  abc "),)) == "abc"
    assert bearer_of((("authorization", "Basic abc"),)) is None
    assert bearer_of(None) is None
