"""Table operations on melds: lay-off, joker retrieval, candidate listing.

docs/rules/hand.md "A turn" (lay off onto any meld), "Melds" (joker retrieval).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.cards import parse_card
from engine.core.errors import RuleViolation
from engine.hand.cards import (
    hand_card_name,
    is_joker,
    natural_of,
    parse_hand_card,
    parse_hand_cards,
)
from engine.hand.errors import HandCode
from engine.hand.melds import (
    Meld,
    candidate_melds,
    lay_off,
    meld_text,
    retrieve_joker,
    validate_meld,
)
from tests.engine.hand.test_solver_brute import UNIVERSE, _melds_of


def meld(text: str, **joker_faces: str) -> Meld:
    faces = {104 if name == "JK1" else 105: parse_card(face) for name, face in joker_faces.items()}
    return validate_meld(parse_hand_cards(text), faces)


def card(text: str) -> int:
    return parse_hand_card(text)


def refused(code: HandCode, call: object, *args: object, **kwargs: object) -> None:
    with pytest.raises(RuleViolation) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    assert caught.value.code == code


# ---- lay-off ----

def test_lay_off_extends_a_run_at_either_end() -> None:
    # docs/rules/hand.md "A turn": lay off single cards onto any meld on the table
    run = meld("5♠ 6♠ 7♠")
    assert meld_text(lay_off(run, card("4♠'"))) == "4♠' 5♠ 6♠ 7♠"
    assert meld_text(lay_off(run, card("8♠"))) == "5♠ 6♠ 7♠ 8♠"


def test_lay_off_completes_a_set_with_a_missing_suit() -> None:
    assert meld_text(lay_off(meld("9♠ 9♥ 9♣"), card("9♦'"))) == "9♠ 9♥ 9♣ 9♦'"


def test_lay_off_ace_onto_either_end_but_never_wrapping() -> None:
    # docs/rules/hand.md "Melds": Q-K-A and A-2-3, never K-A-2
    assert meld_text(lay_off(meld("J♥ Q♥ K♥"), card("A♥"))) == "J♥ Q♥ K♥ A♥"
    assert meld_text(lay_off(meld("2♥ 3♥ 4♥"), card("A♥"))) == "A♥ 2♥ 3♥ 4♥"
    refused(HandCode.CANNOT_LAY_OFF, lay_off, meld("Q♥ K♥ A♥"), card("2♥"))


def test_lay_off_joker_needs_a_face_and_respects_one_joker_per_meld() -> None:
    # docs/rules/hand.md "Melds": the meld states the joker's card; at most one joker per meld
    run = meld("5♠ 6♠ 7♠")
    refused(HandCode.CANNOT_LAY_OFF, lay_off, run, 104)
    extended = lay_off(run, 104, parse_card("8♠"))
    assert meld_text(extended) == "5♠ 6♠ 7♠ JK1=8♠"
    refused(HandCode.CANNOT_LAY_OFF, lay_off, extended, 105, parse_card("9♠"))
    assert meld_text(lay_off(extended, 105, parse_card("9♠"), max_jokers=2)) == (
        "5♠ 6♠ 7♠ JK1=8♠ JK2=9♠"
    )


@pytest.mark.parametrize(
    ("table", "laid"),
    [
        ("5♠ 6♠ 7♠", "9♠"),  # not adjacent
        ("5♠ 6♠ 7♠", "8♥"),  # other suit
        ("5♠ 6♠ 7♠", "6♠'"),  # inside the run
        ("9♠ 9♥ 9♣", "9♠'"),  # suit already in the set
        ("9♠ 9♥ 9♣ 9♦", "9♦'"),  # full set
    ],
)
def test_lay_off_refuses_cards_that_do_not_extend(table: str, laid: str) -> None:
    refused(HandCode.CANNOT_LAY_OFF, lay_off, meld(table), card(laid))


def test_lay_off_keeps_the_jokers_stated_faces() -> None:
    # docs/rules/hand.md "Melds": a run's end joker is fixed from then on
    run = meld("5♠ 6♠ JK1", JK1="7♠")
    refused(HandCode.CANNOT_LAY_OFF, lay_off, run, card("7♠"))
    assert meld_text(lay_off(run, card("8♠"))) == "5♠ 6♠ JK1=7♠ 8♠"


# ---- joker retrieval ----

def test_retrieve_run_joker_with_the_exact_card() -> None:
    # docs/rules/hand.md "Joker retrieval": in a run the exact card is needed
    run = meld("5♠ JK1 7♠", JK1="6♠")
    new, joker = retrieve_joker(run, [card("6♠'")])
    assert meld_text(new) == "5♠ 6♠' 7♠" and joker == 104
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, run, [card("6♥")])
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, run, [card("8♠")])


def test_retrieve_from_set_of_two_naturals_needs_both_missing_suits() -> None:
    # docs/rules/hand.md "Joker retrieval": both missing suits at once
    table_set = meld("9♠ 9♥ JK2", JK2="9♣")
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, table_set, [card("9♣")])
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, table_set, [card("9♦")])
    new, joker = retrieve_joker(table_set, [card("9♦'"), card("9♣")])
    assert meld_text(new) == "9♠ 9♥ 9♣ 9♦'" and hand_card_name(joker) == "JK2"


def test_retrieve_from_set_of_three_naturals_needs_the_missing_suit() -> None:
    # docs/rules/hand.md "Joker retrieval": in a set of three naturals and a joker, the one suit
    table_set = meld("9♠ 9♥ 9♣ JK1", JK1="9♦")
    new, joker = retrieve_joker(table_set, [card("9♦")])
    assert meld_text(new) == "9♠ 9♥ 9♣ 9♦" and joker == 104
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, table_set, [card("9♠'")])


def test_retrieve_refuses_melds_without_joker_and_jokers_as_cards() -> None:
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, meld("5♠ 6♠ 7♠"), [card("6♠'")])
    refused(HandCode.CANNOT_RETRIEVE_JOKER, retrieve_joker, meld("5♠ JK1 7♠", JK1="6♠"), [105])


# ---- candidates ----

def test_candidates_list_sets_runs_and_joker_melds_compactly() -> None:
    # docs/rules/hand.md "What the bot and the client need": a compact description of melds
    hand = parse_hand_cards("A♠ 2♠ 3♠ 5♠ 6♠ 7♥ 7♣ 7♦ JK1")
    texts = {meld_text(m) for m in candidate_melds(hand)}
    assert "A♠ 2♠ 3♠" in texts  # maximal natural run
    assert "A♠ 2♠ 3♠ JK1=4♠ 5♠ 6♠" in texts  # the joker bridges a one-rank gap
    assert "7♥ 7♣ 7♦" in texts and "JK1=7♠ 7♥ 7♣ 7♦" in texts
    assert "5♠ 6♠ JK1=7♠" in texts  # a joker extends a pair of a suit
    for listed in candidate_melds(hand):  # every listed meld is valid and from the hand
        assert validate_meld(listed.cards, dict(zip(listed.cards, listed.faces, strict=True)))
        assert set(listed.cards) <= set(hand)


def test_candidates_without_joker_and_from_a_mask() -> None:
    hand = parse_hand_cards("A♠ 2♠ 3♠ 5♠ 6♠ 7♥ 7♣ 7♦ JK1")
    mask = sum(1 << c for c in hand)
    assert candidate_melds(mask) == candidate_melds(hand)
    plain = {meld_text(m) for m in candidate_melds(hand[:-1])}
    assert plain == {"A♠ 2♠ 3♠", "7♥ 7♣ 7♦"}


def test_candidates_full_suit_with_both_aces_is_one_thirteen_card_run() -> None:
    # docs/rules/hand.md "Melds": ace low or high, never both: no 14-card A-…-A run is listed
    suit = parse_hand_cards("A♥ 2♥ 3♥ 4♥ 5♥ 6♥ 7♥ 8♥ 9♥ 10♥ J♥ Q♥ K♥ A♥'")
    runs = candidate_melds(suit)
    assert [len(r.cards) for r in runs] == [13]
    assert hand_card_name(runs[0].cards[-1]) == "A♥"


@settings(max_examples=40, deadline=None)
@given(hand=st.lists(st.sampled_from(UNIVERSE), min_size=5, max_size=9, unique=True))
def test_every_meld_of_the_hand_is_a_sub_meld_of_a_candidate(hand: list[int]) -> None:
    # candidate_melds' contract: every valid meld with at most one joker, standing where
    # no natural of the hand could, is a part of some listed meld of the same kind
    listed = candidate_melds(hand)
    naturals = {natural_of(c) for c in hand if not is_joker(c)}
    for _cards, _value, brute in _melds_of(frozenset(hand), 1):
        stated = [f for c, f in zip(brute.cards, brute.faces, strict=True) if is_joker(c)]
        if any(f in naturals for f in stated):
            continue
        assert any(
            c.kind is brute.kind and set(brute.faces) <= set(c.faces)
            and (not stated or any(is_joker(x) for x in c.cards))
            for c in listed
        ), meld_text(brute)
