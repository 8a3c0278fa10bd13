"""The ``dast`` command line: ``sim`` and ``verify`` (issue 2 "CLI")."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dast.v1 import common_pb2, hokm_pb2
from engine import hokm
from engine.core.chain import chain_log
from engine.core.logformat import dump_jsonl
from engine.core.testing import play_match
from engine.hokm.bots import BOTS
from services.cli import app
from services.platform.keys import LogSigner

runner = CliRunner()


def _finished_log(tmp_path: Path) -> Path:
    players = [common_pb2.Player(player_id=f"p{s}", display_name=f"P{s}") for s in range(4)]
    events = play_match(
        hokm,
        hokm_pb2.HokmRules(target_score=3),
        bytes(range(32)),
        players,
        [BOTS["greedy"]] * 4,
        rng_seed=5,
    )
    entries = chain_log(events)
    seal = LogSigner.generate().seal("g1", entries[-1].event.seq, entries[-1].hash)
    path = tmp_path / "game.jsonl"
    path.write_text(dump_jsonl(entries, seal))
    return path


@pytest.mark.parametrize(
    ("args", "seats"),
    [
        (["sim", "hokm", "--variant", "4p"], 4),
        (["sim", "hokm", "--variant", "3p"], 3),
        (["sim", "hokm", "--variant", "2p"], 2),
    ],
)
def test_sim_hokm_plays_matches_and_tallies_wins(args: list[str], seats: int) -> None:
    result = runner.invoke(app, [*args, "--games", "2", "--seed", "3", "--target-score", "3"])
    assert result.exit_code == 0, result.output
    assert "2 matches" in result.output
    assert "greedy" in result.output and "random" in result.output


def test_sim_is_reproducible_from_its_seed() -> None:
    args = ["sim", "hokm", "--games", "2", "--seed", "9", "--target-score", "3"]
    first = runner.invoke(app, args)
    again = runner.invoke(app, args)
    summary = [line for line in first.output.splitlines() if "events" in line]
    assert summary and summary[0].split(" in ")[0] in again.output


def test_sim_hand_plays_two_player_games() -> None:
    result = runner.invoke(app, ["sim", "hand", "--players", "2", "--games", "1", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "1 matches" in result.output


def test_sim_rejects_bad_options() -> None:
    assert runner.invoke(app, ["sim", "hokm", "--variant", "5p"]).exit_code != 0
    assert runner.invoke(app, ["sim", "hokm", "--bots", "nobody"]).exit_code != 0
    assert runner.invoke(app, ["sim", "hand", "--players", "3", "--partnerships"]).exit_code != 0


def test_verify_accepts_a_finished_log(tmp_path: Path) -> None:
    result = runner.invoke(app, ["verify", str(_finished_log(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "verified" in result.output


def test_verify_rejects_an_edited_card(tmp_path: Path) -> None:
    path = _finished_log(tmp_path)
    lines = path.read_text().splitlines()[:-1]  # without the seal
    # Rewrite the first played card of the log and re-chain nothing: the chain breaks.
    for index, line in enumerate(lines):
        entry = json.loads(line)
        played = entry["event"].get("hokm", {}).get("cardPlayed")
        if played is not None:
            played["card"] = (played.get("card", 0) + 1) % 52
            lines[index] = json.dumps(entry)
            break
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1
    assert "FAILED" in result.output


def test_verify_rejects_a_forged_seed_reveal(tmp_path: Path) -> None:
    path = _finished_log(tmp_path)
    lines = path.read_text().splitlines()[:-1]  # without the seal
    last = json.loads(lines[-1])
    last["event"]["hokm"]["matchEnded"]["serverSeed"] = base64.b64encode(bytes(32)).decode()
    lines[-1] = json.dumps(last)
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1
    assert "commitment" in result.output or "hash chain" in result.output


def test_verify_reports_unreadable_files(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("this is not a log\n")
    result = runner.invoke(app, ["verify", str(garbage)])
    assert result.exit_code == 2
    assert "cannot read" in result.output


@pytest.mark.parametrize("score", ["0", "4", "-3", "11"])
def test_sim_refuses_a_target_score_no_table_offers(score: str) -> None:
    result = runner.invoke(app, ["sim", "hokm", "--games", "1", "--target-score", score])
    assert result.exit_code == 2, result.output
    assert "--target-score must be one of 3, 5, 7, 10" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["sim", "hokm", "--variant", "3p", "--target-score", "3"],
        ["sim", "hand", "--players", "4", "--partnerships"],
    ],
)
def test_sim_exports_logs_that_verify(tmp_path: Path, args: list[str]) -> None:
    folder = tmp_path / "logs"
    result = runner.invoke(
        app, [*args, "--games", "2", "--seed", "4", "--export", str(folder)]
    )
    assert result.exit_code == 0, result.output
    logs = sorted(folder.glob("*.jsonl"))
    assert len(logs) == 2
    for log_file in logs:
        verified = runner.invoke(app, ["verify", "--unsealed", str(log_file)])
        assert verified.exit_code == 0, verified.output
        assert "verified" in verified.output


def test_play_refuses_a_partner_without_a_tournament() -> None:
    result = runner.invoke(app, ["play", "--partner", "g-0123456789abcdef",
                                 "--server", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert "--partner goes with --tournament" in result.output
