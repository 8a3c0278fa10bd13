"""Reported results are checked before anything is recorded: the round, the table, one
result per side within range, winners that are distinct existing sides, and one result per
table; a round ends, and the next one is seated, with its last result."""

from __future__ import annotations

import dataclasses

import pytest

from engine.core.errors import InvalidCommand, RuleViolation
from engine.tournament import (
    Phase,
    ReportResult,
    ResultRecorded,
    RoundEnded,
    RoundStarted,
    SideResult,
    TournamentCode,
    TournamentState,
    decode_event,
    encode_event,
    evolve,
    hand_spec,
    replay,
)

from .support import make_run, result


def _report(state: TournamentState, **changes: object) -> ReportResult:
    """A valid result for table 0 with ``changes`` made to it."""
    return dataclasses.replace(result(state, state.tables[0], [0]), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"round": 2}, TournamentCode.WRONG_ROUND),
        ({"table": 9}, TournamentCode.UNKNOWN_TABLE),
        ({"table": -1}, TournamentCode.UNKNOWN_TABLE),
        ({"table": True}, TournamentCode.UNKNOWN_TABLE),
        ({"sides": (SideResult(7, 13),)}, TournamentCode.INVALID_RESULT),
        ({"sides": (SideResult(7, -1), SideResult(3, 0))}, TournamentCode.INVALID_RESULT),
        ({"sides": (SideResult(10**7, 0), SideResult(3, 0))}, TournamentCode.INVALID_RESULT),
        ({"sides": [SideResult(7, 0), SideResult(3, 0)]}, TournamentCode.INVALID_RESULT),
        ({"winners": ()}, TournamentCode.INVALID_RESULT),
        ({"winners": (0, 1)}, TournamentCode.INVALID_RESULT),
        ({"winners": (2,)}, TournamentCode.INVALID_RESULT),
        ({"winners": (0, 0)}, TournamentCode.INVALID_RESULT),
        ({"winners": (False,)}, TournamentCode.INVALID_RESULT),
    ],
)
def test_malformed_results_are_refused(changes: dict[str, object], code: str) -> None:
    run = make_run(4)
    before = run.state
    with pytest.raises(RuleViolation) as refused:
        run.apply(_report(run.state, **changes))
    assert refused.value.code == code
    assert run.state is before


def test_a_table_is_reported_once() -> None:
    run = make_run(4)
    run.apply(_report(run.state))
    with pytest.raises(RuleViolation) as refused:
        run.apply(_report(run.state))
    assert refused.value.code == TournamentCode.RESULT_ALREADY_RECORDED


def test_a_game_without_tricks_reports_none() -> None:
    run = make_run(3, variant=hand_spec(3))
    table = run.state.tables[0]
    with pytest.raises(InvalidCommand):
        run.apply(result(run.state, table, [0], tricks=[1, 0, 0]))


def test_results_before_the_start_are_refused() -> None:
    run = make_run(4, start=False)
    with pytest.raises(RuleViolation) as refused:
        run.apply(ReportResult(round=1, table=0, sides=(SideResult(7), SideResult(0)),
                               winners=(0,)))
    assert refused.value.code == TournamentCode.NOT_STARTED


def test_the_last_result_ends_the_round_and_seats_the_next() -> None:
    run = make_run(4, rounds=2)
    first = run.apply(result(run.state, run.state.tables[0], [0]))
    assert [type(e.body) for e in first] == [ResultRecorded]
    last = run.apply(result(run.state, run.state.tables[1], [0]))
    assert [type(e.body) for e in last] == [ResultRecorded, RoundEnded, RoundStarted]
    assert run.state.round == 2


def test_nothing_is_accepted_after_the_end() -> None:
    run = make_run(2, rounds=1)
    run.apply(result(run.state, run.state.tables[0], [0]))
    assert run.state.phase is Phase.FINISHED
    with pytest.raises(RuleViolation) as refused:
        run.apply(ReportResult(round=1, table=0, sides=(SideResult(7), SideResult(0)),
                               winners=(0,)))
    assert refused.value.code == TournamentCode.FINISHED


def test_events_that_do_not_fit_the_log_are_refused_by_evolve() -> None:
    run = make_run(4)
    recorded = run.apply(result(run.state, run.state.tables[0], [0]))[0]
    state = replay(run.events[:-1])
    assert isinstance(recorded.body, ResultRecorded)
    forged = dataclasses.replace(recorded, body=dataclasses.replace(recorded.body, table=7))
    with pytest.raises(InvalidCommand):
        evolve(state, forged)
    with pytest.raises(InvalidCommand):
        evolve(state, dataclasses.replace(recorded, seq=recorded.seq + 1))
    assert decode_event(encode_event(recorded)) == recorded
