"""Meld validation: every rule of docs/rules/hand.md "Melds", each invalid way with its own code."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.cards import parse_card
from engine.core.errors import InvalidCommand, RuleViolation
from engine.hand.cards import hand_cards_text, is_joker, parse_hand_cards
from engine.hand.errors import HandCode
from engine.hand.melds import (
    Meld,
    MeldKind,
    candidate_melds,
    extension_faces,
    lay_off,
    meld_text,
    meld_value,
    validate_meld,
)


def meld(text: str, *, max_jokers: int = 1, **joker_faces: str) -> Meld:
    """Validate ``text`` (``JK1="6♠"`` states a joker's face)."""
    faces = {104 if name == "JK1" else 105: parse_card(face) for name, face in joker_faces.items()}
    return validate_meld(parse_hand_cards(text), faces, max_jokers=max_jokers)


def code_of(text: str, *, max_jokers: int = 1, **joker_faces: str) -> str:
    with pytest.raises(RuleViolation) as caught:
        meld(text, max_jokers=max_jokers, **joker_faces)
    return caught.value.code


# ---- valid melds ----

def test_set_of_three_and_of_four_different_suits() -> None:
    # docs/rules/hand.md "Melds": a set is 3 or 4 cards of one rank in different suits
    three = meld("7♦ 7♠ 7♣'")
    assert three.kind is MeldKind.SET
    assert meld_text(three) == "7♠ 7♣' 7♦"  # sets in suit order
    assert meld_text(meld("K♥ K♠ K♦ K♣")) == "K♠ K♥ K♣ K♦"


def test_run_of_three_or_more_consecutive_one_suit() -> None:
    # docs/rules/hand.md "Melds": a run is 3+ consecutive cards of one suit, given in any order
    run = meld("9♥ 7♥ 8♥' 10♥")
    assert run.kind is MeldKind.RUN
    assert meld_text(run) == "7♥ 8♥' 9♥ 10♥"


def test_ace_high_run_q_k_a_is_valid() -> None:
    # docs/rules/hand.md "Melds": ace high (Q-K-A)
    assert meld_text(meld("A♣ Q♣ K♣")) == "Q♣ K♣ A♣"


def test_ace_low_run_a_2_3_is_valid_and_ace_counts_low() -> None:
    # docs/rules/hand.md "Melds": ace low (A-2-3); "Cards": the low ace counts ace_low_value
    run = meld("3♦ A♦ 2♦")
    assert meld_text(run) == "A♦ 2♦ 3♦"
    assert meld_value(run) == 1 + 2 + 3
    assert meld_value(run, ace_low_value=11) == 11 + 2 + 3


def test_thirteen_card_runs_ace_low_or_ace_high() -> None:
    # docs/rules/hand.md "Melds": ace low or high but never both: 13 cards is the longest run
    high = meld("2♠ 3♠ 4♠ 5♠ 6♠ 7♠ 8♠ 9♠ 10♠ J♠ Q♠ K♠ A♠")
    assert high.faces[-1] == parse_card("A♠")
    # the same 13 ranks read either way; the ace then counts high (the better reading)
    either = meld("A♠ 2♠ 3♠ 4♠ 5♠ 6♠ 7♠ 8♠ 9♠ 10♠ J♠ Q♠ JK1", JK1="K♠")
    assert either.faces[-1] == parse_card("A♠")
    assert meld_value(either) == sum(range(2, 11)) + 30 + 11


def test_joker_stands_for_a_stated_card_and_counts_as_it() -> None:
    # docs/rules/hand.md "Melds"/"Cards": the joker stands for the stated card and counts as it
    run = meld("5♠ JK1 7♠", JK1="6♠")
    assert meld_text(run) == "5♠ JK1=6♠ 7♠" and meld_value(run) == 18
    end = meld("J♥ Q♥ JK2", JK2="K♥")
    assert meld_text(end) == "J♥ Q♥ JK2=K♥" and meld_value(end) == 30
    low_end = meld("2♥ 3♥ JK2", JK2="A♥")
    assert meld_text(low_end) == "JK2=A♥ 2♥ 3♥" and meld_value(low_end) == 6
    assert meld_text(meld("9♣ JK1 9♦", JK1="9♥")) == "JK1=9♥ 9♣ 9♦"


def test_two_jokers_allowed_with_option_max_jokers_per_meld() -> None:
    # docs/rules/hand.md option max_jokers_per_meld
    run = meld("5♠ JK1 7♠ JK2", max_jokers=2, JK1="6♠", JK2="8♠")
    assert meld_text(run) == "5♠ JK1=6♠ 7♠ JK2=8♠"


def test_set_value_and_meld_is_a_plain_value() -> None:
    # the game state stores melds: hashable, comparable
    a, b = meld("A♠ A♥ A♦"), meld("A♦ A♥ A♠")
    assert a == b and hash(a) == hash(b) and meld_value(a) == 33


# ---- one code per invalid way ----

@pytest.mark.parametrize(
    ("text", "faces", "code"),
    [
        # docs/rules/hand.md "Melds": 3 or more cards
        ("5♠ 6♠", {}, HandCode.MELD_TOO_SHORT),
        # a physical card is in one place only
        ("5♠ 5♠ 6♠ 7♠", {}, HandCode.DUPLICATE_CARD),
        # a set: different suits; two identical cards never sit in one set
        ("7♠ 7♠' 7♥", {}, HandCode.DUPLICATE_SUIT_IN_SET),
        ("7♠ 7♥ 7♥'", {}, HandCode.DUPLICATE_SUIT_IN_SET),
        # a set: one rank
        ("7♠ 7♥ 8♣", {}, HandCode.SET_MIXED_RANKS),
        # a set: at most 4 cards
        ("7♠ 7♥ 7♣ 7♦ JK1", {"JK1": "7♠"}, HandCode.SET_TOO_LARGE),
        # a run: one suit
        ("7♠ 8♥ 9♠", {}, HandCode.RUN_MIXED_SUITS),
        # a run: consecutive
        ("7♠ 8♠ 10♠", {}, HandCode.RUN_HAS_GAP),
        ("A♠ 2♠ 4♠", {}, HandCode.RUN_HAS_GAP),
        # a run holds each rank once
        ("7♠ 7♠' 8♠ 9♠", {}, HandCode.RUN_REPEATED_RANK),
        # no K-A-2 wrap
        ("K♠ A♠ 2♠", {}, HandCode.RUN_WRAPS),
        ("Q♦ K♦ A♦ 2♦ 3♦", {}, HandCode.RUN_WRAPS),
        ("K♠ JK1 2♠", {"JK1": "A♠"}, HandCode.RUN_WRAPS),
        # the ace is low or high, never both: A-2-…-K-A is not a run
        ("A♠ 2♠ 3♠ 4♠ 5♠ 6♠ 7♠ 8♠ 9♠ 10♠ J♠ Q♠ K♠ A♠'", {}, HandCode.ACE_IN_MIDDLE),
        # at most one joker per meld (default)
        ("5♠ JK1 JK2 8♠", {"JK1": "6♠", "JK2": "7♠"}, HandCode.TOO_MANY_JOKERS),
        # a meld has at least 2 naturals
        ("5♠ JK1 JK2", {"JK1": "6♠", "JK2": "7♠"}, HandCode.TOO_FEW_NATURALS),
        # the meld states each joker's card
        ("5♠ JK1 7♠", {}, HandCode.JOKER_FACE_MISSING),
        # the stated card must fit the meld
        ("5♠ JK1 7♠", {"JK1": "6♥"}, HandCode.JOKER_FACE_INVALID),
        ("5♠ JK1 7♠", {"JK1": "8♠"}, HandCode.RUN_HAS_GAP),
        ("5♠ JK1 6♠", {"JK1": "6♠"}, HandCode.JOKER_FACE_INVALID),
        ("9♣ 9♦ JK1", {"JK1": "9♣"}, HandCode.JOKER_FACE_INVALID),
        ("9♣ 9♦ JK1", {"JK1": "10♥"}, HandCode.JOKER_FACE_INVALID),
    ],
)
def test_each_invalid_meld_has_its_own_code(
    text: str, faces: dict[str, str], code: HandCode
) -> None:
    max_jokers = 2 if text == "5♠ JK1 JK2" else 1
    assert code_of(text, max_jokers=max_jokers, **faces) == code


def test_every_meld_code_is_reachable() -> None:
    # one distinct code per way: the parametrized cases above cover each meld code
    meld_codes = {c for c in HandCode if c.value in {
        "meld_too_short", "duplicate_card", "duplicate_suit_in_set", "set_mixed_ranks",
        "set_too_large", "run_mixed_suits", "run_has_gap", "run_repeated_rank",
        "run_wraps", "ace_in_middle", "too_many_jokers", "too_few_naturals",
        "joker_face_missing", "joker_face_invalid"}}
    assert len(meld_codes) == 14


def test_joker_face_not_a_card_is_invalid() -> None:
    # the stated face must be a card (0..51)
    with pytest.raises(RuleViolation) as caught:
        validate_meld(parse_hand_cards("5♠ JK1 7♠"), {104: 52})
    assert caught.value.code == HandCode.JOKER_FACE_INVALID


def test_card_id_outside_the_deck_is_a_malformed_command() -> None:
    with pytest.raises(InvalidCommand) as caught:
        validate_meld([1, 2, 106], {})
    assert caught.value.code == "invalid_card"


def test_message_names_the_cards() -> None:
    with pytest.raises(RuleViolation) as caught:
        meld("K♠ A♠ 2♠")
    assert hand_cards_text(parse_hand_cards("K♠ A♠ 2♠")) in caught.value.message


def _is_meld_by_definition(faces: list[int], naturals: int, jokers: int) -> bool:
    """docs/rules/hand.md "Melds" read literally, independent of validate_meld's code paths."""
    if len(faces) < 3 or jokers > 1 or naturals < 2 or len(set(faces)) != len(faces):
        return False
    ranks = {f % 13 for f in faces}
    suits = {f // 13 for f in faces}
    if len(ranks) == 1:
        return len(faces) <= 4  # distinct faces of one rank: distinct suits
    if len(suits) != 1:
        return False
    # a run is a window of the ace-low order A 2 … K or of the ace-high order 2 … K A
    for order in ([12, *range(12)], [*range(13)]):
        for start in range(13):
            if set(order[start:start + len(faces)]) == ranks and len(ranks) == len(faces):
                return True
    return False


@st.composite
def near_melds(draw: st.DrawFn) -> tuple[list[int], dict[int, int]]:
    """A set or run (wraps included), perhaps with a joker, perhaps with one card changed."""
    if draw(st.booleans()):
        rank = draw(st.integers(0, 12))
        faces = [s * 13 + rank for s in draw(st.lists(st.integers(0, 3), min_size=2, max_size=5))]
    else:
        suit, start = draw(st.integers(0, 3)), draw(st.integers(0, 12))
        faces = [suit * 13 + (start + i) % 13 for i in range(draw(st.integers(2, 6)))]
    if draw(st.booleans()):
        faces[draw(st.integers(0, len(faces) - 1))] = draw(st.integers(0, 51))
    cards = [draw(st.integers(0, 1)) * 52 + f for f in faces]
    stated: dict[int, int] = {}
    if draw(st.booleans()):
        at = draw(st.integers(0, len(cards)))
        face = faces[at] if at < len(faces) else draw(st.integers(0, 51))
        if at < len(cards):
            cards.pop(at)
        cards.append(104)
        stated = {104: face}
    return cards, stated


@settings(max_examples=400, deadline=None)
@given(meld_and_faces=near_melds())
def test_validate_meld_accepts_exactly_the_melds_of_the_rules(
    meld_and_faces: tuple[list[int], dict[int, int]],
) -> None:
    # docs/rules/hand.md "Melds", read literally by _is_meld_by_definition
    cards, stated = meld_and_faces
    faces = [stated[c] if c in stated else c % 52 for c in cards]
    expected = len(set(cards)) == len(cards) and _is_meld_by_definition(
        faces, len(cards) - len(stated), len(stated))
    try:
        validate_meld(cards, stated)
    except RuleViolation:
        assert not expected, hand_cards_text(cards)
    else:
        assert expected, hand_cards_text(cards)


def test_extension_faces_are_exactly_the_lay_offs_accepted() -> None:
    # docs/rules/hand.md "A turn" 2: legal lists lay-offs from extension_faces without trying
    # them; over every meld 8 random hands can form, it must agree with lay_off.
    rng = random.Random(15)
    checked = 0
    for _ in range(8):
        deck = list(range(106))
        rng.shuffle(deck)
        for meld in candidate_melds(deck[:30], max_jokers=2):
            faces = set(extension_faces(meld))
            jokers = sum(1 for c in meld.cards if is_joker(c))
            for face in range(52):
                card = face if face not in meld.cards else 52 + face
                accepted = True
                try:
                    lay_off(meld, card, max_jokers=2)
                except RuleViolation:
                    accepted = False
                assert accepted == (face in faces), (meld_text(meld), face)
                for max_jokers in (1, 2):
                    joker = next(j for j in (104, 105) if j not in meld.cards)
                    try:
                        lay_off(meld, joker, face, max_jokers=max_jokers)
                        fits = True
                    except RuleViolation:
                        fits = False
                    assert fits == (face in faces and jokers < max_jokers)
                checked += 1
    assert checked > 2_000
