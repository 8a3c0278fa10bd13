"""Card identities, sets of cards as int masks, and the card notation.

A card of one 52-card pack is ``suit * 13 + rank`` (see ``protos/dast/v1/common.proto``):
suits in the order ♠ ♥ ♣ ♦ (the Hokm tie-break order, docs/rules/hokm.md "Cards") and ranks
from 2 (0) to ace (12). A :data:`CardSet` is an int whose bit ``c`` is set when card ``c``
is in the set, as python-chess does with squares; Python ints have no width, so the same
type serves Hand's 106 cards.

>>> card_name(parse_card("10h"))
'10♥'
>>> [card_name(c) for c in iter_cards(mask_of([parse_card("AS"), parse_card("T♥")]))]
['A♠', '10♥']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum
from typing import Final

Card = int
"""One card's identity (for Hokm 0..51)."""
CardSet = int
"""A set of cards as a bit mask: bit ``c`` set when card ``c`` is in the set."""

RANKS_PER_SUIT: Final = 13
SUITS: Final = 4
PACK_SIZE: Final = 52


class Suit(IntEnum):
    """A suit, in the Hokm tie-break order ♠ > ♥ > ♣ > ♦ (index 0 is the highest)."""

    SPADES = 0
    HEARTS = 1
    CLUBS = 2
    DIAMONDS = 3


class Rank(IntEnum):
    """A rank, ordered as in play: 2 lowest, ace highest."""

    TWO = 0
    THREE = 1
    FOUR = 2
    FIVE = 3
    SIX = 4
    SEVEN = 5
    EIGHT = 6
    NINE = 7
    TEN = 8
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12


SUIT_SYMBOLS: Final = ("♠", "♥", "♣", "♦")
SUIT_LETTERS: Final = ("S", "H", "C", "D")
RANK_NAMES: Final = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")

_SUIT_BY_TEXT: Final[dict[str, int]] = {
    **{s: i for i, s in enumerate(SUIT_SYMBOLS)},
    **{s: i for i, s in enumerate(SUIT_LETTERS)},
    "♤": 0, "♡": 1, "♧": 2, "♢": 3,
}
_RANK_BY_TEXT: Final[dict[str, int]] = {
    **{r: i for i, r in enumerate(RANK_NAMES)},
    "T": Rank.TEN, "1": Rank.ACE,
}


class CardNotationError(ValueError):
    """Raised when a text is not a card in dast notation (``A♠``, ``AS``, ``10h``, ``T♥``)."""


def card_of(suit: int, rank: int) -> Card:
    """The card of ``suit`` and ``rank`` in one pack."""
    return suit * RANKS_PER_SUIT + rank


def suit_of(card: Card) -> int:
    """The suit index (0 ♠ .. 3 ♦) of a card of one pack."""
    return card // RANKS_PER_SUIT


def rank_of(card: Card) -> int:
    """The rank index (0 = 2 .. 12 = A) of a card of one pack."""
    return card % RANKS_PER_SUIT


def parse_suit(text: str) -> int:
    """Parse ``♠``, ``S`` or ``s`` (and the other suits likewise) into a suit index.

    :raises CardNotationError: if ``text`` names no suit.
    """
    suit = _SUIT_BY_TEXT.get(text.strip().upper())
    if suit is None:
        raise CardNotationError(f"not a suit: {text!r} (use ♠ ♥ ♣ ♦ or S H C D)")
    return suit


def parse_card(text: str) -> Card:
    """Parse one card of a 52-card pack: ``A♠``, ``AS``, ``as``, ``10h``, ``T♥``, ``2d``.

    :raises CardNotationError: with the offending text, if it is not a card.

    >>> parse_card("A♠"), parse_card("2d")
    (12, 39)
    """
    cleaned = text.strip().upper()
    if len(cleaned) < 2:
        raise CardNotationError(f"not a card: {text!r} (examples: A♠, AS, 10h, T♥)")
    rank = _RANK_BY_TEXT.get(cleaned[:-1])
    suit = _SUIT_BY_TEXT.get(cleaned[-1])
    if rank is None or suit is None:
        raise CardNotationError(f"not a card: {text!r} (examples: A♠, AS, 10h, T♥)")
    return card_of(suit, rank)


def parse_cards(text: str) -> list[Card]:
    """Parse cards separated by spaces or commas: ``"A♠ 10h, 2d"``."""
    return [parse_card(token) for token in text.replace(",", " ").split()]


def card_name(card: Card, *, ascii_only: bool = False) -> str:
    """Format a card: ``A♠`` (or ``AS`` with ``ascii_only``); parses back with
    :func:`parse_card`."""
    suits = SUIT_LETTERS if ascii_only else SUIT_SYMBOLS
    return RANK_NAMES[rank_of(card)] + suits[suit_of(card)]


def cards_text(cards: Iterable[Card], *, ascii_only: bool = False) -> str:
    """Format several cards separated by spaces."""
    return " ".join(card_name(c, ascii_only=ascii_only) for c in cards)


# ---- masks (python-chess style: raw ints internally, named helpers around them) ----

SUIT_MASKS: Final[tuple[CardSet, ...]] = tuple(
    ((1 << RANKS_PER_SUIT) - 1) << (s * RANKS_PER_SUIT) for s in range(SUITS)
)
"""Every card of suit ``s`` in one pack."""
FULL_PACK: Final[CardSet] = (1 << PACK_SIZE) - 1
ACES_MASK: Final[CardSet] = sum(1 << card_of(s, Rank.ACE) for s in range(SUITS))


def mask_of(cards: Iterable[Card]) -> CardSet:
    """The set holding exactly ``cards``."""
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


def popcount(mask: CardSet) -> int:
    """How many cards a set holds."""
    return mask.bit_count()


def lowest(mask: CardSet) -> Card:
    """The lowest-numbered card of a non-empty set."""
    return (mask & -mask).bit_length() - 1


def highest(mask: CardSet) -> Card:
    """The highest-numbered card of a non-empty set."""
    return mask.bit_length() - 1


def iter_cards(mask: CardSet) -> Iterator[Card]:
    """The cards of a set in ascending order."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
