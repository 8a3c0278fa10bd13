"""``dast arena``: duplicate seatings, the statistics it prints, the files it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dast.v1 import hokm_pb2
from services.cli import app
from services.cli.arena import ArenaSetup, percentile, play_set, seatings, summarize, wilson

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
