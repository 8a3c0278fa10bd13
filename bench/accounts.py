"""Benchmarks of sign-in tokens: what checking a caller's bearer token costs the server, and
how fast players sign in with an identity provider's ID token.

- ``token_check_us_per_call``: microseconds per call of the server's authentication stage
  (:class:`services.platform.auth.TokenCheck` over its
  :class:`~services.platform.auth.TokenCache`, as
  :class:`services.platform.server.DastInterceptor` runs it) for EdDSA tokens verified
  against a ring of six trusted keys, in a realistic mix: ``--callers`` callers, each with
  its own token (signed by the accounts service's key, a player's access token) sent with
  every call, the calls taking turns between the callers, so every call after a caller's
  first is a cached one. ``hmac_token_check_us_per_call`` is the baseline of the same run:
  the same stage and the same calls with the HS256 tokens dast used before (one shared
  secret, the same cache); ``token_check_vs_hmac`` is their ratio (goal at most 1.5). The
  two take turns in slices, so that other work on the machine weighs on both alike.
- ``token_verify_us`` and ``hmac_token_verify_us``: one cold verification (no cache: the
  first call of a caller, or a token seen after its cache entry went), for each.
- ``id_token_sign_ins_per_s``: ``SignInWithIdToken`` calls answered per second by the whole
  backend in this process (:func:`services.compose.running_stack`, its store in memory, the
  per-caller limits lifted) over gRPC on loopback, each the first sign-in of its identity (a
  new player and a session), with the RS256 ID tokens of a local identity provider
  (:class:`tests.support.idp.LocalIdp`, its key set served over HTTP on 127.0.0.1):
  ``cached_keys`` with the provider's keys held (``--concurrency`` calls in flight), and
  ``cold`` with the keys fetched from the JWKS URL for every sign-in (a verifier that holds
  none before each call, as after a start or once the keys are 15 minutes old; one call at
  a time). ``jwks_fetches`` counts the fetches the provider served during the cold run.

Usage: ``python bench/accounts.py --json [--callers 1000] [--calls 200000]
[--sign-ins 400] [--cold-sign-ins 100] [--concurrency 8]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc
import jwt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import print_figures
from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.accounts.oidc import IdTokenVerifier
from services.compose import StackOptions, running_stack
from services.platform.auth import (
    AuthError,
    Identity,
    Role,
    TokenCache,
    TokenCheck,
    mint_token,
    verify_token,
)
from services.platform.limits import MACHINE_SPEED
from services.platform.logging import configure_logging
from services.platform.token_keys import generate_token_keys
from tests.support.idp import LocalIdp, rsa_key

HMAC_SECRET: Final = "bench-hmac-secret-0123456789abcdef0123456789abcdef"
SLICES: Final = 10
METHOD: Final = "/dast.v1.GameService/GetView"


class HmacTokenCache(TokenCache):
    """The baseline: the same cache over the HS256 check dast made before its key ring."""

    def _check(self, token: str) -> tuple[Identity, int]:
        try:
            claims = jwt.decode(token, HMAC_SECRET, algorithms=["HS256"], issuer="dast",
                                options={"require": ["sub", "exp", "iss"]})
        except jwt.PyJWTError as exc:
            raise AuthError("the bearer token is not a valid dast token") from exc
        return Identity(claims["sub"], Role(claims.get("role", Role.PLAYER)),
                        claims.get("sid")), int(claims["exp"])


@dataclass(frozen=True)
class Call:
    """What the interceptor sees of a call (grpc.HandlerCallDetails)."""

    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


def _hmac_token(player_id: str) -> str:
    now = int(time.time())
    return jwt.encode({"sub": player_id, "role": "player", "iss": "dast", "iat": now,
                       "exp": now + 3600, "sid": "s"}, HMAC_SECRET, algorithm="HS256")


def _calls(tokens: list[str]) -> list[Call]:
    return [Call(METHOD, (("user-agent", "grpc-python"), ("authorization", f"Bearer {token}")))
            for token in tokens]


def _run(check: TokenCheck, calls: list[Call], count: int) -> float:
    """Seconds for ``count`` calls taking turns between ``calls``."""
    identify, size = check.identify, len(calls)
    started = time.perf_counter()
    for index in range(count):
        identify(calls[index % size])
    return time.perf_counter() - started


def measure_token_check(args: argparse.Namespace) -> dict[str, Any]:
    """See the module's docstring."""
    keys = generate_token_keys(suffix="bench")
    accounts = keys.signer("accounts")
    players = [f"g-{number:016x}" for number in range(args.callers)]
    ours = _calls([mint_token(accounts, player, ttl_seconds=3600, session_id="s")
                   for player in players])
    theirs = _calls([_hmac_token(player) for player in players])
    check = TokenCheck(keys.ring)
    baseline = TokenCheck(keys.ring, tokens=HmacTokenCache(keys.ring))
    for stage, calls in ((check, ours), (baseline, theirs)):  # warm: every caller once
        _run(stage, calls, len(calls))
    assert check.identify(ours[0]) == baseline.identify(theirs[0])
    per_slice = max(args.calls // SLICES, len(ours))
    spent = {"ours": 0.0, "hmac": 0.0}
    for _ in range(SLICES):
        spent["ours"] += _run(check, ours, per_slice)
        spent["hmac"] += _run(baseline, theirs, per_slice)
    total = per_slice * SLICES
    ours_us, hmac_us = (spent["ours"] / total * 1e6, spent["hmac"] / total * 1e6)
    cold = [mint_token(accounts, f"cold-{n}", ttl_seconds=3600) for n in range(args.cold)]
    cold_hmac = [_hmac_token(f"cold-{n}") for n in range(args.cold)]
    started = time.perf_counter()
    for token in cold:
        verify_token(keys.ring, token)
    verify_us = (time.perf_counter() - started) / len(cold) * 1e6
    hmac_cache = HmacTokenCache(keys.ring)
    started = time.perf_counter()
    for token in cold_hmac:
        hmac_cache.identity(token)
    hmac_verify_us = (time.perf_counter() - started) / len(cold_hmac) * 1e6
    return {
        "token_check_us_per_call": round(ours_us, 3),
        "hmac_token_check_us_per_call": round(hmac_us, 3),
        "token_check_vs_hmac": round(ours_us / hmac_us, 3),
        "token_verify_us": round(verify_us, 1),
        "hmac_token_verify_us": round(hmac_verify_us, 1),
        "callers": args.callers, "calls": total,
    }


async def _sign_ins(accounts: accounts_pb2_grpc.AccountsServiceStub, tokens: list[str],
                    concurrency: int) -> float:
    """Seconds to sign in with every one of ``tokens``, ``concurrency`` calls in flight."""
    queue = iter(tokens)

    async def worker() -> None:
        for token in queue:
            reply = await accounts.SignInWithIdToken(
                accounts_pb2.SignInWithIdTokenRequest(provider="bench", id_token=token),
                timeout=30)
            assert reply.created and reply.tokens.access_token

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def measure_id_token_sign_ins(args: argparse.Namespace) -> dict[str, Any]:
    """See the module's docstring."""
    configure_logging("warning", json=True)  # not a line per player created
    keys = generate_token_keys(suffix="bench")
    with LocalIdp([rsa_key("bench-1")]) as idp:
        provider = idp.provider("bench")
        providers = provider.model_dump_json(exclude_none=True)
        options = StackOptions(bots=False, timers=False, presence=False,
                               oidc_providers=f"[{providers}]")
        async with running_stack(keys, options=options, limits=MACHINE_SPEED) as run, \
                grpc.aio.insecure_channel(run.address) as channel:
            accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
            service = run.stack.accounts
            assert service is not None
            mint = idp.mint
            await _sign_ins(accounts, [mint("bench-1", sub="warm-up")], 1)  # keys fetched
            cached = [mint("bench-1", sub=f"cached-{n}") for n in range(args.sign_ins)]
            cached_s = await _sign_ins(accounts, cached, args.concurrency)
            fetched_before = idp.fetches
            cold_s = 0.0
            for number in range(args.cold_sign_ins):
                service.verifier = IdTokenVerifier([provider])  # holds no keys yet
                cold_s += await _sign_ins(accounts, [mint("bench-1", sub=f"cold-{number}")], 1)
            fetches = idp.fetches - fetched_before
    return {
        "id_token_sign_ins_per_s": {
            "cached_keys": round(args.sign_ins / cached_s, 1),
            "cold": round(args.cold_sign_ins / cold_s, 1),
        },
        "id_token_sign_ins": {"cached_keys": args.sign_ins, "cold": args.cold_sign_ins},
        "jwks_fetches": fetches, "concurrency": args.concurrency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--callers", type=int, default=1_000,
                        help="callers, each with its own cached token")
    parser.add_argument("--calls", type=int, default=200_000, help="calls timed, in all")
    parser.add_argument("--cold", type=int, default=2_000,
                        help="tokens verified once each for the cold costs")
    parser.add_argument("--sign-ins", type=int, default=400,
                        help="ID-token sign-ins timed with the provider's keys held")
    parser.add_argument("--cold-sign-ins", type=int, default=100,
                        help="ID-token sign-ins timed, each fetching the provider's keys")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="ID-token sign-ins in flight at once (with the keys held)")
    args = parser.parse_args()
    figures = measure_token_check(args)
    figures.update(asyncio.run(measure_id_token_sign_ins(args)))
    print_figures(figures, as_json=args.json, width=28)


if __name__ == "__main__":
    main()
