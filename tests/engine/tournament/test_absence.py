"""Bots standing in: an absent player's seat gets a stand-in whose result counts for the
player; a withdrawn entrant is paired no more."""

from __future__ import annotations

import pytest

from engine.core.errors import RuleViolation
from engine.tournament import Entry, Format, Phase, SetAbsent, TournamentCode, Withdraw

from .support import make_run, play_round, result, side_of


def test_absent_players_seat_gets_a_stand_in_and_the_result_counts() -> None:
    run = make_run(4, rounds=2)
    run.apply(SetAbsent("e0p1", absent=True))
    play_round(run, lambda table: side_of(table, "e0") if "e0" in table.entrants else 0)
    seat = next(s for t in run.state.tables for s in t.seats if s.player_id == "e0p1")
    assert seat.stand_in
    partner = next(s for t in run.state.tables for s in t.seats if s.player_id == "e0p0")
    assert not partner.stand_in
    assert run.state.records["e0"].match_points == 2


def test_a_player_who_returns_gets_the_seat_back() -> None:
    run = make_run(4, rounds=2)
    run.apply(SetAbsent("e0p1", absent=True))
    run.apply(SetAbsent("e0p1", absent=False))
    play_round(run, lambda table: 0)
    seat = next(s for t in run.state.tables for s in t.seats if s.player_id == "e0p1")
    assert not seat.stand_in


def test_marking_an_absent_player_absent_again_changes_nothing() -> None:
    run = make_run(4)
    run.apply(SetAbsent("e0p1", absent=True))
    assert run.apply(SetAbsent("e0p1", absent=True)) == []


def test_unknown_players_cannot_be_marked_absent() -> None:
    run = make_run(4)
    with pytest.raises(RuleViolation) as refused:
        run.apply(SetAbsent("stranger", absent=True))
    assert refused.value.code == TournamentCode.UNKNOWN_PLAYER


def test_withdrawn_entrant_plays_out_its_table_with_stand_ins_then_is_not_paired() -> None:
    run = make_run(5, entry=Entry.INDIVIDUALS, rounds=3, fill_with_bots=True)
    run.apply(Withdraw("e2"))
    play_round(run, lambda table: 0)
    assert all("e2" not in t.entrants for t in run.state.tables)
    assert "e2" not in run.state.byes
    while run.state.phase is Phase.RUNNING:
        play_round(run, lambda table: 0)
    line = next(s for s in run.state.standings if s.entrant_id == "e2")
    assert line.withdrawn and line.played == 1


def test_withdrawal_in_a_knockout_is_elimination() -> None:
    run = make_run(4, format=Format.KNOCKOUT)
    table = next(t for t in run.state.tables if "e0" in t.entrants)
    run.apply(Withdraw("e0"))
    for t in run.state.tables:
        run.apply(result(run.state, t, [side_of(t, "e0") if t is table else 0]))
    assert "e0" not in run.state.alive
    assert run.state.eliminated["e0"] == 1
