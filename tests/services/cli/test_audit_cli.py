"""``dast audit GAME_ID|FILE``: the checks of ``dast verify`` on a file (on this machine) or on
a stored game (by the server's AuditService), with what failed and where in a table."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

from typer.testing import CliRunner

from dast.v1 import log_pb2
from engine.core.logformat import dump_jsonl, load_jsonl
from engine.registry import game_of_event
from services.cli import app
from services.platform.auth import Role
from services.platform.keys import LogSigner
from tests.golden_logs import GOLDEN
from tests.services.game.conftest import Embedded, embedded, limiter
from tests.support.tokens import token

__all__ = ["embedded", "limiter"]  # the game service's fixtures, used here too

runner = CliRunner()
SERVER = LogSigner.from_seed(b"cli-audit-tests-server-key-00000")
SERVER_KEY = base64.b64encode(SERVER.public_key).decode()
ENTRIES = load_jsonl(next(m for m in GOLDEN if m.name == "hokm_4p").path.read_text())


def _write(path: Path, entries: list[log_pb2.LogEntry], *, sealed: bool = True) -> Path:
    seal = SERVER.seal("g", entries[-1].event.seq, entries[-1].hash) if sealed else None
    path.write_text(dump_jsonl(entries, seal), encoding="utf-8")
    return path


def _audit(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["audit", *(str(a) for a in args)], terminal_width=200)
    return result.exit_code, result.output


def test_an_untouched_export_is_verified(tmp_path: Path) -> None:
    receipts = tmp_path / "seat0.jsonl"
    receipts.write_text("".join(
        json.dumps({"seq": e.event.seq, "hash": base64.b64encode(e.hash).decode()}) + "\n"
        for e in ENTRIES))
    code, output = _audit(_write(tmp_path / "g.jsonl", ENTRIES), "--public-key", SERVER_KEY,
                          "--receipts", receipts)
    assert code == 0, output
    assert f"{len(ENTRIES)} events" in output
    for check in ("hash chain", "seed commitment", "deals and moves", "seal", "receipts"):
        assert check in output
    assert f"{len(ENTRIES)} of {len(ENTRIES)} receipts match" in output
    assert "verified" in output and "What failed" not in output


def test_an_edited_card_is_named_with_its_seq_and_both_hashes(tmp_path: Path) -> None:
    entries = load_jsonl(dump_jsonl(ENTRIES))
    index = next(i for i, e in enumerate(entries) if e.event.hokm.WhichOneof("kind") ==
                 "card_played")
    entries[index].event.hokm.card_played.card ^= 1
    code, output = _audit(_write(tmp_path / "g.jsonl", entries), "--public-key", SERVER_KEY)
    assert code == 1
    assert "What failed, and where" in output
    assert f"seq {index + 1}: the stored hash does not follow from this event" in output
    assert "NOT verified" in output


def test_a_missing_seal_says_how_to_accept_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", ENTRIES, sealed=False)
    code, output = _audit(path)
    assert code == 1
    assert "the log carries no seal" in output and "pass --unsealed" in output
    code, output = _audit(path, "--unsealed")
    assert code == 0 and "absent (accepted)" in output


def test_unreadable_inputs_exit_with_two(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n")
    assert _audit(garbage)[0] == 2
    assert _audit(tmp_path / "missing" / "file.jsonl")[0] == 2  # neither a file nor an id
    assert _audit("some-game-id")[0] == 2  # a game id needs a token


async def test_a_stored_game_is_audited_by_the_server(embedded: Embedded) -> None:
    game = game_of_event(ENTRIES[0].event)
    embedded.store.create_game("stored", game.GAME_TYPE, ENTRIES)
    player = token("hokm_4p-2", Role.PLAYER)
    code, output = await asyncio.to_thread(
        _audit, "stored", "--token", player, "--server", embedded.address)
    assert code == 0, output
    assert "audited by" in output and "verified" in output
    code, output = await asyncio.to_thread(
        _audit, "nope", "--token", player, "--server", embedded.address)
    assert code == 2 and "NOT_FOUND" in output
