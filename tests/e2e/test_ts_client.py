"""The TypeScript client (clients/ts) under Node against a real ``dast serve``.

The server's access tokens live :data:`ACCESS_TOKEN_SECONDS`, and it trusts an identity
provider this test runs on 127.0.0.1 (:class:`~tests.support.idp.LocalIdp`: keys made here,
its key set served over HTTP). The Node script ``clients/ts/e2e/play_match.ts`` signs in with
an ID token of that provider, creates a table, starts it with bots and plays the whole match
over ``GameService.Play`` streams with the first legal command whenever its seat is to act,
refreshing its access token by itself and renewing it on the open stream. It reaches the
server through a TCP proxy of its own; mid-match its player thinks past the access token's
expiry and then every connection is cut, so its stream must resume with ``after_seq`` on a
refreshed token; it also loses the outcome of one command (its stream drops just before),
so that command must be resent on the next stream with the same command id. Afterwards it
resumes its stored session on a clock an hour behind (the server refuses the expired token,
the client refreshes and sends the call again), and provokes three refusals (no such table, a stale
``expected_seq``, sign-ins over the limit). It prints a JSON summary: its receipts, the
calls it made per method, how often it connected and refreshed, the refusals as its typed
errors decoded them.

This test checks the summary against the server's own sealed log: every event once, in
order, with the hash the server chained (none lost, none repeated across the drop), the
match spanning several access tokens renewed on the stream, the reconnection on a refreshed
token, the duplicate answer, no unary ``SubmitCommand`` or ``Subscribe`` at all, no
``GetView`` except once per (re)connection, the refresh after the server's
``token_expired``, and the reasons and retry delay of the refusals.
``make test`` installs the package (``npm ci``), generates its code and builds it first.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from dast.v1 import accounts_pb2, accounts_pb2_grpc, game_pb2, game_pb2_grpc
from tests.support.idp import LocalIdp, ec_key

pytestmark = pytest.mark.timeout(180)
ACCESS_TOKEN_SECONDS = 2
"""The server's access-token lifetime here (DAST_ACCESS_TOKEN_SECONDS): a match outlives
several tokens."""
PROVIDER = "e2e-idp"
ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "ts"
SCRIPT = CLIENT / "dist" / "e2e" / "play_match.js"
_DAST = Path(sys.executable).with_name("dast")
CUT_AFTER_EVENTS = 10
"""Where the client's connection is cut: early, since a one-round Hand match may end after a
few dozen events (a player who lays the whole hand at once)."""
SERVE = [str(_DAST), "serve"] if _DAST.exists() else [sys.executable, "-m", "services.compose"]


def _require(condition: bool, reason: str) -> None:
    """Fail under CI (the client must be tested there), skip elsewhere with how to fix it."""
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the TypeScript client is required)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    _require(found is not None, "node is not installed (.ci/run installs it)")
    assert found is not None
    _require(SCRIPT.exists(), "clients/ts is not built: run `make ts`")
    return found


@pytest.fixture(scope="module")
def idp() -> Iterator[LocalIdp]:
    """The identity provider whose ID tokens the client signs in with."""
    with LocalIdp([ec_key("e2e-1")]) as provider:
        yield provider


@pytest.fixture(scope="module")
def server_address(tmp_path_factory: pytest.TempPathFactory, idp: LocalIdp) -> Iterator[str]:
    """``dast serve`` with its embedded defaults on a free port, in a process of its own,
    trusting ``idp`` and issuing access tokens of :data:`ACCESS_TOKEN_SECONDS`.

    The client plays at machine speed, far above a person's call rate, so the per-player
    limits are raised, and the per-address limit of the open calls (its refreshes, every
    second or so); everything else is as `make run` starts it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data_dir = tmp_path_factory.mktemp("ts-client-server")
    providers = json.dumps([idp.provider(PROVIDER).model_dump(exclude_none=True)])
    env = {**os.environ, "DAST_LISTEN": f"127.0.0.1:{port}", "DAST_DATA_DIR": str(data_dir),
           "DAST_LOG_LEVEL": "warning", "DAST_LIMIT_CALLS_PER_SECOND": "100000",
           "DAST_LIMIT_CALL_BURST": "100000",
           "DAST_LIMIT_SIGN_INS_PER_MINUTE_PER_ADDRESS": "100000",
           "DAST_ACCESS_TOKEN_SECONDS": str(ACCESS_TOKEN_SECONDS),
           "DAST_OIDC_PROVIDERS": providers}
    server = subprocess.Popen(SERVE, cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", port), timeout=0.5
            ):
                break
            assert server.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def _play(node: str, address: str, game: str, id_token: str, device: str) -> dict[str, Any]:
    result = subprocess.run(
        [node, str(SCRIPT), "--address", address, "--game", game, "--id-token", id_token,
         "--provider", PROVIDER, "--device", device,
         "--cut-after-events", str(CUT_AFTER_EVENTS), "--lose-reply-of-command", "3"],
        cwd=str(CLIENT), capture_output=True, text=True, timeout=150, check=False,
    )
    assert result.returncode == 0, f"the client failed:\n{result.stderr}"
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def _sealed_log(address: str, id_token: str, player_id: str,
                game_id: str) -> game_pb2.ExportLogResponse:
    """The finished match's log as the server stored it, read by the same player: the same
    identity signing in again (a new session) reaches it."""
    with grpc.insecure_channel(address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        reply = accounts.SignInWithIdToken(accounts_pb2.SignInWithIdTokenRequest(
            provider=PROVIDER, id_token=id_token), timeout=10)
        assert reply.player_id == player_id and not reply.created
        game = game_pb2_grpc.GameServiceStub(channel)
        exported: game_pb2.ExportLogResponse = game.ExportLog(
            game_pb2.ExportLogRequest(game_id=game_id),
            metadata=(("authorization", f"Bearer {reply.tokens.access_token}"),), timeout=10)
        return exported


@pytest.mark.parametrize("game", ["hokm", "hand"])
def test_the_ts_client_plays_a_whole_match_across_a_dropped_stream_and_token_expiries(
    node: str, server_address: str, idp: LocalIdp, game: str
) -> None:
    id_token = idp.mint("e2e-1", sub=f"ts-client-e2e-{game}", name=f"TS {game}")
    summary = _play(node, server_address, game, id_token, f"ts-client-e2e-{game}")
    print({key: value for key, value in summary.items() if key != "receipts"})  # on failure
    exported = _sealed_log(server_address, id_token, summary["playerId"], summary["gameId"])

    # The match ran to its end: the server sealed its log; the client saw the final event
    # and nobody left to act.
    assert exported.seal.signature and summary["winners"] and summary["nextToAct"] == []
    # Every event of the seat's stream once, in order, across the drop, each with the hash
    # the server chained: the receipts are exactly the sealed log's.
    log_hashes = [base64.b64encode(entry.hash).decode() for entry in exported.entries]
    assert [seq for seq, _ in summary["receipts"]] == list(range(1, len(log_hashes) + 1))
    assert [digest for _, digest in summary["receipts"]] == log_hashes
    # The stream was cut mid-match and resumed after the last event it had received (events
    # already in the client's buffers when the network went may still be delivered first).
    assert summary["cuts"] == 1 and summary["connections"] >= 2
    assert CUT_AFTER_EVENTS <= summary["resumedAfter"][0] < len(log_hashes)
    # The lost outcome's command was resent with the same command id on the next stream and
    # answered as a duplicate (the cut may have lost another outcome too).
    assert summary["duplicates"] >= 1 and summary["resends"] >= 1 and summary["moves"] > 0
    calls = summary["calls"]
    # The match went over Play alone: its events and its commands on the same streams.
    assert "Subscribe" not in calls and "SubmitCommand" not in calls
    # No GetView but the one that opens each stream: the events say who acts next and what
    # the seat may do. (A reconnection attempt that fails while the connection is still
    # going down opens another stream, so streams may outnumber successful connections by a
    # few; the events are hundreds.)
    assert calls["GetView"] == calls["Play"] >= summary["connections"]
    assert calls["GetView"] <= summary["connections"] + 3
    assert calls["SignInWithIdToken"] == 1 and "SignInGuest" not in calls
    assert calls["CreateTable"] == 1 and calls["StartGame"] == 1
    # The match outlived its first access token: the client refreshed by itself (each
    # refresh's session handed to the app to store), and the stream cut after the token had
    # expired opened again on a refreshed one.
    lifetime_ms = ACCESS_TOKEN_SECONDS * 1000
    assert 0 < summary["accessLifetimeMs"] <= lifetime_ms
    assert summary["playedMs"] > lifetime_ms
    # (a refresh sent as the connection went down fails, and is tried again: a call more)
    assert calls["Refresh"] >= summary["refreshes"] >= 1
    assert summary["sessionsStored"] == 1 + summary["refreshes"]
    assert summary["refreshes"] > summary["refreshesAtCut"] >= 0
    # The open stream was handed the refreshed tokens (PlayRenewal) rather than ended at
    # each expiry: the match outlived several 2-s tokens on few streams.
    assert summary["renewals"] >= 1
    # A stored session resumed with an expired token (on a clock an hour behind): the
    # server refused it as expired, the client refreshed once and sent the call again.
    after_expiry = summary["afterExpiry"]
    assert after_expiry["calls"] == {"GetTable": 1, "Refresh": 1}
    assert after_expiry["refusedAsExpired"] == 1
    assert after_expiry["tableGameId"] == summary["gameId"]
    assert after_expiry["samePlayer"] and after_expiry["refreshed"]
    # Refusals reach the client as typed errors: the code, the ErrorReason enum value the
    # wire's ErrorInfo names, and RetryInfo's delay.
    refusals = summary["refusals"]
    assert refusals["noSuchTable"] == {
        "code": "NotFound", "reason": "TABLE_NOT_FOUND",
        "reasonOnTheWire": "ERROR_REASON_TABLE_NOT_FOUND"}
    assert refusals["staleExpectedSeq"] == {
        "code": "Aborted", "reason": "STALE_EXPECTED_SEQ",
        "reasonOnTheWire": "ERROR_REASON_STALE_EXPECTED_SEQ"}
    over_the_limit = refusals["signInsOverTheLimit"]
    assert over_the_limit["code"] == "ResourceExhausted"
    assert over_the_limit["reason"] == "RATE_LIMITED"
    assert 0 < over_the_limit["retryDelayMs"] <= 60_000
