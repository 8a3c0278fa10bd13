"""The TypeScript client (clients/ts) under Node against a real ``dast serve``.

The Node script ``clients/ts/e2e/play_match.ts`` signs in as a guest, creates a table,
starts it with bots and plays the whole match with the first legal command whenever its
seat is to act. It reaches the server through a TCP proxy of its own and cuts every
connection mid-match, so its event stream must resume with ``after_seq``; it also loses the
reply of one command, so that command must be resent with the same command id; and it
provokes three refusals (no such table, a stale ``expected_seq``, sign-ins over the limit).
It prints a JSON summary: its receipts, the calls it made per method, how often it
connected, the refusals as its typed errors decoded them.

This test checks the summary against the server's own sealed log: every event once, in
order, with the hash the server chained (none lost, none repeated across the drop), the
reconnection, the duplicate answer, no ``GetView`` except once per (re)connection, and the
reasons and retry delay of the refusals.
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

from dast.v1 import game_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc

pytestmark = pytest.mark.timeout(180)
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
def server_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dast serve`` with its embedded defaults on a free port, in a process of its own.

    The client plays at machine speed, far above a person's call rate, so the per-player
    limits are raised; everything else is as `make run` starts it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data_dir = tmp_path_factory.mktemp("ts-client-server")
    env = {**os.environ, "DAST_LISTEN": f"127.0.0.1:{port}", "DAST_DATA_DIR": str(data_dir),
           "DAST_LOG_LEVEL": "warning", "DAST_LIMIT_CALLS_PER_SECOND": "100000",
           "DAST_LIMIT_CALL_BURST": "100000"}
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


def _play(node: str, address: str, game: str, device: str) -> dict[str, Any]:
    result = subprocess.run(
        [node, str(SCRIPT), "--address", address, "--game", game, "--device", device,
         "--cut-after-events", str(CUT_AFTER_EVENTS), "--lose-reply-of-command", "3"],
        cwd=str(CLIENT), capture_output=True, text=True, timeout=150, check=False,
    )
    assert result.returncode == 0, f"the client failed:\n{result.stderr}"
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def _sealed_log(address: str, device: str, game_id: str) -> game_pb2.ExportLogResponse:
    """The finished match's log as the server stored it, read by the same guest."""
    with grpc.insecure_channel(address) as channel:
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        reply = lobby.SignInGuest(lobby_pb2.SignInGuestRequest(device_id=device), timeout=10)
        game = game_pb2_grpc.GameServiceStub(channel)
        exported: game_pb2.ExportLogResponse = game.ExportLog(
            game_pb2.ExportLogRequest(game_id=game_id),
            metadata=(("authorization", f"Bearer {reply.token}"),), timeout=10)
        return exported


@pytest.mark.parametrize("game", ["hokm", "hand"])
def test_the_ts_client_plays_a_whole_match_across_a_dropped_stream(
    node: str, server_address: str, game: str
) -> None:
    device = f"ts-client-e2e-{game}"
    summary = _play(node, server_address, game, device)
    print({key: value for key, value in summary.items() if key != "receipts"})  # on failure
    exported = _sealed_log(server_address, device, summary["gameId"])

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
    # The lost reply was resent with the same command id and answered as a duplicate (the
    # cut may have lost another reply too).
    assert summary["duplicates"] >= 1 and summary["resends"] >= 1 and summary["moves"] > 0
    calls = summary["calls"]
    # No GetView but the one that opens each stream: the events and the commands' replies
    # say who acts next and what the seat may do. (A reconnection attempt that fails while
    # the connection is still going down opens another stream, so streams may outnumber
    # successful connections by a few; the events are hundreds.)
    assert calls["GetView"] == calls["Subscribe"] >= summary["connections"]
    assert calls["GetView"] <= summary["connections"] + 3
    assert calls["SignInGuest"] == 1 and calls["CreateTable"] == 1 and calls["StartGame"] == 1
    # One SubmitCommand per move, per resend, and the one stale probe below (a stale move
    # is one too).
    assert calls["SubmitCommand"] == (
        summary["moves"] + summary["stale"] + summary["resends"] + 1)
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
