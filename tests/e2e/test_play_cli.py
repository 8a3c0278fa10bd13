"""``dast play`` driven in a real pseudo-terminal through a whole Hokm match (issue 5).

The server (lobby, game, bots: the embedded backend) and the clients are child processes;
each client runs on a pty and the test answers its prompts the way a person would.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from engine.core.protocol import BOT_LEVELS
from services.cli import app
from services.platform.auth import mint_token
from services.platform.token_keys import OPERATOR, embedded_token_keys

pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[2]
_DAST = Path(sys.executable).with_name("dast")
PLAY = [str(_DAST), "play"] if _DAST.exists() else [sys.executable, "-m", "services.cli.play"]
"""``dast play`` (the console script; the module itself where it is not installed)."""


@pytest.fixture
def server_address(tmp_path: Path) -> Iterator[str]:
    """``python -m services.compose`` (what ``dast serve`` runs) serving every service from a
    child process, so that spawning the clients never forks a process busy with gRPC."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DAST_LISTEN": f"127.0.0.1:{port}", "DAST_SERVICES": "all",
           "DAST_DATA_DIR": str(tmp_path / "server"), "DAST_LOG_LEVEL": "warning"}
    server = subprocess.Popen([sys.executable, "-m", "services.compose"], cwd=str(ROOT), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
            server.wait()


def _spawn(server_address: str, home: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "HOME": str(home)}
    home.mkdir(exist_ok=True)
    return pexpect.spawn(
        PLAY[0], [*PLAY[1:], "--server", server_address, *args],
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(60, 250),
    )


def test_two_people_play_a_private_table_with_two_bots(
    server_address: str, tmp_path: Path
) -> None:
    host = _spawn(server_address, tmp_path / "host", "--name", "Host", "--private",
                  "--target", "3", "--turn-seconds", "0")
    friend: pexpect.spawn | None = None
    try:
        host.expect(r"invite code (\w+)")
        code = host.match.group(1)
        host_id = _signed_in_as("Host", host.before)
        host.expect("lobby> ")
        friend = _spawn(server_address, tmp_path / "friend", "--name", "Friend",
                        "--invite", code)
        friend.expect("Waiting for the host")
        friend_id = _signed_in_as("Friend", friend.before)
        host.sendline("start")
        finished = {"host": False, "friend": False}
        outputs = {"host": "", "friend": ""}
        while not all(finished.values()):
            for name, child in (("host", host), ("friend", friend)):
                if finished[name]:
                    continue
                index = child.expect(["play> ", r"rematch\? \[y/N\] ", pexpect.EOF,
                                      pexpect.TIMEOUT], timeout=0.05)
                outputs[name] += child.before if isinstance(child.before, str) else ""
                if index == 0:
                    child.sendline("1")
                elif index == 1:
                    child.sendline("n")
                elif index == 2:
                    finished[name] = True
    finally:
        host.close(force=True)
        if friend is not None:
            friend.close(force=True)
    assert host.exitstatus == 0 and friend is not None and friend.exitstatus == 0
    # Both people sat at the table, under the names their tokens carry, and saw the same
    # match end.
    assert host_id != friend_id
    for text in outputs.values():
        assert "1 Friend" in text and "0 Host" in text and "Match over:" in text


def _signed_in_as(name: str, text: object) -> str:
    """The player id ``dast play`` says it signed in as."""
    found = re.search(rf"Signed in as {name} \(([^)]+)\)", str(text))
    assert found is not None, text
    return found.group(1)


def test_dast_play_plays_a_whole_hokm_match_in_a_terminal(
    server_address: str, tmp_path: Path
) -> None:
    # docs/rules/hokm.md "What the app adds": the host starts, the empty seats get bots.
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "HOME": str(tmp_path)}
    receipts_dir = tmp_path / "receipts"
    child = pexpect.spawn(
        PLAY[0],
        [*PLAY[1:], "--server", server_address, "--name", "Pty", "--target", "3",
         "--turn-seconds", "0", "--receipts", str(receipts_dir / "{game}.jsonl")],
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(60, 250),
    )
    transcript: list[str] = []
    try:
        child.expect("lobby> ")
        transcript.append(child.before)
        child.sendline("start")
        moves = 0
        while True:
            index = child.expect(["play> ", r"rematch\? \[y/N\] ", pexpect.EOF])
            transcript.append(child.before)
            if index == 0:
                child.sendline("1")  # the first legal move
                moves += 1
            elif index == 1:
                child.sendline("n")
            else:
                break
    finally:
        child.close(force=True)
    text = "".join(transcript)
    assert child.exitstatus == 0, text[-2000:]
    assert "Signed in as Pty" in text
    # At least a whole round: it ends once a team has taken 7 tricks, and the person plays a
    # card in each. (A target of 3 can fall in one round: a hakem kot scores 3.)
    assert moves >= 7
    # The screen: seats with the bots, trump, scores, the hand and the legal moves.
    assert "[bot]" in text and "Trump:" in text and "Your hand:" in text and "Legal:" in text
    assert "takes trick" in text
    # The host may seat a bot of every level; partners count together (four players).
    assert f"bot SEAT [{'|'.join(BOT_LEVELS)}]" in text
    assert "Scores: team 0+2" in text and "Tricks: team 0+2" in text
    assert re.search(r"Match over: you (win|lose) · final team 0\+2", text)
    assert "Match over:" in text
    # The home directory now holds the guest's device id and, for this server, the device
    # secret its first sign-in returned (the same guest next time), readable by its owner only.
    assert (tmp_path / ".dast" / "device-id").read_text().startswith("cli-")
    secrets_file = tmp_path / ".dast" / "device-secrets.json"
    assert len(json.loads(secrets_file.read_text())[server_address]) == 43
    assert secrets_file.stat().st_mode & 0o777 == 0o600

    # The seat kept its receipts (docs/security.md): the server's export of the match
    # verifies against them, every one of them matching.
    [receipts] = receipts_dir.glob("*.jsonl")
    # (the console wraps the long path: compare without line breaks)
    assert f"Keeping receipts in {receipts}" in text.replace("\r\n", "")
    player = re.search(r"Signed in as Pty \(([^)]+)\)", text)
    assert player is not None
    operator = embedded_token_keys(tmp_path / "server").signer(OPERATOR)  # the server's own
    cli = ["--server", server_address, "--token", mint_token(operator, player.group(1))]
    log_file = tmp_path / "match.jsonl"
    exported = CliRunner().invoke(app, ["export", receipts.stem, "-o", str(log_file), *cli])
    assert exported.exit_code == 0 and "sealed" in exported.output, exported.output
    kept = len(receipts.read_text().splitlines())
    assert kept == len(log_file.read_text().splitlines()) - 1  # every event, once; the seal
    verified = CliRunner().invoke(app, ["verify", str(log_file), "--receipts", str(receipts)])
    assert verified.exit_code == 0, verified.output
    assert f"({kept} of {kept} match)" in verified.output
