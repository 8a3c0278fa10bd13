"""The solver's answers equal the turns the engine itself accepts, joker retrievals included.

The brute force knows nothing of the solver: from a seat's position after its draw it
tries every command the engine could be sent, in every order (every family of melds of
the hand in one ``LayMelds``, every lay-off of a card onto a table meld with every face a
joker may state, every retrieval with every one or two natural cards, a discard), keeps
those ``decide`` accepts and folds their events with ``evolve``. A position from which
the last card can be discarded goes out (a "hand" when the round's end says so); one
from which any card can be discarded ends the turn holding its penalty. The solver must
find a way out exactly when the engine has one, and the least penalty among those ends
(docs/rules/hand.md "A turn", "Opening", "Joker retrieval", "What the bot and the client
need from the engine").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dast.v1 import hand_pb2, log_pb2
from engine import hand
from engine.core.cards import mask_of
from engine.core.errors import RuleViolation
from engine.hand.cards import hand_card_name, is_joker, natural_of, penalty_value
from engine.hand.codec import hand_command, meld_spec_of
from engine.hand.melds import Meld, extension_faces, validate_meld
from engine.hand.solver import can_go_out, min_penalty
from engine.hand.state import HandState, Phase, TableMeld
from tests.engine.hand.table import cards, play_plan, table, turn_of

# The melds another seat laid in earlier turns: three hold a joker to retrieve (a run's
# exact card; a set's two missing suits together; a full set's last suit).
TABLE_CHOICES: tuple[tuple[str, dict[str, str]], ...] = (
    ("4♦ JK1 6♦", {"JK1": "5♦"}),
    ("9♠ 9♥ JK2", {"JK2": "9♣"}),
    ("Q♠ Q♥ Q♣ JK2", {"JK2": "Q♦"}),
    ("10♣ J♣ Q♣'", {}),
    ("2♥ 3♥ 4♥", {}),
)
# Cards that free a table joker (by table choice), pieces of hands around them (openings
# of the seat's own cards, pairs a joker completes), and cards to fill a hand with.
RETRIEVERS: dict[int, tuple[str, ...]] = {0: ("5♦", "5♦'"), 1: ("9♣ 9♦", "9♣' 9♦'"), 2: ("Q♦",)}
PIECES = ("K♠ K♥ K♣", "9♦ 10♦ J♦", "6♠ 7♠ 8♠", "7♠ 8♠", "K♥ K♣'", "3♦ 7♦", "A♣ 2♠", "JK1")
UNIVERSE = cards(
    "5♦ 5♦' 3♦ 7♦ 9♣ 9♦ 9♦' Q♦ 7♠ 8♠ 6♠ K♠ K♥ K♣ K♣' 10♦ J♦ 5♥ 2♠ A♣ 9♣' JK1 JK2"
)
OPEN_MINIMA = (0, 15, 30, 51)


def _melds_of(held: list[int]) -> list[Meld]:
    """Every valid meld of ``held``, one per choice of the jokers' faces."""
    found: list[Meld] = []
    for size in range(3, len(held) + 1):
        for subset in combinations(held, size):
            naturals = [c for c in subset if not is_joker(c)]
            jokers = [c for c in subset if is_joker(c)]
            if len(naturals) < 2 or len(jokers) > 1:
                continue
            suit, rank = divmod(natural_of(naturals[0]), 13)
            faces = sorted({suit * 13 + r for r in range(13)} | {s * 13 + rank for s in range(4)})
            for face in faces if jokers else [None]:
                try:
                    found.append(validate_meld(subset, {} if face is None else {jokers[0]: face}))
                except RuleViolation:
                    continue
    return found


def _families(melds: list[Meld], start: int = 0, used: frozenset[int] = frozenset()
              ) -> list[list[Meld]]:
    """Every non-empty family of disjoint melds among ``melds[start:]``."""
    out: list[list[Meld]] = []
    for index in range(start, len(melds)):
        meld = melds[index]
        if used & set(meld.cards):
            continue
        out.append([meld])
        out.extend([meld, *rest] for rest in _families(melds, index + 1, used | set(meld.cards)))
    return out


def _commands(state: HandState) -> list[log_pb2.Command]:
    """Every command seat 0 could send in its play phase (but the discards)."""
    held = sorted(c for c in range(106) if state.hands[0] >> c & 1)
    listed = [
        hand_command(0, lay_melds=hand_pb2.LayMelds(melds=[meld_spec_of(m) for m in family]))
        for family in _families(_melds_of(held))
    ]
    for table_meld in state.melds:
        for card in held:
            faces: list[int | None] = list(extension_faces(table_meld.meld)) if is_joker(card) \
                else [None]
            for face in faces:
                move = hand_pb2.LayOff(meld_id=table_meld.id, card=card)
                if face is not None:
                    move.joker_face = face
                listed.append(hand_command(0, lay_off=move))
        if any(is_joker(c) for c in table_meld.meld.cards):
            naturals = [c for c in held if not is_joker(c)]
            for size in (1, 2):
                for given in combinations(naturals, size):
                    retrieval = hand_pb2.RetrieveJoker(meld_id=table_meld.id, cards=given)
                    listed.append(hand_command(0, retrieve_joker=retrieval))
    return listed


@dataclass
class Ends:
    """What the engine lets the seat reach this turn."""

    out: bool = False
    hand_finish: bool = False
    least_penalty: int | None = None


def _explore(start: HandState) -> Ends:
    ends = Ends()
    seen: set[tuple[object, ...]] = set()

    def visit(state: HandState) -> None:
        key = (state.hands[0], tuple((m.meld.cards, m.meld.faces) for m in state.melds),
               state.opened[0], state.opened_this_turn, state.opening_total, state.must_use,
               state.used_older_melds)
        if key in seen:
            return
        seen.add(key)
        held = [c for c in range(106) if state.hands[0] >> c & 1]
        try:  # whether the turn may end here: any card will tell
            events = hand.decide(state, hand_command(0, discard=hand_pb2.Discard(card=held[0])))
        except RuleViolation:
            pass
        else:
            points = sum(penalty_value(c) for c in held)
            if ends.least_penalty is None or points < ends.least_penalty:
                ends.least_penalty = points
            if len(held) == 1:
                ends.out = True
                ended = [e.hand.round_ended for e in events if e.hand.HasField("round_ended")]
                ends.hand_finish |= ended[0].finish == hand_pb2.HAND_FINISH_HAND
        for command in _commands(state):
            try:
                events = hand.decide(state, command)
            except RuleViolation:
                continue
            after = state
            for event in events:
                after = hand.evolve(after, event)
            visit(after)

    visit(start)
    return ends


def _position(held: list[int], table_indexes: list[int], *, opened: bool, open_min: int,
              must_use: int | None = None) -> HandState:
    """Seat 0 of 2 in its play phase holding ``held`` (the draw made), the chosen table
    melds laid by seat 1 in earlier turns (those sharing no card with the hand or one
    another), ``must_use`` the card it took from the discard pile."""
    melds: list[TableMeld] = []
    taken = set(held)
    for index in table_indexes:
        text, jokers = TABLE_CHOICES[index]
        laid = cards(text)
        if set(laid) & taken:
            continue
        taken |= set(laid)
        faces = {cards(name)[0]: cards(face)[0] for name, face in jokers.items()}
        melds.append(TableMeld(len(melds), 1, validate_meld(laid, faces)))
    state = table(["2♣' 3♣'", "7♥' 8♥'"], stock="4♣' 6♣'",
                  rules=hand_pb2.HandRules(open_min=open_min))
    state = turn_of(state, 0, phase=Phase.PLAY, opened=[0, 1] if opened else [1])
    return replace(state, hands=(mask_of(held), state.hands[1]), melds=tuple(melds),
                   turn_first_meld=len(melds), must_use=must_use)


@st.composite
def positions(draw: st.DrawFn) -> dict[str, object]:
    """A position around joker retrievals: table melds, often the cards that free their
    jokers, a few pieces of melds, a card or two more (4-8 cards)."""
    table_indexes = draw(st.lists(st.integers(0, len(TABLE_CHOICES) - 1), min_size=1,
                                  max_size=2, unique=True))
    held: set[int] = set()
    for index in table_indexes:
        if index in RETRIEVERS and draw(st.integers(0, 3)):
            held |= set(cards(draw(st.sampled_from(RETRIEVERS[index]))))
    for piece in draw(st.lists(st.sampled_from(PIECES), max_size=3, unique=True)):
        held |= set(cards(piece))
    size = max(4, min(8, len(held) + draw(st.integers(0, 2))))
    while len(held) < size:
        held.add(draw(st.sampled_from(UNIVERSE)))
    return {
        "held": draw(st.permutations(sorted(held)))[:size],
        "table_indexes": table_indexes,
        "opened": draw(st.booleans()),
        "open_min": draw(st.sampled_from(OPEN_MINIMA)),
        "must_index": draw(st.one_of(st.none(), st.integers(0, 7))),
    }


_SLOW_TO_DRAW = [HealthCheck.too_slow, HealthCheck.large_base_example]
"""A position is drawn card by card and explored move by move: both take a while."""


def _check(held: list[int], table_indexes: list[int], opened: bool, open_min: int,
           must_index: int | None) -> None:
    must_use = None if must_index is None else held[must_index % len(held)]
    state = _position(held, table_indexes, opened=opened, open_min=open_min, must_use=must_use)
    ends = _explore(state)
    table_melds = tuple(m.meld for m in state.melds)
    plan = can_go_out(held, table_melds, has_opened=opened, open_min=open_min,
                      must_use=must_use)
    shown = " ".join(hand_card_name(c) for c in held)
    assert (plan is not None) == ends.out, f"can_go_out({shown}) against the engine"
    if plan is not None:
        assert plan.is_hand == ends.hand_finish
        # the plan itself, sent to the engine, goes out
        events = hand.decide(play_plan(state, 0, plan),
                             hand_command(0, discard=hand_pb2.Discard(card=plan.discard)))
        ended = [e.hand.round_ended for e in events if e.hand.HasField("round_ended")]
        assert ended and (ended[0].finish == hand_pb2.HAND_FINISH_HAND) == plan.is_hand
    if must_use is None:
        penalty = min_penalty(held, table_melds=table_melds, keep=1, has_opened=opened,
                              open_min=open_min)
        assert penalty.points == ends.least_penalty, f"min_penalty({shown}) against the engine"
        after = play_plan(state, 0, penalty)  # the plan leaves its cards, and the turn may end
        assert after.hands[0] == mask_of(penalty.left)
        hand.decide(after, hand_command(0, discard=hand_pb2.Discard(card=penalty.left[0])))


@settings(max_examples=40, deadline=None, suppress_health_check=_SLOW_TO_DRAW)
@given(position=positions())
def test_the_solver_finds_every_turn_the_engine_accepts(position: dict[str, object]) -> None:
    _check(**position)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("DAST_SLOW_TESTS"),
    reason="600 more positions (minutes): set DAST_SLOW_TESTS=1 to run",
)
@settings(max_examples=600, deadline=None, suppress_health_check=_SLOW_TO_DRAW)
@given(position=positions())
def test_the_solver_finds_every_turn_the_engine_accepts_many_more(
    position: dict[str, object]
) -> None:
    _check(**position)  # type: ignore[arg-type]
