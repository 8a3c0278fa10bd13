"""bench/engines.py plays what it claims: whole matches through the public protocol (the
three-player set-aside drawn from its choice entry), and every figure and ratio it reports."""

from __future__ import annotations

import pytest

from bench.engines import DastRunner, run
from dast.v1 import hokm_pb2
from engine import hokm


def test_hokm3_runner_plays_on_across_matches_and_set_asides() -> None:
    rules = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=1)
    runner = DastRunner(hokm, rules, 3, "test", 7)
    made, seconds = runner.play(0.3)
    assert made > 0 and seconds > 0
    again, _ = runner.play(0.05)  # resumes the match in progress
    assert again > 0 and runner.matches >= 2


def test_run_reports_every_contender_and_the_three_ratios() -> None:
    pytest.importorskip("rlcard", reason="the peers come from the `bench` extra")
    result = run(rounds=1, slice_seconds=0.02, seed=3)
    for name in ("rlcard_bridge", "hokm4", "hokm3", "rlcard_gin_rummy", "hand4"):
        assert result[f"{name}_decisions"] > 0 and result[f"{name}_decisions_per_s"] > 0
    per_s = {name: result[f"{name}_decisions_per_s"] for name in ("hokm4", "hokm3")}
    assert result["hokm3_vs_hokm4"] == pytest.approx(per_s["hokm3"] / per_s["hokm4"], rel=0.01)
    assert {"hokm4_vs_rlcard_bridge", "hand4_vs_rlcard_gin_rummy"} <= result.keys()
