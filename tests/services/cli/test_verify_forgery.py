"""``dast verify`` against forged logs (docs/security.md "What each check proves").

A forger who rewrites a log can always recompute its hash chain, and an operator can even
replay the whole match with other moves so that the audit of deals and moves passes. What
the forger cannot do: make the server's seal (a third party) or a seat's receipts (the
operator) agree with the rewritten log.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.chain import chain_log
from engine.core.logformat import dump_jsonl
from engine.core.rng import DeterministicRandom
from engine.core.testing import bot_players, play_match
from engine.hokm.bots import BOTS
from services.cli import app
from services.platform.keys import LogSigner

runner = CliRunner()
RULES = hokm_pb2.HokmRules(target_score=2)
SEED = bytes(range(32))
GREEDY = BOTS["greedy"]
SERVER = LogSigner.from_seed(b"s" * 32)
GAME_ID = "g-forgery"


def _match(forge_at: int | None = None) -> list[log_pb2.Event]:
    """A 4-player match of greedy bots; with ``forge_at``, seat 0's ``forge_at``-th card
    play among several choices is another card it held, and the match plays on from there
    as the rules and the bots make it (a forgery the audit cannot tell from a real game)."""
    choices = 0

    def seat_zero(view: hokm_pb2.HokmView, rng: DeterministicRandom) -> Any:
        nonlocal choices
        chosen = GREEDY(view, rng)
        plays = [c for c in view.legal if c.WhichOneof("kind") == "play_card"]
        if len(plays) >= 2:
            choices += 1
            if choices == forge_at:
                return next(c for c in plays if c != chosen)
        return chosen

    return play_match(hokm, RULES, SEED, bot_players(4), [seat_zero, GREEDY, GREEDY, GREEDY], 3)


def _write(path: Path, entries: list[log_pb2.LogEntry], seal: log_pb2.LogSeal | None) -> Path:
    path.write_text(dump_jsonl(entries, seal))
    return path


def _sealed(entries: list[log_pb2.LogEntry], signer: LogSigner = SERVER) -> log_pb2.LogSeal:
    return signer.seal(GAME_ID, entries[-1].event.seq, entries[-1].hash)


def _receipts(path: Path, entries: list[log_pb2.LogEntry]) -> Path:
    """What seat 0 saved while the genuine match ran: every hash it was sent."""
    lines = [json.dumps({"seq": e.event.seq, "hash": base64.b64encode(e.hash).decode()})
             for e in entries]
    path.write_text("\n".join(lines) + "\n")
    return path


def _verify(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["verify", *(str(a) for a in args)])
    return result.exit_code, result.output


SERVER_KEY = base64.b64encode(SERVER.public_key).decode()
GENUINE = chain_log(_match())


@pytest.fixture
def receipts(tmp_path: Path) -> Path:
    return _receipts(tmp_path / "seat0.receipts.jsonl", GENUINE)


def test_a_genuine_log_verifies_against_the_servers_key_and_a_seats_receipts(
    tmp_path: Path, receipts: Path
) -> None:
    path = _write(tmp_path / "game.jsonl", GENUINE, _sealed(GENUINE))
    code, output = _verify(path, "--public-key", SERVER_KEY, "--receipts", receipts)
    assert code == 0, output
    assert f"({len(GENUINE)} of {len(GENUINE)} match)" in output
    assert "verified" in output


def test_a_played_card_changed_and_the_match_replayed_passes_the_audit_but_not_the_seal(
    tmp_path: Path,
) -> None:
    forged = chain_log(_match(forge_at=3))
    assert forged[-1].hash != GENUINE[-1].hash
    # The forger keeps the genuine seal: it names another head.
    path = _write(tmp_path / "forged.jsonl", forged, _sealed(GENUINE))
    code, output = _verify(path, "--public-key", SERVER_KEY)
    assert code == 1
    assert "hash chain       ok" in output and "deals and moves  ok" in output
    assert "seal             FAILED" in output and "another seq or hash" in output


def test_a_forger_without_the_servers_key_cannot_seal_a_forged_log(tmp_path: Path) -> None:
    forged = chain_log(_match(forge_at=3))
    path = _write(tmp_path / "forged.jsonl", forged, _sealed(forged, LogSigner.generate()))
    # Alone, the file's own key vouches for nothing but itself: verify says whose key it is.
    code, output = _verify(path)
    assert code == 0 and "taken from the file itself" in output
    code, output = _verify(path, "--public-key", SERVER_KEY)
    assert code == 1
    assert "another key than --public-key" in output


def test_a_seats_receipts_catch_an_operator_who_reseals_a_forged_log(
    tmp_path: Path, receipts: Path
) -> None:
    forged = chain_log(_match(forge_at=3))
    path = _write(tmp_path / "forged.jsonl", forged, _sealed(forged))  # the server's own key
    code, output = _verify(path, "--public-key", SERVER_KEY)
    assert code == 0, output  # chain, deals, seal: all consistent
    code, output = _verify(path, "--public-key", SERVER_KEY, "--receipts", receipts)
    assert code == 1
    assert "receipts         FAILED" in output
    first_changed = next(i for i, (a, b) in enumerate(zip(GENUINE, forged, strict=False))
                         if a.event != b.event)
    assert f"receipt for seq {first_changed + 1}: the log's hash differs" in output


def test_two_moves_of_a_seat_swapped_and_rechained_are_rejected(
    tmp_path: Path, receipts: Path
) -> None:
    events = [log_pb2.Event() for _ in GENUINE]
    for event, entry in zip(events, GENUINE, strict=True):
        event.CopyFrom(entry.event)
    plays = [e for e in events
             if e.hokm.WhichOneof("kind") == "card_played" and e.hokm.card_played.seat == 1]
    first, second = plays[0].hokm.card_played, plays[1].hokm.card_played
    first.card, second.card = second.card, first.card
    forged = chain_log(events)
    for seal in (_sealed(GENUINE), _sealed(forged)):
        path = _write(tmp_path / "swapped.jsonl", forged, seal)
        code, output = _verify(path, "--public-key", SERVER_KEY, "--receipts", receipts)
        assert code == 1
        assert "hash chain       ok" in output  # recomputed: the chain alone shows nothing
        assert "receipts         FAILED" in output


def test_a_log_without_its_seal_is_rejected_unless_accepted_explicitly(tmp_path: Path) -> None:
    path = _write(tmp_path / "unsealed.jsonl", GENUINE, None)
    code, output = _verify(path)
    assert code == 1
    assert "carries no seal" in output
    code, output = _verify(path, "--unsealed")
    assert code == 0 and "absent (accepted" in output


def test_an_admin_chosen_seed_is_reported(tmp_path: Path) -> None:
    events = [log_pb2.Event() for _ in GENUINE]
    for event, entry in zip(events, GENUINE, strict=True):
        event.CopyFrom(entry.event)
    events[0].hokm.match_started.fairness.server_seed_chosen = True
    chosen = chain_log(events)
    path = _write(tmp_path / "chosen.jsonl", chosen, _sealed(chosen))
    code, output = _verify(path, "--public-key", SERVER_KEY)
    assert code == 0, output
    assert "an admin chose this match's server seed" in output


def test_unreadable_inputs_exit_with_two(tmp_path: Path) -> None:
    path = _write(tmp_path / "game.jsonl", GENUINE, _sealed(GENUINE))
    bad_receipts = tmp_path / "bad.jsonl"
    bad_receipts.write_text("not a receipt\n")
    assert _verify(path, "--receipts", bad_receipts)[0] == 2
    assert _verify(path, "--public-key", "not base64!")[0] == 2
    assert _verify(path, "--public-key", base64.b64encode(b"short").decode())[0] == 2
