"""Hand's card identities, notation and values (docs/rules/hand.md "Cards")."""

from __future__ import annotations

import pytest

from engine.core.cards import CardNotationError, parse_card
from engine.hand.cards import (
    DECK_SIZE,
    FULL_DECK,
    JOKERS,
    copy_of,
    hand_card_name,
    hand_card_of,
    hand_cards_text,
    is_joker,
    natural_of,
    opening_value,
    parse_hand_card,
    parse_hand_cards,
    penalty_value,
    rank_of,
    suit_of,
)


def test_deck_has_two_packs_and_two_jokers() -> None:
    # docs/rules/hand.md "Cards": 106 cards, every natural twice, each with its own identity
    assert DECK_SIZE == 106 and JOKERS == (104, 105)
    assert FULL_DECK.bit_count() == 106
    faces = [natural_of(c) for c in range(104)]
    assert all(faces.count(f) == 2 for f in range(52))
    assert [is_joker(c) for c in (0, 103, 104, 105)] == [False, False, True, True]


def test_identity_is_copy_suit_rank() -> None:
    # DESIGN convention: copy*52 + suit*13 + rank; suit 0 ♠ .. 3 ♦, rank 0 = 2 .. 12 = A
    card = parse_hand_card("Q♦'")
    assert card == 52 + 3 * 13 + 10
    assert (copy_of(card), suit_of(card), rank_of(card), natural_of(card)) == (1, 3, 10, 49)
    assert hand_card_of(natural_of(card), 1) == card
    assert [copy_of(j) for j in JOKERS] == [0, 1]


def test_jokers_have_no_natural_face() -> None:
    # docs/rules/hand.md "Melds": a joker only stands for a card a meld states
    for joker in JOKERS:
        with pytest.raises(ValueError):
            natural_of(joker)
        with pytest.raises(ValueError):
            suit_of(joker)
    with pytest.raises(ValueError):
        natural_of(106)


def test_notation_round_trips_every_card() -> None:
    # cards.py notation: A♠ copy 0, A♠' copy 1, JK1/JK2; ASCII forms parse back too
    for card in range(DECK_SIZE):
        assert parse_hand_card(hand_card_name(card)) == card
        assert parse_hand_card(hand_card_name(card, ascii_only=True)) == card
    assert hand_card_name(parse_hand_card("as'")) == "A♠'"
    assert parse_hand_cards("A♠, A♠' jk2") == [12, 64, 105]
    assert hand_cards_text([12, 64, 104]) == "A♠ A♠' JK1"


@pytest.mark.parametrize("text", ["", "JK3", "X♠", "A♠''", "11♥"])
def test_bad_notation_is_rejected(text: str) -> None:
    with pytest.raises(CardNotationError):
        parse_hand_card(text)


def test_opening_values() -> None:
    # docs/rules/hand.md "Cards": 2-10 face value, J/Q/K 10, A 11, low ace ace_low_value (1)
    assert opening_value(parse_card("7♣"), ace_low=False) == 7
    assert opening_value(parse_card("10♣"), ace_low=False) == 10
    assert [opening_value(parse_card(t), ace_low=False) for t in ("J♠", "Q♠", "K♠")] == [10] * 3
    assert opening_value(parse_card("A♥"), ace_low=False) == 11
    assert opening_value(parse_card("A♥"), ace_low=True) == 1
    assert opening_value(parse_card("A♥"), ace_low=True, ace_low_value=11) == 11
    assert opening_value(parse_card("5♥"), ace_low=True) == 5  # only the ace is ever low


def test_penalty_values() -> None:
    # docs/rules/hand.md "Cards": penalties as opening values with A = 11 always, joker 15
    assert penalty_value(parse_hand_card("A♦'")) == 11
    assert penalty_value(parse_hand_card("K♦")) == 10
    assert penalty_value(parse_hand_card("3♠")) == 3
    assert penalty_value(104) == 15
    assert penalty_value(105, joker_penalty=50) == 50  # option joker_penalty
