"""``dast arena``: duplicate seatings, the statistics it prints, the files it writes."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dast.v1 import hokm_pb2
from services.cli import app, arena
from services.cli.arena import percentile, play_set, seatings, summarize, wilson
from services.cli.arena_journal import journal_path
from services.cli.arena_records import ArenaSetup, SetResult

runner = CliRunner()


def test_every_seating_gives_each_level_each_seat() -> None:
    for seats in (2, 3, 4):
        rows = seatings(seats)
        for seat in range(seats):
            assert {row[seat] for row in rows} == {"a", "b"}
    assert seatings(2) == [("a", "b"), ("b", "a")]


def test_wilson_interval_matches_the_textbook_values() -> None:
    # 8 successes in 10 trials: the 95 % Wilson interval is 0.490–0.943.
    low, high = wilson(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(0, 20)
    assert low == 0.0 and math.isclose(high, 0.161, abs_tol=1e-3)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile(values, 1.0)) == (
        50.0, 95.0, 100.0
    )
    assert percentile([], 0.5) == 0.0


def test_a_set_plays_the_same_deal_in_both_seatings_and_is_reproducible() -> None:
    rules = hokm_pb2.HokmRules(target_score=1, turn_seconds=0).SerializeToString()
    setup = ArenaSetup("hokm", rules, 4, "greedy", "random", 0, 1, seed=5)
    first, again = play_set(setup, 0), play_set(setup, 0)
    assert [m.seating for m in first.matches] == seatings(4)
    assert [(m.a_won, m.a_points) for m in first.matches] == [
        (m.a_won, m.a_points) for m in again.matches
    ]
    for match in first.matches:
        assert match.a_won != match.b_won  # four players: one team wins each match
    summary = summarize(setup, [first], seconds=1.0)
    assert summary["matches"] == 2 and len(summary["running"]) == 2
    assert summary["levels"]["a"]["decisions"] == len(first.decision_ms["a"]) > 0


@pytest.mark.parametrize(
    ("args", "game"),
    [
        (["hokm", "--variant", "3p", "--target-score", "1"], "hokm"),
        (["hokm", "--variant", "2p", "--target-score", "1"], "hokm"),
        (["hand", "--players", "2", "--rounds", "1"], "hand"),
    ],
)
def test_arena_prints_the_figures_and_writes_json_and_svg(
    args: list[str], game: str, tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    result = runner.invoke(app, [
        "arena", *args, "--games", "1", "--seed", "2", "--budget-ms", "0", "--samples", "2",
        "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    assert "95 % CI" in result.output and "ms p95" in result.output
    summary = json.loads(out.read_text())
    low, high = summary["a_win_rate_ci95"]
    assert 0.0 <= low <= summary["a_win_rate"] <= high <= 1.0
    assert summary["setup"]["game"] == game and summary["setup"]["level_a"] == "expert"
    assert summary["levels"]["a"]["decisions"] > 0
    assert out.with_suffix(".svg").read_text().startswith("<svg")


def test_arena_refuses_an_unknown_level() -> None:
    result = runner.invoke(app, ["arena", "hokm", "--a", "grandmaster", "--games", "1"])
    assert result.exit_code != 0
    assert "choose a level" in result.output


def test_arena_plays_sets_in_parallel_processes(tmp_path: Path) -> None:
    out = tmp_path / "jobs.json"
    result = runner.invoke(app, [
        "arena", "hokm", "--a", "greedy", "--b", "random", "--games", "2",
        "--target-score", "1", "--jobs", "2", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["matches"] == 4


def _hokm_run(out: Path, *extra: str, games: int = 3) -> tuple[int, str]:
    result = runner.invoke(app, [
        "arena", "hokm", "--a", "greedy", "--b", "random", "--games", str(games),
        "--target-score", "1", "--seed", "4", "--out", str(out), *extra,
    ])
    return result.exit_code, result.output


def _count_sets_played(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    played: list[int] = []
    real = arena.play_set

    def counting(setup: ArenaSetup, index: int) -> SetResult:
        played.append(index)
        return real(setup, index)

    monkeypatch.setattr(arena, "play_set", counting)
    return played


def test_every_finished_set_is_journaled_beside_the_results(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    code, output = _hokm_run(out)
    assert code == 0, output
    lines = journal_path(out).read_text().splitlines()
    assert json.loads(lines[0])["setup"]["level_a"] == "greedy"
    assert sorted(json.loads(line)["index"] for line in lines[1:]) == [0, 1, 2]
    assert "3/3 sets" in output  # no terminal here: progress is printed as lines


def test_a_run_killed_mid_line_resumes_with_only_its_missing_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tmp_path / "whole.json"
    assert _hokm_run(whole)[0] == 0
    # The same run, killed while writing its third line: the header, set 0, half of set 1.
    out = tmp_path / "cut.json"
    header, first, second, _ = journal_path(whole).read_text().splitlines()
    assert json.loads(first)["index"] == 0
    journal_path(out).write_text(f"{header}\n{first}\n{second[: len(second) // 2]}")
    played = _count_sets_played(monkeypatch)
    code, output = _hokm_run(out, "--resume")
    assert code == 0, output
    assert sorted(played) == [1, 2]
    assert "resuming: 1 of 3 sets" in output
    resumed, uninterrupted = json.loads(out.read_text()), json.loads(whole.read_text())
    assert resumed["resumed_sets"] == 1 and uninterrupted["resumed_sets"] == 0
    for key in ("matches", "a_win_rate", "a_win_rate_ci95", "points_difference_mean",
                "running"):
        assert resumed[key] == uninterrupted[key]
    # The journal is whole again: resuming it once more plays nothing.
    played.clear()
    assert _hokm_run(out, "--resume")[0] == 0
    assert played == []
    assert json.loads(out.read_text())["running"] == uninterrupted["running"]


def test_resume_refuses_a_journal_of_another_setup(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    assert _hokm_run(out, games=1)[0] == 0
    result = runner.invoke(app, [
        "arena", "hokm", "--a", "greedy", "--b", "random", "--games", "1",
        "--target-score", "2", "--seed", "4", "--out", str(out), "--resume",
    ])
    assert result.exit_code != 0
    assert "another setup" in result.output


def test_without_resume_a_run_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run.json"
    assert _hokm_run(out, games=2)[0] == 0
    played = _count_sets_played(monkeypatch)
    assert _hokm_run(out, games=2)[0] == 0
    assert sorted(played) == [0, 1]
    assert len(journal_path(out).read_text().splitlines()) == 3


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(child) for child in path.read_text().split()} if path.exists() else set()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process (0 once it is gone or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except FileNotFoundError:
        return 0.0
    if fields[0] == "Z":
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_terminated_run_takes_its_worker_processes_with_it(tmp_path: Path) -> None:
    # Expert sets of a whole match take minutes, so the workers are mid-set when the run
    # is terminated: left alone they would play on.
    run = subprocess.Popen(
        [sys.executable, "-c", "from services.cli import main; main()", "arena", "hokm",
         "--a", "expert", "--b", "greedy", "--games", "4", "--budget-ms", "200",
         "--jobs", "2", "--out", str(tmp_path / "run.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        busy: set[int] = set()
        while len(busy) < 2 and time.monotonic() < deadline:  # two workers playing
            busy = {pid for pid in _children(run.pid) if _cpu_seconds(pid) > 2.5}
            time.sleep(0.1)
        assert len(busy) == 2, "the run's worker processes did not start playing"
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) != 0
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in busy) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in busy)
    finally:
        run.kill()
        run.wait()
