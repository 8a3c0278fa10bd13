"""The opening threshold and the taken-discard obligation (rules/hand.md "Melds", "A turn").

The meld shapes come from :mod:`engine.hand.melds` and the exact search from
:mod:`engine.hand.solver`; this module adds the match's conditions: ``open_min``,
``must_beat_previous``, the ``hand_waives_open_min`` waiver, the last card kept for the
discard, and the card taken from the discard pile that a meld of this turn must use.

Taking the discard is allowed only when a meld laid right away can use it (before
opening: an opening reaching the threshold), and while the card waits, the player's next
move must be that meld: a turn can therefore never be left without a legal end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache
from itertools import combinations

from engine.core.cards import RANKS_PER_SUIT, CardSet, iter_cards
from engine.core.errors import RuleViolation
from engine.hand.candidates import candidate_melds
from engine.hand.cards import JOKERS_MASK, is_joker, natural_of
from engine.hand.errors import HandCode
from engine.hand.melds import Meld, MeldKind, joker_faces_of, validate_meld
from engine.hand.solver import best_opening, can_go_out
from engine.hand.state import HandState

MIN_MELD = 3


def opening_shortfall(state: HandState, total: int, *, cards_left: int) -> HandCode | None:
    """Why an opening of ``total`` leaving ``cards_left`` cards is not enough, or None.

    A lay-down leaving one card is a "hand" in the making: with ``hand_waives_open_min``
    it needs no threshold (rules "End of a round", the waiver covers ``must_beat_previous``
    too).
    """
    options = state.options
    if cards_left == 1 and options.hand_waives_open_min:
        return None
    if total < options.open_min:
        return HandCode.OPENING_BELOW_MINIMUM
    if options.must_beat_previous and total <= state.highest_opening:
        return HandCode.OPENING_NOT_ABOVE_PREVIOUS
    return None


def playable_melds(state: HandState, hand: CardSet) -> list[Meld]:
    """The (maximal) melds ``hand`` can form under the joker limit."""
    return candidate_melds(hand, max_jokers=state.options.max_jokers_per_meld)


def best_legal_opening(state: HandState, seat: int) -> tuple[Meld, ...] | None:
    """The highest opening ``seat`` may lay now (using the taken discard if one waits),
    keeping a card to discard, or None when none reaches the threshold."""
    return _opening_of(state, state.hands[seat], state.must_use)


def hand_lay_down(state: HandState, seat: int) -> tuple[Meld, ...] | None:
    """Melds laying ``seat``'s whole hand but one card at once (the "hand" finish, rules
    "End of a round"), when ``seat`` has not opened and such a lay-down is allowed now."""
    if state.opened[seat]:
        return None
    return _hand_of(state, state.hands[seat], state.must_use)


def melds_using(state: HandState, hand: CardSet, card: int) -> list[Meld]:
    """Every meld of ``hand`` holding ``card`` that keeps a card to discard, sub-melds of
    the candidates included (the card's own identity substituted for its twin's)."""
    size = hand.bit_count()
    found: dict[Meld, None] = {}
    for candidate in playable_melds(state, hand):
        substituted = _substitute(candidate, card)
        if substituted is None:
            continue
        for meld in _sub_melds_with(substituted, card, state.options.max_jokers_per_meld):
            if len(meld.cards) < size:
                found.setdefault(meld, None)
    return list(found)


def melds_with_taken(state: HandState, hand: CardSet, card: int) -> tuple[Meld, ...] | None:
    """Once opened: some new melds holding the taken ``card`` that keep a card to discard
    (the exact solver's answer), or None."""
    melds = _solve(state, hand, card)[1]
    return melds or None


def can_use_taken_discard(state: HandState, seat: int, card: int) -> bool:
    """Whether ``seat`` could meld ``card`` right after taking it from the discard pile."""
    if not is_joker(card) and not _has_partner(state.hands[seat], natural_of(card)):
        return False
    hand = state.hands[seat] | (1 << card)
    if state.opened[seat]:
        return melds_with_taken(state, hand, card) is not None
    return (
        _opening_of(state, hand, card) is not None or _hand_of(state, hand, card) is not None
    )


def _has_partner(hand: CardSet, face: int) -> bool:
    """A cheap necessary condition for ``face`` to join a meld of ``hand`` (the solver
    decides): a joker, or a natural of its rank, or of its suit at most two ranks away
    (the ace counted high and low)."""
    if hand & JOKERS_MASK:
        return True
    suit, rank = divmod(face, RANKS_PER_SUIT)
    for card in iter_cards(hand):
        other = natural_of(card)
        if other == face:
            continue
        other_suit, other_rank = divmod(other, RANKS_PER_SUIT)
        if other_rank == rank:
            return True
        if other_suit == suit and min(
            abs(_low(other_rank) - _low(rank)), abs(other_rank - rank)
        ) <= 2:
            return True
    return False


def _low(rank: int) -> int:
    """The rank with the ace below the 2 (for distances in A-2-3)."""
    return -1 if rank == RANKS_PER_SUIT - 1 else rank


def _opening_of(state: HandState, hand: CardSet, must_use: int | None) -> tuple[Meld, ...] | None:
    total, melds = _solve(state, hand, must_use)
    left = hand.bit_count() - sum(len(m.cards) for m in melds)
    if melds and opening_shortfall(state, total, cards_left=left) is None:
        return melds
    return None


def _hand_of(state: HandState, hand: CardSet, must_use: int | None) -> tuple[Meld, ...] | None:
    # Cheap screen: a hand lays every card but one, so at most one card may fit no meld.
    if not hand & JOKERS_MASK:
        loners = sum(
            not _has_partner(hand, natural_of(card)) for card in iter_cards(hand)
        )
        if loners > 1:
            return None
    options = state.options
    plan = _cached_hand(
        hand,
        must_use,
        options.open_min,
        options.ace_low_value,
        options.max_jokers_per_meld,
        options.hand_waives_open_min,
    )
    if plan is None or opening_shortfall(state, plan[0], cards_left=1) is not None:
        return None
    return plan[1]


@lru_cache(maxsize=4096)
def _cached_hand(
    hand: CardSet,
    must_use: int | None,
    open_min: int,
    ace_low_value: int,
    max_jokers: int,
    waived: bool,
) -> tuple[int, tuple[Meld, ...]] | None:
    plan = can_go_out(
        hand,
        has_opened=False,
        open_min=open_min,
        ace_low_value=ace_low_value,
        max_jokers=max_jokers,
        hand_finish_allowed=True,
        hand_waives_open_min=waived,
        must_use=must_use,
    )
    if plan is None or not plan.is_hand:
        return None
    return plan.total, plan.melds


def _solve(state: HandState, hand: CardSet, must_use: int | None) -> tuple[int, tuple[Meld, ...]]:
    options = state.options
    return _cached_opening(hand, must_use, options.ace_low_value, options.max_jokers_per_meld)


@lru_cache(maxsize=4096)
def _cached_opening(
    hand: CardSet, must_use: int | None, ace_low_value: int, max_jokers: int
) -> tuple[int, tuple[Meld, ...]]:
    # legal, view, decide and the bots ask about the same hand in a row: solve it once.
    opening = best_opening(
        hand, ace_low_value=ace_low_value, max_jokers=max_jokers, keep=1, must_use=must_use
    )
    return opening.total, opening.melds


def _substitute(meld: Meld, card: int) -> Meld | None:
    """``meld`` with ``card`` in place of the card of the same face (or joker), if any."""
    if card in meld.cards:
        return meld
    for index, other in enumerate(meld.cards):
        same = is_joker(other) if is_joker(card) else (
            not is_joker(other) and natural_of(other) == natural_of(card)
        )
        if same:
            cards = (*meld.cards[:index], card, *meld.cards[index + 1 :])
            return replace(meld, cards=cards)
    return None


def _sub_melds_with(meld: Meld, card: int, max_jokers: int) -> Iterator[Meld]:
    """Every valid meld made of ``meld``'s cards that holds ``card``: contiguous stretches
    of a run, subsets of a set."""
    faces = joker_faces_of(meld)
    at = meld.cards.index(card)
    count = len(meld.cards)
    if meld.kind is MeldKind.RUN:
        pieces = [
            meld.cards[start:end]
            for start in range(at + 1)
            for end in range(max(at + 1, start + MIN_MELD), count + 1)
        ]
    else:
        others = [c for c in meld.cards if c != card]
        pieces = [
            (card, *chosen)
            for size in range(MIN_MELD - 1, len(others) + 1)
            for chosen in combinations(others, size)
        ]
    for piece in pieces:
        try:
            yield validate_meld(piece, faces, max_jokers=max_jokers)
        except RuleViolation:
            continue
