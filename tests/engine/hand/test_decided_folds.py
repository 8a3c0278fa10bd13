"""``evolve`` of the events ``decide`` just returned gives back the states ``decide``
folded, and only when that is exactly what a fresh fold would compute."""

from __future__ import annotations

import hashlib
import random

from dast.v1 import hand_pb2, log_pb2
from engine import hand
from engine.core.legal import LegalEntries
from engine.core.testing import bot_players
from engine.hand.state import HandState


def _fresh(state: HandState, event: log_pb2.Event) -> HandState:
    """The fold of a copy of ``event``: a new object, which the memo never knows."""
    copy = log_pb2.Event()
    copy.CopyFrom(event)
    return hand.evolve(state, copy)


def _started(label: str, turn_seconds: int) -> HandState:
    seed = hashlib.sha256(label.encode()).digest()
    rules = hand_pb2.HandRules(turn_seconds=turn_seconds)
    return hand.replay(hand.start(rules, seed, bot_players(4)))


def test_folding_decided_events_matches_a_fresh_fold_in_random_play() -> None:
    entries = LegalEntries(hand)
    reused = 0
    for game, turn_seconds in enumerate((0, 30, 0, 45)):
        rng = random.Random(game)
        state = _started(f"decided-folds/{game}", turn_seconds)
        for _ in range(150):
            seat = hand.to_act(state)
            if seat is None:
                break
            command = entries.random(hand.legal(state, seat), rng.randrange)
            for event in hand.decide(state, command):
                folded = hand.evolve(state, event)
                assert folded == _fresh(state, event)
                assert folded.deadline_ms == event.deadline_ms
                reused += hand.evolve(state, event) is folded
                state = folded
    assert reused > 0, "the caller's evolve never got decide's states back"


def test_an_event_changed_after_decide_is_folded_afresh() -> None:
    state = _started("decided-folds/changed", 30)
    seat = hand.to_act(state)
    assert seat is not None
    command = hand.legal(state, seat)[0]
    (event,) = hand.decide(state, command)
    event.deadline_ms += 1_000
    folded = hand.evolve(state, event)
    assert folded.deadline_ms == event.deadline_ms
    assert folded == _fresh(state, event)


def test_decided_events_over_another_state_object_are_folded_afresh() -> None:
    state = _started("decided-folds/other-state", 0)
    seat = hand.to_act(state)
    assert seat is not None
    (event,) = hand.decide(state, hand.legal(state, seat)[0])
    decided = hand.evolve(state, event)
    twin = _started("decided-folds/other-state", 0)
    assert twin is not state
    refolded = hand.evolve(twin, event)
    assert refolded is not decided
    assert refolded == decided
