"""Card identities and notation (engine/core/cards.py; docs/rules/hokm.md "Cards")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.cards import (
    ACES_MASK,
    FULL_PACK,
    SUIT_MASKS,
    CardNotationError,
    Rank,
    Suit,
    card_name,
    card_of,
    cards_text,
    highest,
    iter_cards,
    lowest,
    mask_of,
    parse_card,
    parse_cards,
    parse_suit,
    popcount,
    rank_of,
    suit_of,
)


@pytest.mark.parametrize(
    ("text", "suit", "rank"),
    [
        ("A♠", Suit.SPADES, Rank.ACE),
        ("AS", Suit.SPADES, Rank.ACE),
        ("as", Suit.SPADES, Rank.ACE),
        ("10h", Suit.HEARTS, Rank.TEN),
        ("T♥", Suit.HEARTS, Rank.TEN),
        ("2d", Suit.DIAMONDS, Rank.TWO),
        ("Q♣", Suit.CLUBS, Rank.QUEEN),
        (" kc ", Suit.CLUBS, Rank.KING),
    ],
)
def test_parse_card_accepts_every_documented_notation(text: str, suit: Suit, rank: Rank) -> None:
    assert parse_card(text) == card_of(suit, rank)


@pytest.mark.parametrize("text", ["", "A", "1x", "11S", "ZZ", "♠A", "10", "A♠♠"])
def test_parse_card_rejects_garbage_with_the_offending_text(text: str) -> None:
    with pytest.raises(CardNotationError) as caught:
        parse_card(text)
    assert repr(text) in str(caught.value)


@given(st.integers(min_value=0, max_value=51), st.booleans())
def test_card_name_round_trips_through_parse_card(card: int, ascii_only: bool) -> None:
    assert parse_card(card_name(card, ascii_only=ascii_only)) == card


def test_suit_order_is_the_hokm_tie_break_order() -> None:
    # docs/rules/hokm.md "Cards": ♠ > ♥ > ♣ > ♦ only breaks ties when choosing the hakem.
    assert [card_name(card_of(s, Rank.ACE)) for s in Suit] == ["A♠", "A♥", "A♣", "A♦"]
    assert [parse_suit(t) for t in ("♠", "h", "C", "♦")] == list(Suit)
    with pytest.raises(CardNotationError):
        parse_suit("x")


def test_rank_order_is_ace_high_two_low() -> None:
    # docs/rules/hokm.md "Cards": A K Q J 10 9 8 7 6 5 4 3 2, high to low.
    order = [card_name(card_of(Suit.SPADES, r)) for r in sorted(Rank, reverse=True)]
    assert order == ["A♠", "K♠", "Q♠", "J♠", "10♠", "9♠", "8♠", "7♠", "6♠", "5♠", "4♠", "3♠", "2♠"]


def test_masks_cover_the_pack() -> None:
    assert popcount(FULL_PACK) == 52
    assert sum(SUIT_MASKS) == FULL_PACK
    assert all(popcount(mask) == 13 for mask in SUIT_MASKS)
    assert [card_name(c) for c in iter_cards(ACES_MASK)] == ["A♠", "A♥", "A♣", "A♦"]


@given(st.sets(st.integers(min_value=0, max_value=51), min_size=1))
def test_mask_helpers_agree_with_sets(cards: set[int]) -> None:
    mask = mask_of(cards)
    assert list(iter_cards(mask)) == sorted(cards)
    assert popcount(mask) == len(cards)
    assert lowest(mask) == min(cards)
    assert highest(mask) == max(cards)
    assert all(suit_of(c) * 13 + rank_of(c) == c for c in cards)


def test_parse_cards_and_cards_text_round_trip() -> None:
    cards = parse_cards("A♠ 10h, 2d")
    assert cards_text(cards) == "A♠ 10♥ 2♦"
    assert cards_text(cards, ascii_only=True) == "AS 10H 2D"
