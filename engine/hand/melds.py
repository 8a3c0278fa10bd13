"""Melds of Hand: validation, value, lay-off, joker retrieval, candidate listing.

docs/rules/hand.md "Melds": a **set** is 3 or 4 cards of one rank in different suits; a **run**
is 3 or more consecutive cards of one suit, the ace low (A-2-3) or high (Q-K-A) but never
both and never in the middle (no K-A-2). A joker stands for a stated card; at most
``max_jokers`` (option ``max_jokers_per_meld``, default 1) per meld, and at least 2
naturals. :func:`validate_meld` raises one distinct :class:`~engine.hand.errors.HandCode`
per way a meld is invalid.

>>> from engine.core.cards import parse_card
>>> from engine.hand.cards import parse_hand_cards
>>> meld = validate_meld(parse_hand_cards("A♠ 3♠ JK1"), {104: parse_card("2♠")})
>>> meld_text(meld), meld_value(meld)
('A♠ JK1=2♠ 3♠', 6)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from engine.core.cards import RANKS_PER_SUIT, SUITS, Rank, card_name
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.hand.cards import (
    Face,
    HandCard,
    hand_card_name,
    hand_cards_text,
    is_card,
    is_joker,
    natural_of,
    opening_value,
)
from engine.hand.errors import HandCode

__all__ = [
    "Meld",
    "MeldKind",
    "candidate_melds",
    "extension_faces",
    "is_ace_low",
    "joker_faces_of",
    "joker_retrievals",
    "lay_off",
    "meld_text",
    "meld_value",
    "retrieve_joker",
    "run_position",
    "validate_meld",
]

ACE = int(Rank.ACE)
ACE_LOW_POSITION = 0
ACE_HIGH_POSITION = 13
"""Runs are laid on positions 0..13: 0 the low ace, rank r at r+1, 13 the high ace."""
MAX_RUN_LENGTH = 13
"""A run holds each rank once, so at most 13 cards (A-…-K or 2-…-A, never both aces)."""


class MeldKind(IntEnum):
    """What a meld is."""

    SET = 1
    RUN = 2


@dataclass(frozen=True, slots=True)
class Meld:
    """A valid meld, as laid on the table (a plain value: hashable, comparable)."""

    kind: MeldKind
    cards: tuple[HandCard, ...]
    """Physical ids in meld order: runs ascending (low ace first), sets by suit."""
    faces: tuple[Face, ...]
    """The face (0..51) each card stands for: its own for a natural, the stated one for a
    joker."""


def run_position(face: Face, *, ace_low: bool) -> int:
    """The position of ``face`` in a run (0 low ace, rank+1, 13 high ace)."""
    rank = face % RANKS_PER_SUIT
    if rank == ACE:
        return ACE_LOW_POSITION if ace_low else ACE_HIGH_POSITION
    return rank + 1


def joker_faces_of(meld: Meld) -> dict[HandCard, Face]:
    """The face each joker of ``meld`` stands for."""
    return {c: f for c, f in zip(meld.cards, meld.faces, strict=True) if is_joker(c)}


def meld_text(meld: Meld) -> str:
    """The meld in notation, jokers with their face: ``5♠ JK1=6♠ 7♠``."""
    return " ".join(
        f"{hand_card_name(c)}={card_name(f)}" if is_joker(c) else hand_card_name(c)
        for c, f in zip(meld.cards, meld.faces, strict=True)
    )


def _violation(code: HandCode, cards: Sequence[HandCard], why: str) -> RuleViolation:
    return RuleViolation(code, f"not a valid meld: {hand_cards_text(cards)}: {why}")


def validate_meld(
    cards: Sequence[HandCard], joker_faces: Mapping[HandCard, Face], *, max_jokers: int = 1
) -> Meld:
    """Check that ``cards`` form a meld and return it in meld order.

    ``joker_faces`` maps every joker in ``cards`` to the face it stands for (other keys
    are ignored). The cards may come in any order.

    :raises InvalidCommand: ``invalid_card`` when an id is not a card of the deck.
    :raises RuleViolation: with one :class:`HandCode` per way the meld is invalid:
        ``duplicate_card``, ``meld_too_short``, ``too_many_jokers``, ``too_few_naturals``,
        ``joker_face_missing``, ``joker_face_invalid``, ``set_mixed_ranks``,
        ``set_too_large``, ``duplicate_suit_in_set``, ``run_mixed_suits``,
        ``run_repeated_rank``, ``ace_in_middle``, ``run_wraps``, ``run_has_gap``.

    >>> from engine.hand.cards import parse_hand_cards
    >>> meld_text(validate_meld(parse_hand_cards("K♥ A♥ Q♥'"), {}))
    "Q♥' K♥ A♥"
    >>> validate_meld(parse_hand_cards("K♥ A♥ 2♥"), {})
    Traceback (most recent call last):
    ...
    engine.core.errors.RuleViolation: not a valid meld: K♥ A♥ 2♥: ...
    """
    for card in cards:
        if not is_card(card):
            raise InvalidCommand(Code.INVALID_CARD, f"not a card id: {card!r}")
    if len(set(cards)) != len(cards):
        raise _violation(HandCode.DUPLICATE_CARD, cards, "the same card twice")
    if len(cards) < 3:
        raise _violation(HandCode.MELD_TOO_SHORT, cards, "a meld has at least 3 cards")
    jokers = [c for c in cards if is_joker(c)]
    naturals = [c for c in cards if not is_joker(c)]
    if len(jokers) > max_jokers:
        raise _violation(
            HandCode.TOO_MANY_JOKERS, cards, f"at most {max_jokers} joker(s) per meld"
        )
    if len(naturals) < 2:
        raise _violation(HandCode.TOO_FEW_NATURALS, cards, "a meld needs 2 natural cards")
    stated: dict[HandCard, Face] = {}
    for joker in jokers:
        face = joker_faces.get(joker)
        if face is None:
            raise _violation(
                HandCode.JOKER_FACE_MISSING, cards, f"{hand_card_name(joker)} states no card"
            )
        if not isinstance(face, int) or not 0 <= face < SUITS * RANKS_PER_SUIT:
            raise _violation(
                HandCode.JOKER_FACE_INVALID, cards, f"{hand_card_name(joker)} = {face!r}"
            )
        stated[joker] = face
    natural_faces = [natural_of(c) for c in naturals]
    ranks = {f % RANKS_PER_SUIT for f in natural_faces}
    suits = {f // RANKS_PER_SUIT for f in natural_faces}
    if len(ranks) == 1:
        return _validate_set(cards, naturals, stated)
    if len(suits) == 1:
        return _validate_run(cards, naturals, stated)
    if len(ranks) == len(natural_faces):  # distinct ranks: meant as a run
        raise _violation(HandCode.RUN_MIXED_SUITS, cards, "a run is all of one suit")
    raise _violation(HandCode.SET_MIXED_RANKS, cards, "a set is all of one rank")


def _validate_set(
    cards: Sequence[HandCard], naturals: list[HandCard], stated: dict[HandCard, Face]
) -> Meld:
    if len(cards) > SUITS:
        raise _violation(HandCode.SET_TOO_LARGE, cards, "a set has at most 4 cards")
    by_suit: dict[int, HandCard] = {}
    for card in naturals:
        suit = natural_of(card) // RANKS_PER_SUIT
        if suit in by_suit:
            raise _violation(
                HandCode.DUPLICATE_SUIT_IN_SET, cards,
                f"{hand_card_name(by_suit[suit])} and {hand_card_name(card)} share a suit",
            )
        by_suit[suit] = card
    rank = natural_of(naturals[0]) % RANKS_PER_SUIT
    faces = {natural_of(c): c for c in naturals}
    for joker, face in stated.items():
        if face % RANKS_PER_SUIT != rank or face in faces:
            raise _violation(
                HandCode.JOKER_FACE_INVALID, cards,
                f"{hand_card_name(joker)} = {card_name(face)} is not a missing suit of the set",
            )
        faces[face] = joker
    order = sorted(faces)
    return Meld(MeldKind.SET, tuple(faces[f] for f in order), tuple(order))


def _validate_run(
    cards: Sequence[HandCard], naturals: list[HandCard], stated: dict[HandCard, Face]
) -> Meld:
    faces: dict[Face, HandCard] = {}
    for card in naturals:
        face = natural_of(card)
        if face in faces:
            code = (
                HandCode.ACE_IN_MIDDLE if face % RANKS_PER_SUIT == ACE
                else HandCode.RUN_REPEATED_RANK
            )
            raise _violation(
                code, cards, f"{hand_card_name(faces[face])} and {hand_card_name(card)} "
                "are the same rank (an ace is low or high, never both)",
            )
        faces[face] = card
    suit = natural_of(naturals[0]) // RANKS_PER_SUIT
    for joker, face in stated.items():
        if face // RANKS_PER_SUIT != suit or face in faces:
            raise _violation(
                HandCode.JOKER_FACE_INVALID, cards,
                f"{hand_card_name(joker)} = {card_name(face)} does not fit the run",
            )
        faces[face] = joker
    ranks = sorted(f % RANKS_PER_SUIT for f in faces)
    for ace_low in (False, True):  # prefer the high ace: only A-…-K vs 2-…-A is ambiguous
        positions = sorted(
            (run_position(f, ace_low=ace_low), f) for f in faces
        )
        if positions[-1][0] - positions[0][0] + 1 == len(positions):
            order = [f for _, f in positions]
            return Meld(MeldKind.RUN, tuple(faces[f] for f in order), tuple(order))
        if ACE not in ranks:
            break
    cyclic_breaks = sum(
        1 for a, b in zip(ranks, [*ranks[1:], ranks[0] + RANKS_PER_SUIT], strict=True)
        if b - a != 1
    )
    if cyclic_breaks == 1:
        raise _violation(HandCode.RUN_WRAPS, cards, "no K-A-2: the ace is low or high")
    raise _violation(HandCode.RUN_HAS_GAP, cards, "a run's ranks are consecutive")


def is_ace_low(meld: Meld) -> bool:
    """Whether ``meld`` is a run starting with the low ace (A-2-3…)."""
    return meld.kind is MeldKind.RUN and meld.faces[0] % RANKS_PER_SUIT == ACE


def meld_value(meld: Meld, *, ace_low_value: int = 1) -> int:
    """The meld's contribution to an opening total: a joker counts as its face, the low ace
    of A-2-3 counts ``ace_low_value`` (docs/rules/hand.md "Cards", option ``ace_low_value``).

    >>> from engine.hand.cards import parse_hand_cards
    >>> meld_value(validate_meld(parse_hand_cards("Q♣ K♣ A♣"), {}))
    31
    """
    low = is_ace_low(meld)
    return sum(
        opening_value(face, ace_low=low and i == 0, ace_low_value=ace_low_value)
        for i, face in enumerate(meld.faces)
    )


def lay_off(
    meld: Meld, card: HandCard, joker_face: Face | None = None, *, max_jokers: int = 1
) -> Meld:
    """Extend a table meld by one card: at either end of a run, or into a set's missing
    suit (docs/rules/hand.md "A turn" 2). A joker needs ``joker_face``.

    :raises RuleViolation: ``cannot_lay_off`` (the message says why).

    >>> from engine.hand.cards import parse_hand_card, parse_hand_cards
    >>> run = validate_meld(parse_hand_cards("5♠ 6♠ 7♠"), {})
    >>> meld_text(lay_off(run, parse_hand_card("4♠'")))
    "4♠' 5♠ 6♠ 7♠"
    """
    if card in meld.cards:
        raise RuleViolation(
            HandCode.CANNOT_LAY_OFF, f"{hand_card_name(card)} is already in {meld_text(meld)}"
        )
    faces = joker_faces_of(meld)
    if is_card(card) and is_joker(card):
        if joker_face is None:
            raise RuleViolation(
                HandCode.CANNOT_LAY_OFF,
                f"{hand_card_name(card)} laid off on {meld_text(meld)} states no card",
            )
        faces[card] = joker_face
    try:
        extended = validate_meld((*meld.cards, card), faces, max_jokers=max_jokers)
    except InvalidCommand:
        raise
    except RuleViolation as error:
        raise RuleViolation(
            HandCode.CANNOT_LAY_OFF,
            f"{hand_card_name(card)} does not extend {meld_text(meld)}: {error.message}",
        ) from None
    if extended.kind is not meld.kind:  # defensive: a set never turns into a run
        raise RuleViolation(HandCode.CANNOT_LAY_OFF, f"{meld_text(meld)} changes kind")
    return extended


def retrieve_joker(meld: Meld, cards: Sequence[HandCard]) -> tuple[Meld, HandCard]:
    """Put natural card(s) in place of the meld's joker; return the new meld and the joker
    (docs/rules/hand.md "Joker retrieval"): a run needs the exact card the joker stands
    for; a set of two naturals and a joker needs BOTH missing suits at once; a set of three
    naturals and a joker needs the one missing suit.

    :raises RuleViolation: ``cannot_retrieve_joker`` (the message says why).

    >>> from engine.core.cards import parse_card
    >>> from engine.hand.cards import parse_hand_cards
    >>> run = validate_meld(parse_hand_cards("5♠ JK2 7♠"), {105: parse_card("6♠")})
    >>> new, joker = retrieve_joker(run, parse_hand_cards("6♠'"))
    >>> meld_text(new), hand_card_name(joker)
    ("5♠ 6♠' 7♠", 'JK2')
    """
    jokers = [c for c in meld.cards if is_joker(c)]

    def refuse(why: str) -> RuleViolation:
        return RuleViolation(
            HandCode.CANNOT_RETRIEVE_JOKER,
            f"cannot retrieve a joker from {meld_text(meld)} with "
            f"{hand_cards_text(c for c in cards if is_card(c))}: {why}",
        )

    if not jokers:
        raise refuse("the meld holds no joker")
    if any(not is_card(c) or is_joker(c) for c in cards) or not cards:
        raise refuse("only natural cards take a joker's place")
    if len(set(cards)) != len(cards) or any(c in meld.cards for c in cards):
        raise refuse("the same card twice")
    given = sorted(natural_of(c) for c in cards)
    placed = dict(zip(meld.cards, meld.faces, strict=True))
    if meld.kind is MeldKind.RUN:
        if len(cards) != 1:
            raise refuse("a run's joker is replaced by the one card it stands for")
        joker = next((j for j in jokers if placed[j] == given[0]), None)
        if joker is None:
            raise refuse("a run's joker is replaced only by the exact card it stands for")
        new_cards = tuple(cards[0] if c == joker else c for c in meld.cards)
        return Meld(meld.kind, new_cards, meld.faces), joker
    if len(jokers) != 1:
        raise refuse("a set with two jokers gives one back only when completed naturally")
    joker = jokers[0]
    natural_faces = {f for c, f in placed.items() if not is_joker(c)}
    rank = next(iter(natural_faces)) % RANKS_PER_SUIT
    missing = sorted(s * RANKS_PER_SUIT + rank for s in range(SUITS)
                     if s * RANKS_PER_SUIT + rank not in natural_faces)
    if given != missing:
        raise refuse(
            "a set's joker is replaced by every missing suit at once: "
            + " ".join(card_name(f) for f in missing)
        )
    by_face = {f: c for c, f in placed.items() if not is_joker(c)}
    by_face.update(zip((natural_of(c) for c in cards), cards, strict=True))
    order = sorted(by_face)
    return Meld(meld.kind, tuple(by_face[f] for f in order), tuple(order)), joker


def extension_faces(meld: Meld) -> tuple[Face, ...]:
    """The faces one more card laid off on ``meld`` may show or stand for, ascending: a
    set's missing suits (while it has fewer than 4 cards); the card just below a run's
    low end and just above its high end (the ace low below a 2, high above a K; never
    both aces). :func:`lay_off` accepts a natural of one of these faces, and a joker
    stating one while the meld holds fewer than ``max_jokers`` jokers.

    >>> from engine.hand.cards import parse_hand_cards
    >>> run = validate_meld(parse_hand_cards("2♠ 3♠ 4♠"), {})
    >>> [card_name(f) for f in extension_faces(run)]
    ['5♠', 'A♠']
    """
    faces = meld.faces
    if meld.kind is MeldKind.SET:
        if len(faces) >= SUITS:
            return ()
        rank = faces[0] % RANKS_PER_SUIT
        return tuple(s * RANKS_PER_SUIT + rank for s in range(SUITS)
                     if s * RANKS_PER_SUIT + rank not in faces)
    suit = faces[0] // RANKS_PER_SUIT
    low = run_position(faces[0], ace_low=is_ace_low(meld))
    high = low + len(faces) - 1
    found = set()
    if low > ACE_LOW_POSITION and not (low - 1 == ACE_LOW_POSITION and high == ACE_HIGH_POSITION):
        found.add(suit * RANKS_PER_SUIT + _rank_at(low - 1))
    if high < ACE_HIGH_POSITION and not (high + 1 == ACE_HIGH_POSITION and low == ACE_LOW_POSITION):
        found.add(suit * RANKS_PER_SUIT + _rank_at(high + 1))
    return tuple(sorted(f for f in found if f not in faces))


def _rank_at(position: int) -> int:
    """The rank at a run position (the ace at both ends)."""
    return ACE if position in (ACE_LOW_POSITION, ACE_HIGH_POSITION) else position - 1


def joker_retrievals(meld: Meld) -> list[tuple[tuple[Face, ...], HandCard]]:
    """For each joker :func:`retrieve_joker` would give back from ``meld``: the faces that
    take its place (a run's exact card; a set's every missing suit) and the joker.

    >>> from engine.core.cards import parse_card
    >>> from engine.hand.cards import parse_hand_cards
    >>> run = validate_meld(parse_hand_cards("4♦ JK1 6♦"), {104: parse_card("5♦")})
    >>> [([card_name(f) for f in faces], joker) for faces, joker in joker_retrievals(run)]
    [(['5♦'], 104)]
    """
    if meld.kind is MeldKind.RUN:
        return [((face,), card) for card, face in zip(meld.cards, meld.faces, strict=True)
                if is_joker(card)]
    jokers = [c for c in meld.cards if is_joker(c)]
    if len(jokers) != 1:
        return []  # a set holding two jokers gives none back
    naturals = {f for c, f in zip(meld.cards, meld.faces, strict=True) if not is_joker(c)}
    rank = meld.faces[0] % RANKS_PER_SUIT
    missing = tuple(s * RANKS_PER_SUIT + rank for s in range(SUITS)
                    if s * RANKS_PER_SUIT + rank not in naturals)
    return [(missing, jokers[0])]


# The listing lives in its own module (it only builds on the functions above); re-exported
# here because callers find every meld operation in this module.
from engine.hand.candidates import candidate_melds  # noqa: E402
