"""The time limit of a round: a match not over is won by the best score, then the most
tricks, then a seeded draw; a time-out is accepted only once time is up."""

from __future__ import annotations

import pytest

from engine.core.errors import RuleViolation
from engine.tournament import ResultSource, TournamentCode, hand_spec

from .support import make_run, result

ROUND_SECONDS = 600
DEADLINE = 2000 + ROUND_SECONDS * 1000  # the start is decided at 2000 ms


def test_round_deadline_is_start_plus_round_seconds() -> None:
    run = make_run(4, round_seconds=ROUND_SECONDS)
    assert run.state.deadline_ms == DEADLINE


def test_timed_out_table_is_won_by_the_best_score() -> None:
    run = make_run(4, round_seconds=ROUND_SECONDS)
    table = run.state.tables[0]
    run.apply(
        result(run.state, table, [], points=[2, 5], tricks=[30, 10], timed_out=True,
               at_ms=DEADLINE)
    )
    recorded = run.state.results[0]
    assert (recorded.winners, recorded.source) == ((1,), ResultSource.POINTS)


def test_timed_out_level_scores_go_to_the_most_tricks() -> None:
    run = make_run(4, round_seconds=ROUND_SECONDS)
    table = run.state.tables[0]
    run.apply(
        result(run.state, table, [], points=[4, 4], tricks=[31, 30], timed_out=True,
               at_ms=DEADLINE)
    )
    recorded = run.state.results[0]
    assert (recorded.winners, recorded.source) == ((0,), ResultSource.TRICKS)


def test_timed_out_level_scores_and_tricks_are_settled_by_a_seeded_draw() -> None:
    outcomes = set()
    for seed in (bytes([n]) * 32 for n in range(12)):
        run = make_run(4, round_seconds=ROUND_SECONDS, seed=seed)
        table = run.state.tables[0]
        run.apply(
            result(run.state, table, [], points=[4, 4], tricks=[20, 20], timed_out=True,
                   at_ms=DEADLINE)
        )
        recorded = run.state.results[0]
        assert recorded.source is ResultSource.DRAW
        outcomes.add(recorded.winners)
    assert outcomes == {(0,), (1,)}, "the draw should go both ways over a dozen seeds"


def test_timed_out_penalty_game_is_won_by_the_fewest_points() -> None:
    run = make_run(6, variant=hand_spec(3), round_seconds=ROUND_SECONDS)
    table = run.state.tables[0]
    run.apply(
        result(run.state, table, [], points=[80, 20, 50], timed_out=True, at_ms=DEADLINE)
    )
    assert run.state.results[0].winners == (1,)


def test_time_out_before_the_deadline_is_refused() -> None:
    run = make_run(4, round_seconds=ROUND_SECONDS)
    with pytest.raises(RuleViolation) as refused:
        run.apply(result(run.state, run.state.tables[0], [], timed_out=True,
                         at_ms=DEADLINE - 1))
    assert refused.value.code == TournamentCode.NOT_TIMED_OUT


def test_time_out_without_a_time_limit_is_refused() -> None:
    run = make_run(4)
    assert run.state.deadline_ms == 0
    with pytest.raises(RuleViolation) as refused:
        run.apply(result(run.state, run.state.tables[0], [], timed_out=True, at_ms=10**12))
    assert refused.value.code == TournamentCode.NOT_TIMED_OUT


def test_finished_match_keeps_the_games_winners_after_the_deadline() -> None:
    run = make_run(4, round_seconds=ROUND_SECONDS)
    run.apply(result(run.state, run.state.tables[0], [0], points=[7, 2], at_ms=DEADLINE + 5))
    assert run.state.results[0].source is ResultSource.GAME
