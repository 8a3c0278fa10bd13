"""A plain exact meld search, the in-run baseline of ``bench/hand_engine.py``.

It is the textbook way to find the best opening exactly: list every meld the hand can
form (every set, every run segment, each with and without one joker standing for each
face it could take, in every choice of physical copies), then search depth-first over
"the lowest remaining card is left out, or used in one of the melds that contain it",
memoizing on the cards left. It is exact and never capped, like the engine's solver, but
has none of its pruning, bounds or symmetry: measuring both on the same hands in one run
gives a ratio that the machine's noise does not distort.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, product

from engine.core.cards import RANKS_PER_SUIT, SUITS
from engine.core.errors import RuleViolation
from engine.hand.cards import is_joker, natural_of
from engine.hand.melds import Meld, meld_value, validate_meld

_ACE = RANKS_PER_SUIT - 1


def _face_at(suit: int, position: int) -> int:
    """The face at run position ``position`` (0 = low ace, 1..12 = 2..K, 13 = high ace)."""
    rank = _ACE if position in (0, 13) else position - 1
    return suit * RANKS_PER_SUIT + rank


def all_melds(hand: Sequence[int]) -> list[tuple[frozenset[int], int]]:
    """Every meld of ``hand`` with at most one joker: (its cards, its opening value)."""
    jokers = [card for card in hand if is_joker(card)]
    by_face: dict[int, list[int]] = {}
    for card in hand:
        if not is_joker(card):
            by_face.setdefault(natural_of(card), []).append(card)
    found: dict[frozenset[int], int] = {}

    def add(cards: list[int], joker_faces: dict[int, int]) -> None:
        try:
            meld: Meld = validate_meld(cards, joker_faces)
        except RuleViolation:
            return
        key = frozenset(cards)
        found[key] = max(found.get(key, 0), meld_value(meld))

    for rank in range(RANKS_PER_SUIT):
        faces = [suit * RANKS_PER_SUIT + rank for suit in range(SUITS)]
        present = [face for face in faces if face in by_face]
        for size in (2, 3, 4):
            for chosen in combinations(present, size):
                for copies in product(*(by_face[face] for face in chosen)):
                    if size >= 3:
                        add(list(copies), {})
                    missing = [face for face in faces if face not in chosen]
                    if size <= 3:
                        for joker, face in product(jokers, missing):
                            add([*copies, joker], {joker: face})
    for suit in range(SUITS):
        for first in range(14):
            for last in range(first + 2, 14):
                positions = range(first, last + 1)
                faces = [_face_at(suit, p) for p in positions]
                options = [by_face.get(face, []) for face in faces]
                if all(options):
                    for copies in product(*options):
                        add(list(copies), {})
                for gap in range(len(faces)):
                    rest = options[:gap] + options[gap + 1 :]
                    if jokers and all(rest):
                        for copies in product(*rest):
                            for joker in jokers:
                                cards = [*copies[:gap], joker, *copies[gap:]]
                                add(cards, {joker: faces[gap]})
    return list(found.items())


def best_opening_total(hand: Sequence[int], keep: int = 1) -> int:
    """The highest opening total of disjoint melds leaving at least ``keep`` cards."""
    melds = all_melds(hand)
    containing: dict[int, list[tuple[frozenset[int], int]]] = {}
    for meld in melds:
        for card in meld[0]:
            containing.setdefault(card, []).append(meld)
    memo: dict[tuple[frozenset[int], int], int] = {}

    def search(left: frozenset[int], still_to_keep: int) -> int:
        """The best total of melds inside ``left`` that leaves ``still_to_keep`` of them."""
        key = (left, still_to_keep)
        if key in memo:
            return memo[key]
        best = 0
        if left:
            lowest = min(left)
            best = search(left - {lowest}, max(0, still_to_keep - 1))
            for cards, value in containing.get(lowest, []):
                if cards <= left and len(left) - len(cards) >= still_to_keep:
                    best = max(best, value + search(left - cards, still_to_keep))
        memo[key] = best
        return best

    return search(frozenset(hand), keep)
