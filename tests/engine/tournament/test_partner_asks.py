"""Registered pairs enter by mutual asks: one player naming another enters nobody; the pair
is entered when the partner names the player back, in either order. An ask can be taken
back or replaced, lapses when either player enters another pair, and is audited like every
other command."""

from __future__ import annotations

import pytest

from engine.core.errors import InvalidCommand, RuleViolation
from engine.core.rng import DeterministicRandom
from engine.tournament import (
    AskPartner,
    Entry,
    PartnerAsked,
    Register,
    Start,
    TournamentCode,
    decode_event,
    encode_event,
    replay,
    verify,
)
from engine.tournament.sim import play_out

from .support import make_run


def test_one_ask_enters_nobody_and_the_answer_enters_the_pair() -> None:
    run = make_run(2, start=False)
    asked = run.apply(AskPartner("ann", "bob", name="A and B", at_ms=1100))
    assert [event.body for event in asked] == [PartnerAsked("ann", "bob", "A and B")]
    assert list(run.state.entrants) == ["e0", "e1"]
    assert run.state.partner_asks == {"ann": PartnerAsked("ann", "bob", "A and B")}

    run.apply(AskPartner("bob", "ann", at_ms=1200))
    pair = run.state.entrants["ann+bob"]
    assert pair.members == ("ann", "bob")  # who asked first comes first
    assert pair.name == "A and B"  # the first ask's name when the answer names none
    assert run.state.partner_asks == {}


def test_an_ask_naming_someone_else_does_not_answer() -> None:
    run = make_run(2, start=False)
    run.apply(AskPartner("ann", "bob"))
    run.apply(AskPartner("bob", "cat"))
    assert "ann+bob" not in run.state.entrants and "bob+cat" not in run.state.entrants
    assert set(run.state.partner_asks) == {"ann", "bob"}


def test_an_ask_is_taken_back_or_replaced() -> None:
    run = make_run(2, start=False)
    run.apply(AskPartner("ann", "bob"))
    assert run.apply(AskPartner("ann", "bob")) == []  # the same ask again changes nothing
    run.apply(AskPartner("ann", ""))
    assert run.state.partner_asks == {}
    assert run.apply(AskPartner("ann", "")) == []  # nothing left to take back
    run.apply(AskPartner("bob", "ann"))  # ann's ask is gone: bob's waits
    assert "bob+ann" not in run.state.entrants
    run.apply(AskPartner("cat", "dan"))
    run.apply(AskPartner("cat", "bob"))  # replaces cat's ask for dan
    run.apply(AskPartner("dan", "cat"))
    assert "cat+dan" not in run.state.entrants
    run.apply(AskPartner("ann", "bob"))
    assert run.state.entrants["bob+ann"].members == ("bob", "ann")


def test_asks_by_or_for_players_who_entered_lapse() -> None:
    run = make_run(2, start=False)
    run.apply(AskPartner("ann", "bob"))
    run.apply(AskPartner("cat", "bob"))
    run.apply(AskPartner("dan", "ann"))
    run.apply(AskPartner("bob", "ann"))
    assert run.state.partner_asks == {}
    with pytest.raises(RuleViolation) as refused:
        run.apply(AskPartner("cat", "ann"))
    assert refused.value.code == TournamentCode.PLAYER_ALREADY_ENTERED
    with pytest.raises(RuleViolation) as refused:
        run.apply(AskPartner("ann", "cat"))
    assert refused.value.code == TournamentCode.PLAYER_ALREADY_ENTERED


def test_asks_follow_the_registration_rules() -> None:
    run = make_run(2, start=False, max_entrants=3)
    refused: pytest.ExceptionInfo[RuleViolation]  # also holds the InvalidCommand below
    with pytest.raises(InvalidCommand) as refused:
        run.apply(AskPartner("ann", "ann"))
    assert refused.value.code == TournamentCode.WRONG_TEAM_SIZE
    with pytest.raises(InvalidCommand):
        run.apply(AskPartner("ann", "bad\x00id"))
    run.apply(AskPartner("ann", "bob"))
    run.apply(Register("e2", ("x1", "x2")))  # the field is full before bob answers
    with pytest.raises(RuleViolation) as refused:
        run.apply(AskPartner("bob", "ann"))
    assert refused.value.code == TournamentCode.FULL
    run.apply(Start(at_ms=2000))
    assert run.state.partner_asks == {"ann": PartnerAsked("ann", "bob")}  # never entered
    with pytest.raises(RuleViolation) as refused:
        run.apply(AskPartner("bob", "ann", at_ms=2001))
    assert refused.value.code == TournamentCode.REGISTRATION_CLOSED


def test_individuals_take_no_partner() -> None:
    run = make_run(2, start=False, entry=Entry.INDIVIDUALS)
    with pytest.raises(InvalidCommand) as refused:
        run.apply(AskPartner("ann", "bob"))
    assert refused.value.code == TournamentCode.WRONG_TEAM_SIZE


def test_a_log_with_asks_replays_round_trips_and_verifies() -> None:
    run = make_run(4, start=False)
    run.apply(AskPartner("ann", "bob", name="A and B"))
    run.apply(AskPartner("cat", "ann"))
    run.apply(AskPartner("cat", ""))
    run.apply(AskPartner("dan", "eve"))  # never answered
    run.apply(AskPartner("bob", "ann"))
    play_out(run, DeterministicRandom(b"results", "asks"), at_ms=5000)
    assert "ann+bob" in run.state.seed_order and len(run.state.seed_order) == 5
    assert replay(run.events) == run.state
    for event in run.events:
        assert decode_event(encode_event(event)) == event
    assert verify(run.events) == []
