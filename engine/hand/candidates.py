"""Listing the melds a hand can form, compactly (re-exported by :mod:`engine.hand.melds`).

docs/rules/hand.md "What the bot and the client need from the engine": every opening
combination "or a compact description of them". :func:`candidate_melds` gives the
maximal melds; a client picks sub-melds and :func:`~engine.hand.melds.validate_meld`
checks the choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from itertools import combinations, pairwise

from engine.core.cards import RANKS_PER_SUIT, SUITS, iter_cards
from engine.core.errors import RuleViolation
from engine.hand.cards import Face, HandCard, is_card, is_joker, natural_of
from engine.hand.melds import (
    ACE,
    ACE_HIGH_POSITION,
    MAX_RUN_LENGTH,
    Meld,
    run_position,
    validate_meld,
)


def candidate_melds(hand: Sequence[HandCard] | int, *, max_jokers: int = 1) -> list[Meld]:
    """A compact list of the melds ``hand`` (cards or a mask) can form, for a client to
    offer; :func:`validate_meld` checks whatever combination the player then picks.

    Listed, one physical card per face (the lowest id) and at most one joker (the lowest):
    every set of 3 or 4 naturals; every set of 2 or 3 naturals plus the joker standing for
    each missing suit; every maximal run of naturals (a suit's 2-…-A and A-…-K when it
    holds all 13 ranks); every maximal run the joker makes by filling the one-rank gap
    between two natural runs, or by extending a natural run of 2+ at either end. Every
    valid meld of the hand with at most one joker, the joker where no natural of the hand
    could stand, is a sub-meld of a listed one. The list grows linearly with the hand
    (at most ~16 sets per rank and a few runs per suit), never combinatorially.

    >>> from engine.hand.cards import parse_hand_cards
    >>> from engine.hand.melds import meld_text
    >>> [meld_text(m) for m in candidate_melds(parse_hand_cards("5♠ 6♠ 7♠ 7♥ 7♣"))]
    ['7♠ 7♥ 7♣', '5♠ 6♠ 7♠']
    """
    cards = list(iter_cards(hand)) if isinstance(hand, int) else list(hand)
    by_face: dict[Face, HandCard] = {}
    for card in sorted(c for c in cards if is_card(c) and not is_joker(c)):
        by_face.setdefault(natural_of(card), card)
    jokers = sorted(c for c in cards if is_card(c) and is_joker(c))
    joker = jokers[0] if jokers and max_jokers >= 1 else None
    found: set[Meld] = set()

    def add(meld_cards: Sequence[HandCard], faces: Mapping[HandCard, Face]) -> None:
        # A 14-position stretch is invalid as a whole: its two 13-card readings are added
        # apart, so a failing candidate is simply not listed.
        with suppress(RuleViolation):
            found.add(validate_meld(meld_cards, faces, max_jokers=max_jokers))

    for rank in range(RANKS_PER_SUIT):
        present = [s * RANKS_PER_SUIT + rank for s in range(SUITS)
                   if s * RANKS_PER_SUIT + rank in by_face]
        for size in range(2, len(present) + 1):
            for faces in combinations(present, size):
                chosen = [by_face[f] for f in faces]
                if size >= 3:
                    add(chosen, {})
                if joker is not None and size <= 3:
                    for missing in (s * RANKS_PER_SUIT + rank for s in range(SUITS)):
                        if missing not in faces:
                            add([*chosen, joker], {joker: missing})
    for suit in range(SUITS):
        at = {run_position(f, ace_low=low): by_face[f]
              for f in range(suit * RANKS_PER_SUIT, (suit + 1) * RANKS_PER_SUIT)
              if f in by_face for low in (False, True)}
        segments: list[tuple[int, int]] = []
        for position in range(ACE_HIGH_POSITION + 1):
            if position in at:
                if segments and segments[-1][1] == position - 1:
                    segments[-1] = (segments[-1][0], position)
                else:
                    segments.append((position, position))
        for low, high in segments:
            if high - low + 1 >= 3:
                for start in range(low, max(low, high - MAX_RUN_LENGTH + 1) + 1):
                    end = min(high, start + MAX_RUN_LENGTH - 1)
                    add([at[p] for p in range(start, end + 1)], {})
        if joker is None:
            continue
        face_at = {p: suit * RANKS_PER_SUIT + (ACE if p in (0, 13) else p - 1)
                   for p in range(ACE_HIGH_POSITION + 1)}
        for (low, high), (next_low, next_high) in pairwise(segments):
            if next_low == high + 2:
                run = [at[p] for p in range(low, next_high + 1) if p != high + 1]
                add([*run, joker], {joker: face_at[high + 1]})
        for low, high in segments:
            if high > low:
                run = [at[p] for p in range(low, high + 1)]
                for end in (low - 1, high + 1):
                    if 0 <= end <= ACE_HIGH_POSITION:
                        add([*run, joker], {joker: face_at[end]})
    return sorted(found, key=lambda m: (m.kind, m.faces, m.cards))

