"""Bearer tokens (services/platform/auth.py): signed with an issuer's Ed25519 key, verified
against a ring of public keys each trusted for some roles, expiring, naming a player and a
role."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.platform.auth import (
    AuthError,
    Identity,
    Role,
    TokenCache,
    TokenKeyRing,
    TokenSigner,
    bearer_of,
    mint_token,
    verify_token,
)
from services.platform.errors import Reason
from services.platform.token_keys import ISSUER_ROLES, generate_token_keys
from tests.support.tokens import TEST_KEYS, signer, token

RING = TEST_KEYS.ring
OLD_SECRET = "unit-test-secret-0123456789abcdef0123456789abcdef0123456789abcdef"
"""What an HS256 deployment signed with (``DAST_JWT_SECRET``): worthless now."""
_CLAIMS = {"sub": "alice", "iss": "dast", "exp": 2**40, "role": "admin"}


def _refused(token_: str, ring: TokenKeyRing = RING) -> AuthError:
    with pytest.raises(AuthError) as refused:
        TokenCache(ring).identity(token_)
    return refused.value


def test_a_minted_token_verifies_to_its_player_and_role() -> None:
    cache = TokenCache(RING)
    minted = token("alice", Role.SERVICE)
    assert cache.identity(minted) == Identity("alice", Role.SERVICE)
    assert cache.identity(minted).is_privileged
    assert not Identity("bob", Role.PLAYER).is_privileged
    assert jwt.get_unverified_header(minted) == {"alg": "EdDSA", "kid": "bot-test",
                                                 "typ": "JWT"}


@pytest.mark.parametrize("issuer", sorted(ISSUER_ROLES))
@pytest.mark.parametrize("role", list(Role))
def test_each_key_signs_only_the_roles_the_ring_trusts_it_for(issuer: str, role: Role) -> None:
    minted = mint_token(signer(issuer), "alice", role, session_id="s1")
    if role in ISSUER_ROLES[issuer]:
        assert verify_token(RING, minted) == Identity("alice", role, "s1")
    else:
        refused = _refused(minted)
        assert refused.reason is Reason.TOKEN_INVALID
        assert refused.message == f"the bearer token's key may not sign {role} tokens"


def test_only_the_operator_signs_admin_tokens_and_the_tournaments_referee_ones() -> None:
    assert {name for name, roles in ISSUER_ROLES.items() if Role.ADMIN in roles} == {
        "operator"}
    assert {name for name, roles in ISSUER_ROLES.items() if Role.REFEREE in roles} == {
        "operator", "tournament"}
    assert ISSUER_ROLES["tournament"] == {Role.SERVICE, Role.REFEREE}
    assert ISSUER_ROLES["accounts"] == {Role.PLAYER}
    assert ISSUER_ROLES["bot"] == ISSUER_ROLES["stats"] == {Role.SERVICE}


def _unsigned(header: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part(header)}.{part(_CLAIMS)}."


STRANGER = TokenSigner.generate("operator", "operator-test")
"""A key nobody trusts, under the kid of a trusted one."""


@pytest.mark.parametrize(("forged", "message"), [
    (jwt.encode(_CLAIMS, OLD_SECRET, algorithm="HS256"), "not signed with EdDSA"),
    (jwt.encode(_CLAIMS, OLD_SECRET, algorithm="HS256", headers={"kid": "operator-test"}),
     "not signed with EdDSA"),
    (_unsigned({"alg": "none", "kid": "operator-test"}), "not signed with EdDSA"),
    (_unsigned({"alg": "none"}), "not signed with EdDSA"),
    (mint_token(TokenSigner.generate("operator", "operator-9"), "alice", Role.ADMIN),
     "a key this server does not trust"),
    (jwt.encode(_CLAIMS, Ed25519PrivateKey.generate(), algorithm="EdDSA"),
     "a key this server does not trust"),  # no kid
    (_unsigned({"alg": "EdDSA", "kid": 7}), "not a valid dast token"),
    (_unsigned({"alg": "EdDSA", "kid": "operator-test"}), "not a valid dast token"),
    (mint_token(STRANGER, "alice", Role.ADMIN), "not a valid dast token"),
])
def test_tokens_of_another_algorithm_or_key_are_refused(forged: str, message: str) -> None:
    refused = _refused(forged)
    assert refused.reason is Reason.TOKEN_INVALID
    assert message in refused.message


@pytest.mark.parametrize("bad", [
    jwt.encode({**_CLAIMS, "role": "root"}, signer("operator").private_key, algorithm="EdDSA",
               headers={"kid": "operator-test"}),
    jwt.encode({**_CLAIMS, "sub": ""}, signer("operator").private_key, algorithm="EdDSA",
               headers={"kid": "operator-test"}),  # no player
    jwt.encode({"sub": "alice", "exp": 2**40}, signer("operator").private_key,
               algorithm="EdDSA", headers={"kid": "operator-test"}),  # not ours
    jwt.encode({**_CLAIMS, "sid": 5}, signer("operator").private_key, algorithm="EdDSA",
               headers={"kid": "operator-test"}),
    "not-a-token", "a.b.c", "",
])
def test_bad_tokens_are_refused(bad: str) -> None:
    assert _refused(bad).reason is Reason.TOKEN_INVALID


def test_an_expired_token_is_refused_as_expired() -> None:
    assert _refused(token("alice", ttl_seconds=-10)).reason is Reason.TOKEN_EXPIRED


def test_rotation_trusts_the_old_and_the_new_key_at_once_then_the_new_only() -> None:
    old, new = generate_token_keys(["lobby"], suffix="1"), generate_token_keys(
        ["lobby"], suffix="2")
    old_token = mint_token(old.signer("lobby"), "g-1")
    during = TokenKeyRing([*old.ring.keys, *new.ring.keys])
    new_token = mint_token(new.signer("lobby"), "g-2", Role.SERVICE)
    assert TokenCache(during).identity(old_token).player_id == "g-1"
    assert TokenCache(during).identity(new_token).player_id == "g-2"
    assert "does not trust" in _refused(old_token, new.ring).message
    assert TokenCache(new.ring).identity(new_token).role is Role.SERVICE
    with pytest.raises(ValueError, match="two keys have the kid 'lobby-1'"):
        TokenKeyRing([*old.ring.keys, *old.ring.keys])


def test_a_cached_token_is_refused_once_it_expires() -> None:
    cache = TokenCache(RING)
    minted = token("alice", ttl_seconds=1)
    assert cache.identity(minted).player_id == "alice"
    time.sleep(1.2)  # exp is whole seconds: now the token has expired
    with pytest.raises(AuthError):
        cache.identity(minted)


def test_the_bearer_scheme_is_read_from_authorization_metadata() -> None:
    assert bearer_of((("x", "y"), ("authorization", "Bearer abc"))) == "abc"
    assert bearer_of((("authorization", b"bearer  abc "),)) == "abc"
    assert bearer_of((("authorization", "Basic abc"),)) is None
    assert bearer_of(None) is None
