"""Calling a tournament off before its start, and featuring it: both are events of its log,
re-decided by the audit like every other command."""

from __future__ import annotations

import pytest

from engine.core.errors import RuleViolation
from engine.core.fairness import is_commitment_of
from engine.core.rng import DeterministicRandom
from engine.tournament import (
    Cancel,
    Feature,
    FeaturedChanged,
    Phase,
    Start,
    TournamentCancelled,
    TournamentCode,
    TournamentEnded,
    command_for,
    decode_event,
    encode_event,
    replay,
    verify,
)
from engine.tournament.sim import play_out

from .support import make_run


def test_a_cancelled_tournament_ends_at_once_with_no_standings_and_its_seed_revealed() -> None:
    run = make_run(3, start=False)
    events = run.apply(Cancel(at_ms=5000))
    assert [type(event.body) for event in events] == [TournamentCancelled, TournamentEnded]
    ended = events[-1].body
    assert isinstance(ended, TournamentEnded) and ended.standings == ()
    assert is_commitment_of(run.state.commitment, ended.seed)
    assert run.state.cancelled and run.state.phase is Phase.FINISHED and run.state.is_over
    # Nothing more can be asked of it, and its log verifies like a finished one.
    with pytest.raises(RuleViolation) as refused:
        run.apply(Feature(featured=True))
    assert refused.value.code == TournamentCode.FINISHED
    assert verify(run.events) == []
    assert replay(run.events) == run.state


def test_a_started_tournament_cannot_be_cancelled() -> None:
    run = make_run(4)
    with pytest.raises(RuleViolation) as refused:
        run.apply(Cancel())
    assert refused.value.code == TournamentCode.ALREADY_STARTED
    assert not run.state.cancelled


def test_featuring_is_recorded_once_per_change_and_survives_the_audit() -> None:
    run = make_run(4, start=False)
    assert not run.state.featured
    (featured,) = run.apply(Feature(featured=True, at_ms=1500))
    assert featured.body == FeaturedChanged(featured=True)
    assert run.apply(Feature(featured=True)) == []  # already featured: nothing to record
    assert run.state.featured
    assert command_for(featured) == Feature(featured=True, at_ms=1500)
    play_out(run, DeterministicRandom(b"results", "feature"), at_ms=2000)
    assert run.state.featured  # the end keeps it (listings show finished ones unfeatured)
    assert verify(run.events) == []
    assert [decode_event(encode_event(event)) for event in run.events] == run.events


def test_a_running_tournament_can_stop_being_featured() -> None:
    run = make_run(4, start=False)
    run.apply(Feature(featured=True))
    run.apply(Start())
    assert run.state.phase is Phase.RUNNING and run.state.featured
    run.apply(Feature(featured=False))
    assert not run.state.featured
