"""ID-token verification (services/accounts/oidc.py) against a local identity provider
(tests/support/idp.py): each algorithm, every refusal, key rotation, the refetch limit,
provider outages, static keys, and garbage tokens."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jwt.warnings import InsecureKeyLengthWarning

from services.accounts.oidc import (
    CLOCK_SKEW_SECONDS,
    FAILED_FETCH_RETRY_SECONDS,
    KEYS_MAX_AGE_SECONDS,
    REFETCH_INTERVAL_SECONDS,
    IdentityProviderUnavailable,
    IdTokenRefused,
    IdTokenVerifier,
    OidcError,
    OidcProvider,
    OidcReason,
    UnknownIdentityProvider,
    VerifiedIdentity,
)
from services.platform.errors import status_of
from tests.support.idp import LocalIdp, SigningKey, ec_key, ed25519_key, rsa_key

R = OidcReason


class FakeClock:
    """The verifier's monotonic clock, moved by the test (token times use the wall clock)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def key_pairs() -> dict[str, SigningKey]:
    """Keys made once for the module (an RSA key takes a while): the IdP's and an attacker's."""
    return {key.kid: key for key in (rsa_key("r1"), rsa_key("r2"), ec_key("e1"),
                                     ed25519_key("d1"), rsa_key("attacker"))}


@pytest.fixture
def idp(key_pairs: dict[str, SigningKey]) -> Iterator[LocalIdp]:
    provider = LocalIdp([key_pairs[kid] for kid in ("r1", "e1", "d1")])
    provider.keys["r2"] = key_pairs["r2"]  # held, not yet published
    with provider:
        yield provider


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def verifier(idp: LocalIdp, clock: FakeClock) -> IdTokenVerifier:
    return IdTokenVerifier([idp.provider()], monotonic=clock, jwks_timeout=5.0)


async def refusal(verifier: IdTokenVerifier, token: str, provider: str | None = "idp") -> OidcError:
    """The error ``token`` is refused with (the test fails if it is accepted)."""
    with pytest.raises(OidcError) as caught:
        await verifier.verify(token, provider)
    return caught.value


async def refused(verifier: IdTokenVerifier, token: str, provider: str | None = "idp") -> str:
    """The reason ``token`` is refused with, checking it comes as UNAUTHENTICATED."""
    error = await refusal(verifier, token, provider)
    assert isinstance(error, IdTokenRefused), error
    assert error.code == grpc.StatusCode.UNAUTHENTICATED
    return error.reason


def unknown_kids(idp: LocalIdp, count: int = 50) -> list[str]:
    """Well-signed tokens naming made-up kids."""
    return [idp.mint("r1", headers={"kid": uuid.uuid4().hex}) for _ in range(count)]


async def refused_all(verifier: IdTokenVerifier, tokens: list[str]) -> set[str]:
    """The reasons ``tokens``, verified all at once, are refused with."""
    return set(await asyncio.gather(*(refused(verifier, token) for token in tokens)))


# ---- valid tokens ----


@pytest.mark.parametrize("kid", ["r1", "e1", "d1"], ids=["RS256", "ES256", "EdDSA"])
async def test_valid_token_of_each_algorithm(
    idp: LocalIdp, verifier: IdTokenVerifier, kid: str
) -> None:
    identity = await verifier.verify(idp.mint(kid, sub="abc-123"), "idp")
    assert identity == VerifiedIdentity(provider="idp", subject="abc-123",
                                        email="player@example.test", email_verified=True,
                                        name="Player One")
    assert idp.fetches == 1


async def test_identity_without_profile_claims(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    token = idp.mint("r1", email=None, email_verified=None, name=None)
    assert await verifier.verify(token, "idp") == VerifiedIdentity("idp", "player-1")


@pytest.mark.parametrize(("sent", "seen"), [("true", True), ("false", False), (False, False)])
async def test_email_verified_as_apple_sends_it(
    idp: LocalIdp, verifier: IdTokenVerifier, sent: object, seen: bool
) -> None:
    identity = await verifier.verify(idp.mint("r1", email_verified=sent), "idp")
    assert identity.email_verified is seen


async def test_keys_are_fetched_once_and_cached(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    for kid in ("r1", "e1", "d1", "r1", "e1"):
        await verifier.verify(idp.mint(kid), "idp")
    assert idp.fetches == 1


async def test_concurrent_first_tokens_share_one_fetch(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    tokens = [idp.mint(kid, sub=f"p{n}") for n, kid in enumerate(["r1", "e1", "d1"] * 10)]
    identities = await asyncio.gather(*(verifier.verify(token, "idp") for token in tokens))
    assert [identity.subject for identity in identities] == [f"p{n}" for n in range(30)]
    assert idp.fetches == 1


async def test_audience_list_naming_ours_is_accepted(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    token = idp.mint("r1", aud=["another.app", idp.audience])
    assert (await verifier.verify(token, "idp")).subject == "player-1"


async def test_issuer_alias_is_accepted(idp: LocalIdp, clock: FakeClock) -> None:
    verifier = IdTokenVerifier([idp.provider(issuer_aliases=["idp.example.test"])],
                               monotonic=clock)
    token = idp.mint("r1", iss="idp.example.test")
    assert (await verifier.verify(token)).provider == "idp"


async def test_provider_is_chosen_by_issuer_when_unnamed(
    key_pairs: dict[str, SigningKey], idp: LocalIdp, clock: FakeClock
) -> None:
    other = LocalIdp([key_pairs["d1"]], issuer="https://other.example.test")
    verifier = IdTokenVerifier(
        [idp.provider(), OidcProvider(name="other", issuer=other.issuer,
                                      audiences=(other.audience,),
                                      static_keys=(key_pairs["d1"].public_jwk(),))],
        monotonic=clock)
    assert (await verifier.verify(idp.mint("r1"))).provider == "idp"
    assert (await verifier.verify(other.mint("d1"))).provider == "other"
    assert verifier.provider_names == ("idp", "other")


# ---- the clock skew ----


async def test_expired_token_is_refused(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    now = int(time.time())
    token = idp.mint("r1", iat=now - 3600, exp=now - CLOCK_SKEW_SECONDS - 30)
    assert await refused(verifier, token) == R.ID_TOKEN_EXPIRED


async def test_token_expired_within_the_skew_is_accepted(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    now = int(time.time())
    token = idp.mint("r1", iat=now - 3600, exp=now - CLOCK_SKEW_SECONDS + 30)
    assert (await verifier.verify(token, "idp")).subject == "player-1"


@pytest.mark.parametrize("claim", ["nbf", "iat"])
async def test_token_from_the_future_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, claim: str
) -> None:
    future: dict[str, Any] = {claim: int(time.time()) + CLOCK_SKEW_SECONDS + 60}
    token = idp.mint("r1", **future)
    assert await refused(verifier, token) == R.ID_TOKEN_NOT_YET_VALID


@pytest.mark.parametrize("claim", ["nbf", "iat"])
async def test_token_from_the_future_within_the_skew_is_accepted(
    idp: LocalIdp, verifier: IdTokenVerifier, claim: str
) -> None:
    near: dict[str, Any] = {claim: int(time.time()) + CLOCK_SKEW_SECONDS - 30}
    token = idp.mint("r1", **near)
    assert (await verifier.verify(token, "idp")).subject == "player-1"


# ---- forged and wrong tokens ----


@pytest.mark.parametrize("kid", [None, "r1"])
async def test_alg_none_is_refused_without_fetching_keys(
    idp: LocalIdp, verifier: IdTokenVerifier, kid: str | None
) -> None:
    assert await refused(verifier, idp.forge_none(kid)) == R.ID_TOKEN_ALGORITHM_REFUSED
    assert idp.fetches == 0


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
async def test_hmac_signed_with_the_rsa_public_key_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, alg: str
) -> None:
    # The key-confusion attack: the public key's PEM, which anyone has, as an HMAC secret.
    token = idp.forge_hmac(idp.keys["r1"].public_pem(), kid="r1", alg=alg)
    assert await refused(verifier, token) == R.ID_TOKEN_ALGORITHM_REFUSED
    assert idp.fetches == 0


async def test_hmac_signed_with_the_jwk_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    secret = json.dumps(idp.keys["r1"].public_jwk()).encode()
    assert await refused(verifier, idp.forge_hmac(secret, kid="r1")) == \
        R.ID_TOKEN_ALGORITHM_REFUSED


@pytest.mark.parametrize("alg", ["RS512", "PS256", "ES384", "ES256K", "Ed25519", 7, None])
async def test_other_algorithms_are_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, alg: object
) -> None:
    token = idp.forge_header(idp.keys["r1"], {"alg": alg, "kid": "r1"})
    assert await refused(verifier, token) == R.ID_TOKEN_ALGORITHM_REFUSED


async def test_algorithm_the_provider_does_not_allow_is_refused(
    idp: LocalIdp, clock: FakeClock
) -> None:
    verifier = IdTokenVerifier([idp.provider(algorithms=["RS256"])], monotonic=clock)
    assert await refused(verifier, idp.mint("d1")) == R.ID_TOKEN_ALGORITHM_REFUSED
    assert (await verifier.verify(idp.mint("r1"), "idp")).subject == "player-1"


async def test_header_algorithm_must_be_the_keys(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    # Signed with the EC key, but naming the RSA key: the key decides the algorithm.
    token = idp.forge_header(idp.keys["e1"], {"alg": "ES256", "kid": "r1"})
    error = await refusal(verifier, token)
    assert error.reason == R.ID_TOKEN_ALGORITHM_REFUSED
    assert "RS256" in error.message


async def test_wrong_issuer_is_refused(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    token = idp.mint("r1", iss="https://evil.example.test")
    assert await refused(verifier, token) == R.ID_TOKEN_WRONG_ISSUER


@pytest.mark.parametrize("aud", ["another.app", ["another.app", "third.app"], 42])
async def test_wrong_audience_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, aud: object
) -> None:
    assert await refused(verifier, idp.mint("r1", aud=aud)) == R.ID_TOKEN_WRONG_AUDIENCE


@pytest.mark.parametrize("sub", [None, "", 1234, ["a"], "x" * 256, "line\nbreak"])
async def test_token_without_a_proper_subject_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, sub: object
) -> None:
    error = await refusal(verifier, idp.mint("r1", sub=sub))
    assert error.reason == R.ID_TOKEN_INVALID
    assert "sub" in error.message


@pytest.mark.parametrize("claim", ["exp", "iat", "iss", "aud"])
async def test_token_missing_a_required_claim_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, claim: str
) -> None:
    error = await refusal(verifier, idp.mint("r1", **{claim: None}))
    assert error.reason == R.ID_TOKEN_INVALID
    assert claim in error.message


@pytest.mark.parametrize(("claim", "value"), [
    ("exp", str(int(time.time()) + 600)), ("exp", True), ("iat", "now"), ("nbf", [1]),
    ("email", 5), ("name", "n" * 2000), ("email_verified", "yes"),
])
async def test_claims_of_the_wrong_type_are_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, claim: str, value: object
) -> None:
    claims: dict[str, Any] = {claim: value}
    assert await refused(verifier, idp.mint("r1", **claims)) == R.ID_TOKEN_INVALID


async def test_tampered_claims_are_refused(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    header, _, signature = idp.mint("r1", sub="player-1").split(".")
    claims = base64.urlsafe_b64encode(json.dumps(idp.claims(sub="admin")).encode())
    token = f"{header}.{claims.rstrip(b'=').decode()}.{signature}"
    error = await refusal(verifier, token)
    assert error.reason == R.ID_TOKEN_INVALID
    assert "signature" in error.message


async def test_token_signed_by_another_key_under_a_published_kid_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, key_pairs: dict[str, SigningKey]
) -> None:
    token = idp.forge_header(key_pairs["attacker"], {"alg": "RS256", "kid": "r1"})
    assert await refused(verifier, token) == R.ID_TOKEN_INVALID


async def test_token_signed_with_a_short_rsa_key_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    idp.publish(rsa_key("short", bits=1024))
    with pytest.warns(InsecureKeyLengthWarning):  # PyJWT signs, warning
        token = idp.mint("short")
    error = await refusal(verifier, token)
    assert error.reason == R.ID_TOKEN_INVALID
    assert "1024" in error.message


async def test_key_embedded_in_the_header_is_ignored(
    idp: LocalIdp, verifier: IdTokenVerifier, key_pairs: dict[str, SigningKey]
) -> None:
    attacker = key_pairs["attacker"]
    header = {"alg": "RS256", "kid": "attacker", "jwk": attacker.public_jwk(),
              "jku": "http://127.0.0.1:9/keys"}
    assert await refused(verifier, idp.forge_header(attacker, header)) == \
        R.ID_TOKEN_UNKNOWN_KEY


@pytest.mark.parametrize(("kid", "reason"), [
    (None, R.ID_TOKEN_UNKNOWN_KEY), ("", R.ID_TOKEN_UNKNOWN_KEY), (17, R.ID_TOKEN_INVALID),
])
async def test_token_naming_no_key_is_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, kid: object, reason: OidcReason
) -> None:
    header: dict[str, Any] = {"alg": "RS256"} if kid is None else {"alg": "RS256", "kid": kid}
    assert await refused(verifier, idp.forge_header(idp.keys["r1"], header)) == reason
    assert idp.fetches == 0


@pytest.mark.parametrize("header", [{"typ": "at+jwt"}, {"crit": ["exp"]}, {"b64": False}])
async def test_tokens_of_other_kinds_are_refused(
    idp: LocalIdp, verifier: IdTokenVerifier, header: dict[str, Any]
) -> None:
    token = idp.forge_header(idp.keys["r1"], {"alg": "RS256", "kid": "r1", **header})
    assert await refused(verifier, token) == R.ID_TOKEN_INVALID


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "x" * 20_000, "é.é.é", "...."])
async def test_garbage_is_refused(verifier: IdTokenVerifier, token: str) -> None:
    assert await refused(verifier, token) == R.ID_TOKEN_INVALID


# ---- providers ----


async def test_unknown_provider_is_refused(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    by_name = await refusal(verifier, idp.mint("r1"), provider="facebook")
    assert isinstance(by_name, UnknownIdentityProvider)
    assert by_name.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "facebook" in by_name.message and "idp" in by_name.message
    by_issuer = await refusal(verifier, idp.mint("r1", iss="https://elsewhere.test"), None)
    assert by_issuer.reason == R.UNKNOWN_IDENTITY_PROVIDER
    assert idp.fetches == 0


async def test_static_keys_need_no_fetch(idp: LocalIdp, clock: FakeClock) -> None:
    provider = OidcProvider(name="fixed", issuer=idp.issuer, audiences=(idp.audience,),
                            static_keys=(idp.keys["e1"].public_jwk(),
                                         idp.keys["d1"].public_jwk()))
    verifier = IdTokenVerifier([provider], monotonic=clock)
    assert (await verifier.verify(idp.mint("e1"), "fixed")).provider == "fixed"
    assert (await verifier.verify(idp.mint("d1"))).provider == "fixed"
    assert await refused(verifier, idp.mint("r1"), "fixed") == R.ID_TOKEN_UNKNOWN_KEY
    assert idp.fetches == 0


# ---- key rotation and the refetch limit ----


async def test_key_rotation_needs_no_restart(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    assert (await verifier.verify(idp.mint("r1"), "idp")).subject == "player-1"
    assert idp.fetches == 1
    # The provider publishes r2 and withdraws r1 (and e1, d1): one refetch finds r2.
    idp.rotate(idp.keys["r2"])
    assert (await verifier.verify(idp.mint("r2", sub="after"), "idp")).subject == "after"
    assert idp.fetches == 2
    assert (await verifier.verify(idp.mint("r2"), "idp")).subject == "player-1"
    assert idp.fetches == 2
    # r1 is gone from the keys now held.
    assert await refused(verifier, idp.mint("r1")) == R.ID_TOKEN_UNKNOWN_KEY
    assert idp.fetches == 2


async def test_unknown_kids_refetch_once_per_interval(
    idp: LocalIdp, verifier: IdTokenVerifier, clock: FakeClock
) -> None:
    await verifier.verify(idp.mint("r1"), "idp")
    burst = unknown_kids(idp)
    assert await refused_all(verifier, burst) == {R.ID_TOKEN_UNKNOWN_KEY}
    assert idp.fetches == 2  # the first fetch, then one for the whole burst
    clock.advance(REFETCH_INTERVAL_SECONDS - 1)
    assert await refused(verifier, burst[0]) == R.ID_TOKEN_UNKNOWN_KEY
    assert idp.fetches == 2
    clock.advance(2)
    assert await refused_all(verifier, burst) == {R.ID_TOKEN_UNKNOWN_KEY}
    assert idp.fetches == 3
    # Known keys verify all along, without fetching.
    assert (await verifier.verify(idp.mint("e1"), "idp")).subject == "player-1"
    assert idp.fetches == 3


async def test_burst_of_unknown_kids_before_any_fetch_costs_one(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    assert await refused_all(verifier, unknown_kids(idp)) == {R.ID_TOKEN_UNKNOWN_KEY}
    assert idp.fetches == 1
    # A rotation right after still waits for the interval: at most one fetch per window.
    idp.rotate(idp.keys["r2"])
    assert await refused(verifier, idp.mint("r2")) == R.ID_TOKEN_UNKNOWN_KEY
    assert idp.fetches == 1


async def test_keys_are_fetched_again_when_old(
    idp: LocalIdp, verifier: IdTokenVerifier, clock: FakeClock
) -> None:
    await verifier.verify(idp.mint("r1"), "idp")
    clock.advance(KEYS_MAX_AGE_SECONDS - 1)
    await verifier.verify(idp.mint("r1"), "idp")
    assert idp.fetches == 1
    idp.withdraw("r1")
    clock.advance(2)
    # Fetched again: r1 is withdrawn, so it verifies no more.
    assert await refused(verifier, idp.mint("r1")) == R.ID_TOKEN_UNKNOWN_KEY
    assert idp.fetches == 2


# ---- provider outages ----


@pytest.mark.parametrize("mode", ["error", "garbage", "huge", "redirect", "hang"])
async def test_provider_failing_gives_a_retryable_error(
    idp: LocalIdp, clock: FakeClock, mode: Any
) -> None:
    verifier = IdTokenVerifier([idp.provider()], monotonic=clock, jwks_timeout=1.0)
    idp.mode = mode
    error = await refusal(verifier, idp.mint("r1"))
    assert isinstance(error, IdentityProviderUnavailable)
    assert error.code == grpc.StatusCode.UNAVAILABLE
    assert error.retry_after is not None and error.retry_after >= 1
    assert idp.fetches == 1  # a redirect is not followed
    # Within the retry delay the provider is left alone.
    assert (await refusal(verifier, idp.mint("e1"))).reason == R.IDENTITY_PROVIDER_UNAVAILABLE
    assert idp.fetches == 1
    # It comes back.
    idp.mode = "serve"
    clock.advance(FAILED_FETCH_RETRY_SECONDS)
    assert (await verifier.verify(idp.mint("r1"), "idp")).subject == "player-1"
    assert idp.fetches == 2


async def test_provider_unreachable_gives_a_retryable_error(
    idp: LocalIdp, verifier: IdTokenVerifier
) -> None:
    token = idp.mint("r1")
    idp.stop()
    error = await refusal(verifier, token)
    assert error.reason == R.IDENTITY_PROVIDER_UNAVAILABLE
    assert status_of(error) == (grpc.StatusCode.UNAVAILABLE, "identity_provider_unavailable",
                                error.message)


async def test_refetch_for_a_new_kid_failing_is_retryable(
    idp: LocalIdp, verifier: IdTokenVerifier, clock: FakeClock
) -> None:
    await verifier.verify(idp.mint("r1"), "idp")
    idp.rotate(idp.keys["r2"])
    idp.mode = "error"
    rotated = idp.mint("r2")
    assert (await refusal(verifier, rotated)).reason == R.IDENTITY_PROVIDER_UNAVAILABLE
    assert idp.fetches == 2
    # Within the refetch interval nothing is fetched, yet the kid may well exist: retry.
    clock.advance(FAILED_FETCH_RETRY_SECONDS + 1)
    assert (await refusal(verifier, rotated)).reason == R.IDENTITY_PROVIDER_UNAVAILABLE
    assert (await verifier.verify(idp.mint("r1"), "idp")).subject == "player-1"
    assert idp.fetches == 2
    idp.mode = "serve"
    clock.advance(REFETCH_INTERVAL_SECONDS)
    assert (await verifier.verify(rotated, "idp")).subject == "player-1"
    assert idp.fetches == 3


async def test_keys_held_keep_verifying_while_the_provider_is_down(
    idp: LocalIdp, verifier: IdTokenVerifier, clock: FakeClock
) -> None:
    await verifier.verify(idp.mint("r1"), "idp")
    idp.mode = "error"
    clock.advance(KEYS_MAX_AGE_SECONDS + 1)
    assert (await verifier.verify(idp.mint("r1"), "idp")).subject == "player-1"
    assert idp.fetches == 2  # it tried
    assert (await verifier.verify(idp.mint("e1"), "idp")).subject == "player-1"
    assert idp.fetches == 2
    error = await refusal(verifier, idp.mint("r2"))
    assert error.reason == R.IDENTITY_PROVIDER_UNAVAILABLE


# ---- the service's statuses ----


def test_reasons_are_stable() -> None:
    assert [reason.value for reason in OidcReason] == [
        "id_token_invalid", "id_token_expired", "id_token_not_yet_valid",
        "id_token_wrong_audience", "id_token_wrong_issuer", "id_token_unknown_key",
        "id_token_algorithm_refused", "identity_provider_unavailable",
        "unknown_identity_provider",
    ]


async def test_refusals_map_to_grpc_statuses(idp: LocalIdp, verifier: IdTokenVerifier) -> None:
    error = await refusal(verifier, idp.forge_none())
    assert status_of(error) == (grpc.StatusCode.UNAUTHENTICATED, "id_token_algorithm_refused",
                                error.message)


# ---- garbage ----

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=5,
)
_HEADER_NAMES = st.sampled_from(["alg", "kid", "typ", "crit", "b64", "jwk", "cty", "zip"])
_CLAIM_NAMES = st.sampled_from(["iss", "aud", "sub", "exp", "iat", "nbf", "email",
                                "email_verified", "name"])


def _segment(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


@st.composite
def tokens(draw: st.DrawFn) -> str:
    """Strings near a JWT: text, base64 segments, and JSON headers and claims with the
    registered names holding any JSON value."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.text(max_size=200))
    if kind == 1:
        parts = draw(st.lists(st.binary(max_size=60), min_size=1, max_size=5))
        return ".".join(base64.urlsafe_b64encode(part).rstrip(b"=").decode() for part in parts)
    header = draw(st.dictionaries(_HEADER_NAMES | st.text(max_size=6), _JSON, max_size=5))
    if draw(st.booleans()):
        header["alg"] = draw(st.sampled_from(["RS256", "ES256", "EdDSA", "none", "HS256"]))
        header["kid"] = draw(st.sampled_from(["r1", "e1", "d1", "zz"]))
    claims: Any = draw(st.dictionaries(_CLAIM_NAMES | st.text(max_size=6), _JSON, max_size=8)
                       | _JSON)
    if isinstance(claims, dict) and draw(st.booleans()):
        claims["iss"] = draw(st.sampled_from(["https://idp.example.test", "fixed-issuer"]))
    signature = draw(st.binary(max_size=300))
    text = f"{_segment(header)}.{_segment(claims)}.{_segment(signature.hex())}"
    return text if kind == 2 else text[: draw(st.integers(0, len(text)))]


@pytest.fixture
def fuzz_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def fuzz_verifier(idp: LocalIdp, key_pairs: dict[str, SigningKey]) -> IdTokenVerifier:
    """A provider with a JWKS and one with a static key ("fixed-issuer")."""
    static = OidcProvider(name="fixed", issuer="fixed-issuer", audiences=(idp.audience,),
                          static_keys=(key_pairs["e1"].public_jwk(),))
    return IdTokenVerifier([idp.provider(), static])


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=tokens(), named=st.sampled_from([None, "idp", "fixed"]))
def test_garbage_tokens_are_refused_cleanly(
    fuzz_verifier: IdTokenVerifier, fuzz_loop: asyncio.AbstractEventLoop, token: str,
    named: str | None,
) -> None:
    try:
        fuzz_loop.run_until_complete(fuzz_verifier.verify(token, named))
    except OidcError as error:
        assert error.reason in set(OidcReason)
        assert error.reason != R.IDENTITY_PROVIDER_UNAVAILABLE, error.message
    else:
        pytest.fail(f"accepted {token!r}")
