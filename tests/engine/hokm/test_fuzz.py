"""``decide`` is total (docs/architecture.md "The game protocol"): any Command proto, however odd,
either yields events or raises RuleViolation, never another exception."""

from __future__ import annotations

import hashlib
from itertools import islice

from hypothesis import given, settings
from hypothesis import strategies as st

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.errors import RuleViolation
from engine.core.legal import LegalEntries
from engine.hokm.sim import play_match
from engine.hokm.state import HokmState

from .notation import VARIANT


def _states() -> list[HokmState]:
    """States at rest from short matches of every variant, in every phase."""
    states: list[HokmState] = []
    for seats in (4, 3, 2):
        rules = hokm_pb2.HokmRules(variant=VARIANT[seats], target_score=1)
        seed = hashlib.sha256(f"fuzz{seats}".encode()).digest()
        events = play_match(rules, seed, ["random"] * seats, seats)
        state = None
        for event in events:
            if hokm.command_for(event) is not None and state is not None:
                states.append(state)
            state = hokm.evolve(state, event)
        assert state is not None
        states.append(state)  # match over
    return states


STATES = _states()


def _decide_is_total(state: HokmState, command: log_pb2.Command) -> None:
    try:
        events = hokm.decide(state, command)
    except RuleViolation:
        return
    assert events and events[0].seq == state.seq + 1
    assert LegalEntries(hokm).covers(hokm.legal(state, command.seat), command)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(STATES) - 1), raw=st.binary(max_size=40))
def test_decide_is_total_on_arbitrary_command_bytes(index: int, raw: bytes) -> None:
    command = log_pb2.Command()
    try:
        command.ParseFromString(raw)
    except Exception:
        return  # not a protobuf: the service refuses it before the engine
    _decide_is_total(STATES[index], command)


@settings(max_examples=300, deadline=None)
@given(
    index=st.integers(0, len(STATES) - 1),
    seat=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["play_card", "declare_trump", "set_aside_cards", "take_pile_card",
                          "none", "other_game"]),
    number=st.integers(0, 2**32 - 1),
    cards=st.lists(st.integers(0, 60), max_size=6),
)
def test_decide_is_total_on_structured_commands(
    index: int, seat: int, kind: str, number: int, cards: list[int]
) -> None:
    command = log_pb2.Command(seat=seat)
    if kind == "play_card":
        command.hokm.play_card.card = number % 64
    elif kind == "declare_trump":
        command.hokm.declare_trump.suit = number % 8  # type: ignore[assignment]
    elif kind == "set_aside_cards":
        command.hokm.set_aside_cards.cards.extend(cards)
    elif kind == "take_pile_card":
        command.hokm.take_pile_card.pile = number % 4
    elif kind == "none":
        command.hokm.SetInParent()
    else:
        command.hand.SetInParent()
    state = STATES[index]
    if state.turn >= 0 and seat % 2 == 0:
        command.seat = state.turn  # aim half of them at the seat to act
    _decide_is_total(state, command)


def test_every_legal_command_of_every_state_is_accepted() -> None:
    for state in STATES:
        seat = hokm.to_act(state)
        if seat is None:
            assert hokm.is_over(state)
            continue
        for command in islice(LegalEntries(hokm).commands(hokm.legal(state, seat)), 50):
            assert hokm.decide(state, command)


def test_legal_agrees_with_the_legal_play_mask_kernel() -> None:
    # docs/architecture.md "Test that the layers agree": legal() decoded equals legal_mask().
    from engine.core.cards import iter_cards
    from engine.hokm._core import legal_play_mask
    from engine.hokm.state import Phase

    checked = 0
    for state in STATES:
        if state.phase != Phase.PLAY:
            continue
        decoded = [c.hokm.play_card.card for c in hokm.legal(state, state.turn)]
        assert decoded == list(iter_cards(legal_play_mask(state.hands[state.turn], state.trick)))
        checked += 1
    assert checked > 20
