"""``dast play`` driven in a real pseudo-terminal through a whole Hokm match (issue 5).

The server (lobby, game, bots) runs in a thread of the test process; the client is a child
process on a pty, answering its prompts the way a person would.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pexpect
import pytest

from tests.e2e.helpers import stack

pytestmark = [pytest.mark.usefixtures("open_sign_in"), pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server_address() -> Iterator[str]:
    """A play stack serving from its own event loop in a thread."""
    loop = asyncio.new_event_loop()
    address: Future[str] = Future()
    stop = threading.Event()

    async def serve() -> None:
        async with stack(timers=False) as run:
            address.set_result(run.address)
            while not stop.is_set():
                await asyncio.sleep(0.05)

    def main() -> None:
        try:
            loop.run_until_complete(serve())
        except BaseException as error:  # surface start-up failures to the test
            if not address.done():
                address.set_exception(error)
        finally:
            loop.close()

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    yield address.result(timeout=30)
    stop.set()
    thread.join(timeout=30)


def _spawn(server_address: str, home: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "HOME": str(home)}
    home.mkdir(exist_ok=True)
    return pexpect.spawn(
        sys.executable, ["-m", "services.cli.play", "--server", server_address, *args],
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
        host.expect("lobby> ")
        friend = _spawn(server_address, tmp_path / "friend", "--name", "Friend",
                        "--invite", code)
        friend.expect("Waiting for the host")
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
    # Both people sat at the table and saw the same match end.
    for text in outputs.values():
        assert "1 Friend" in text and "0 Host" in text and "Match over:" in text


def test_dast_play_plays_a_whole_hokm_match_in_a_terminal(
    server_address: str, tmp_path: Path
) -> None:
    # rules/hokm.md "What the app adds": the host starts, the empty seats get bots.
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "HOME": str(tmp_path)}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "services.cli.play", "--server", server_address, "--name", "Pty",
         "--target", "3", "--turn-seconds", "0"],
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
    assert moves >= 13  # at least a whole round of tricks
    # The screen: seats with the bots, trump, scores, the hand and the legal moves.
    assert "[bot]" in text and "Trump:" in text and "Your hand:" in text and "Legal:" in text
    assert "takes trick" in text
    assert "Match over:" in text
    # The home directory now holds the guest's device id (the same guest next time).
    assert (tmp_path / ".dast" / "device-id").read_text().startswith("cli-")
