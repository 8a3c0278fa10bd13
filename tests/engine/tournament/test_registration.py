"""Registration: checked entries, one entry per player, late registration closing at the
start (or at the configured time), withdrawals, the start's conditions, bad options."""

from __future__ import annotations

import pytest

from engine.core.errors import InvalidCommand, RuleViolation
from engine.tournament import (
    Entry,
    Format,
    Register,
    Start,
    TournamentCode,
    TournamentOptions,
    VariantSpec,
    Withdraw,
    create,
    hokm_spec,
)
from engine.tournament.sim import TournamentRun

from .support import SEED, make_run


def _code(error: pytest.ExceptionInfo[RuleViolation]) -> str:
    return error.value.code


def test_registration_stays_open_until_the_start_and_closes_with_it() -> None:
    run = make_run(4, start=False)
    run.apply(Register("late", ("l1", "l2"), at_ms=1500))
    run.apply(Start(at_ms=2000))
    assert "late" in run.state.seed_order
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("later", ("x1", "x2"), at_ms=2001))
    assert _code(refused) == TournamentCode.REGISTRATION_CLOSED


def test_registration_closes_at_the_configured_time() -> None:
    run = make_run(2, start=False, registration_closes_at_ms=5000)
    run.apply(Register("in_time", ("a1", "a2"), at_ms=4999))
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("too_late", ("b1", "b2"), at_ms=5000))
    assert _code(refused) == TournamentCode.REGISTRATION_CLOSED


def test_a_player_enters_only_once() -> None:
    run = make_run(2, start=False)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("again", ("e0p0", "someone")))
    assert _code(refused) == TournamentCode.PLAYER_ALREADY_ENTERED


def test_an_entrant_id_is_registered_once() -> None:
    run = make_run(2, start=False)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("e0", ("n1", "n2")))
    assert _code(refused) == TournamentCode.ALREADY_REGISTERED


@pytest.mark.parametrize("members", [(), ("solo",), ("a", "b", "c"), ("a", "a")])
def test_registered_pairs_need_exactly_a_side_of_distinct_players(
    members: tuple[str, ...],
) -> None:
    run = make_run(0, start=False)
    with pytest.raises(InvalidCommand) as refused:
        run.apply(Register("pair", members))
    assert _code(refused) == TournamentCode.WRONG_TEAM_SIZE


def test_individuals_register_alone() -> None:
    run = make_run(0, start=False, entry=Entry.INDIVIDUALS)
    run.apply(Register("p", ("p",)))
    with pytest.raises(InvalidCommand):
        run.apply(Register("q", ("q", "r")))


@pytest.mark.parametrize("bad_id", ["", "x" * 129, "tab\there", 7])
def test_hostile_ids_are_refused(bad_id: object) -> None:
    run = make_run(0, start=False)
    with pytest.raises(InvalidCommand) as refused:
        run.apply(Register(bad_id, ("a", "b")))  # type: ignore[arg-type]
    assert _code(refused) == TournamentCode.INVALID_ID


def test_a_full_tournament_refuses_entrants() -> None:
    run = make_run(2, start=False, max_entrants=2)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("third", ("t1", "t2")))
    assert _code(refused) == TournamentCode.FULL


def test_withdrawal_before_the_start_removes_the_entrant() -> None:
    run = make_run(3, start=False)
    run.apply(Withdraw("e1"))
    run.apply(Start())
    assert "e1" not in run.state.seed_order
    # The players may enter again (in another entry) before the start only.
    assert "e1" not in run.state.entrants


def test_start_needs_two_entrants() -> None:
    run = make_run(1, start=False)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Start())
    assert _code(refused) == TournamentCode.TOO_FEW_ENTRANTS


def test_start_happens_once() -> None:
    run = make_run(2)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Start())
    assert _code(refused) == TournamentCode.ALREADY_STARTED


def test_round_robin_takes_at_most_sixteen_entrants() -> None:
    run = make_run(16, start=False, format=Format.ROUND_ROBIN)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Register("seventeenth", ("s1", "s2")))
    assert _code(refused) == TournamentCode.FULL
    with pytest.raises(InvalidCommand):
        create("t", TournamentOptions(hokm_spec(4), format=Format.ROUND_ROBIN, max_entrants=17),
               SEED)


def test_knockout_of_individuals_needs_more_than_one_side() -> None:
    run = make_run(2, start=False, format=Format.KNOCKOUT, entry=Entry.INDIVIDUALS)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Start())
    assert _code(refused) == TournamentCode.TOO_FEW_ENTRANTS
    run.apply(Register("third", ("third",)))
    run.apply(Start())
    assert len(run.state.tables) == 1


@pytest.mark.parametrize(
    "options",
    [
        TournamentOptions(variant=VariantSpec("g", 4, ((0, 1), (1, 2)))),
        TournamentOptions(variant=VariantSpec("g", 4, ((0, 1), (2,), (3,)))),
        TournamentOptions(variant=VariantSpec("g", 1, ((0,),))),
        TournamentOptions(variant=VariantSpec("g", 2, ((0,), ("1",)))),  # type: ignore[arg-type]
        TournamentOptions(variant=hokm_spec(4), rounds=True),
        TournamentOptions(variant=hokm_spec(4), win_points=2.5),  # type: ignore[arg-type]
        TournamentOptions(variant=hokm_spec(4), fill_with_bots=1),  # type: ignore[arg-type]
        TournamentOptions(variant=hokm_spec(4), rounds=-1),
        TournamentOptions(variant=hokm_spec(4), win_points=1, loss_points=2),
        TournamentOptions(variant=hokm_spec(4), round_seconds=-5),
        TournamentOptions(variant=hokm_spec(4), bye_points=-2),
        TournamentOptions(variant=hokm_spec(4), format="ladder"),  # type: ignore[arg-type]
        TournamentOptions(variant=hokm_spec(4), tie_breaks=("tricks", "tricks")),  # type: ignore[arg-type]
    ],
)
def test_bad_options_are_refused(options: TournamentOptions) -> None:
    with pytest.raises(InvalidCommand) as refused:
        create("t", options, SEED)
    assert _code(refused) == TournamentCode.INVALID_OPTIONS


@pytest.mark.parametrize("seed", [b"", b"short", bytes(65)])
def test_seed_must_be_16_to_64_bytes(seed: bytes) -> None:
    with pytest.raises(InvalidCommand):
        TournamentRun("t", TournamentOptions(variant=hokm_spec(4)), seed)
