"""Hand's 106 physical cards: identities, notation and the two point scales.

A natural card is ``copy * 52 + face`` where ``face = suit * 13 + rank`` is the Hokm card
of :mod:`engine.core.cards` (``copy`` 0 or 1: the two packs, docs/rules/hand.md "Cards"); the
two jokers are 104 and 105. A :data:`~engine.core.cards.CardSet` mask serves a hand.

Notation: a natural of pack 0 is written like a Hokm card (``A♠``), one of pack 1 takes a
prime (``A♠'``); the jokers are ``JK1`` (104) and ``JK2`` (105). :func:`parse_hand_card`
reads back every name :func:`hand_card_name` writes, and the ASCII forms (``AS'``).

>>> hand_card_name(parse_hand_card("A♠'")), natural_of(parse_hand_card("A♠'"))
("A♠'", 12)
>>> [hand_card_name(c) for c in JOKERS]
['JK1', 'JK2']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from engine.core.cards import (
    PACK_SIZE,
    RANKS_PER_SUIT,
    CardNotationError,
    CardSet,
    Rank,
    card_name,
    parse_card,
)

HandCard = int
"""One physical Hand card: 0..103 naturals (``copy*52 + suit*13 + rank``), 104/105 jokers."""
Face = int
"""The natural a card shows or stands for: ``suit*13 + rank`` (0..51), as in Hokm."""

COPIES: Final = 2
NATURALS: Final = COPIES * PACK_SIZE
"""How many natural cards the deck holds (104)."""
JOKERS: Final = (104, 105)
DECK_SIZE: Final = 106
FULL_DECK: Final[CardSet] = (1 << DECK_SIZE) - 1
"""Every card of the deck as a mask."""
JOKERS_MASK: Final[CardSet] = (1 << JOKERS[0]) | (1 << JOKERS[1])
JOKER_NAMES: Final = ("JK1", "JK2")
COPY_MARK: Final = "'"

ACE_VALUE: Final = 11
"""An ace's value when it is not the low ace of A-2-3 (docs/rules/hand.md "Cards")."""
DEFAULT_JOKER_PENALTY: Final = 15


def is_card(card: int) -> bool:
    """Whether ``card`` is an id of the 106-card deck."""
    return 0 <= card < DECK_SIZE


def is_joker(card: HandCard) -> bool:
    """Whether ``card`` is one of the two jokers."""
    return card >= NATURALS


def _check_natural(card: HandCard) -> None:
    if not 0 <= card < NATURALS:
        what = "a joker" if card in JOKERS else "not a card"
        raise ValueError(f"card {card} is {what}, not a natural card")


def natural_of(card: HandCard) -> Face:
    """The face (0..51) of a natural card.

    :raises ValueError: for a joker or an id outside the deck.

    >>> natural_of(52 + 12)
    12
    """
    _check_natural(card)
    return card % PACK_SIZE


def suit_of(card: HandCard) -> int:
    """The suit (0 ♠ .. 3 ♦) of a natural card. :raises ValueError: for a joker."""
    return natural_of(card) // RANKS_PER_SUIT


def rank_of(card: HandCard) -> int:
    """The rank (0 = 2 .. 12 = A) of a natural card. :raises ValueError: for a joker."""
    return natural_of(card) % RANKS_PER_SUIT


def copy_of(card: HandCard) -> int:
    """The pack copy (0 or 1) of a natural card; for a joker, which joker (0 or 1).

    :raises ValueError: for an id outside the deck.
    """
    if not is_card(card):
        raise ValueError(f"not a card id: {card}")
    return card - NATURALS if is_joker(card) else card // PACK_SIZE


def hand_card_of(face: Face, copy: int = 0) -> HandCard:
    """The physical card of ``face`` in pack ``copy``.

    :raises ValueError: if ``face`` is not 0..51 or ``copy`` not 0/1.
    """
    if not 0 <= face < PACK_SIZE or copy not in (0, 1):
        raise ValueError(f"no card of face {face} in copy {copy}")
    return copy * PACK_SIZE + face


def hand_card_name(card: HandCard, *, ascii_only: bool = False) -> str:
    """Format a card: ``A♠`` (pack 0), ``A♠'`` (pack 1), ``JK1``/``JK2`` for the jokers.

    :raises ValueError: for an id outside the deck.
    """
    if not is_card(card):
        raise ValueError(f"not a card id: {card}")
    if is_joker(card):
        return JOKER_NAMES[card - NATURALS]
    name = card_name(card % PACK_SIZE, ascii_only=ascii_only)
    return name + COPY_MARK if card >= PACK_SIZE else name


def face_name(face: Face) -> str:
    """Format a face (the card a joker stands for): ``A♠``."""
    return card_name(face)


def parse_hand_card(text: str) -> HandCard:
    """Parse ``A♠``, ``A♠'``, ``as'``, ``10h``, ``JK1``/``JK2`` (case-insensitive).

    :raises CardNotationError: with the offending text, if it is not a card.
    """
    cleaned = text.strip().upper()
    if cleaned in JOKER_NAMES:
        return JOKERS[JOKER_NAMES.index(cleaned)]
    copy = 0
    if cleaned.endswith(COPY_MARK):
        copy, cleaned = 1, cleaned[: -len(COPY_MARK)]
    try:
        face = parse_card(cleaned)
    except CardNotationError:
        raise CardNotationError(
            f"not a Hand card: {text!r} (examples: A♠, A♠' for the second pack, JK1)"
        ) from None
    return copy * PACK_SIZE + face


def parse_hand_cards(text: str) -> list[HandCard]:
    """Parse cards separated by spaces or commas: ``"A♠ A♠' JK1"``."""
    return [parse_hand_card(token) for token in text.replace(",", " ").split()]


def hand_cards_text(cards: Iterable[HandCard], *, ascii_only: bool = False) -> str:
    """Format several cards separated by spaces (parses back with :func:`parse_hand_cards`)."""
    return " ".join(hand_card_name(c, ascii_only=ascii_only) for c in cards)


def opening_value(face: Face, *, ace_low: bool, ace_low_value: int = 1) -> int:
    """A face's value in an opening total: 2–10 face value, J/Q/K 10, A 11, or
    ``ace_low_value`` when it is the low ace of A-2-3 (docs/rules/hand.md "Cards").

    >>> opening_value(parse_card("A♠"), ace_low=True), opening_value(10 + 13, ace_low=False)
    (1, 10)
    """
    rank = face % RANKS_PER_SUIT
    if rank == Rank.ACE:
        return ace_low_value if ace_low else ACE_VALUE
    return min(rank + 2, 10)


def penalty_value(card: HandCard, *, joker_penalty: int = DEFAULT_JOKER_PENALTY) -> int:
    """A card's penalty when left in hand: as :func:`opening_value` with A = 11 always, and
    a joker = ``joker_penalty`` (docs/rules/hand.md "Cards", option ``joker_penalty``).

    :raises ValueError: for an id outside the deck.

    >>> penalty_value(parse_hand_card("JK2")), penalty_value(parse_hand_card("A♦'"))
    (15, 11)
    """
    if is_joker(card):
        if not is_card(card):
            raise ValueError(f"not a card id: {card}")
        return joker_penalty
    return opening_value(natural_of(card), ace_low=False)
