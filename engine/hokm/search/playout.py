"""The greedy bot's choices over card masks, and whole-round playouts with them.

:func:`greedy_card`, :func:`greedy_pile` and :func:`greedy_set_aside` choose exactly what
:func:`engine.hokm.bots.greedy_policy` chooses from the same position (a test checks it
over random rounds), without building a view: a search calls them hundreds of thousands
of times, both to play rounds out (:func:`greedy_playout`) and as the model of how the
other seats play when weighting sampled deals (:mod:`engine.hokm.search.worlds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engine.core.cards import ACES_MASK, RANKS_PER_SUIT, SUIT_MASKS, SUITS, Card, CardSet
from engine.hokm import _core
from engine.hokm.rules import SET_ASIDE_COUNT
from engine.hokm.search.core import FastRound

_R: Final = RANKS_PER_SUIT


def cheapest(mask: CardSet, trump: int) -> Card:
    """The greedy bot's "lowest" card of a non-empty ``mask``: side suits before trumps,
    then the lowest rank, then the lowest card id.

    >>> from engine.core.cards import card_name, mask_of, parse_cards
    >>> card_name(cheapest(mask_of(parse_cards("2♠ 3♥ 2♦ A♣")), trump=0))
    '2♦'
    """
    side = mask & ~SUIT_MASKS[trump]
    if not side:
        return (mask & -mask).bit_length() - 1
    best, best_rank = -1, _R
    for suit in range(SUITS):
        cards = side & SUIT_MASKS[suit]
        if cards:
            card = (cards & -cards).bit_length() - 1
            rank = card - suit * _R
            if rank < best_rank:
                best, best_rank = card, rank
    return best


def beating_mask(legal: CardSet, trick: Sequence[Card], trump: int) -> CardSet:
    """The cards of ``legal`` that would win ``trick`` (non-empty) if played now."""
    winning = trick[_core.winning_index(trick, trump)]
    above = ~((2 << winning) - 1)  # every card id above the winning card's
    trumps = legal & SUIT_MASKS[trump]
    if winning // _R == trump:
        return trumps & above
    return (legal & SUIT_MASKS[winning // _R] & above) | trumps


def greedy_card(
    hand: CardSet, trick: Sequence[Card], leader: int, seat: int, seats: int, trump: int
) -> Card:
    """The greedy bot's card for ``seat`` holding ``hand`` (docs/rules/hokm.md "Strategy
    hints"): leading, a side ace (the lowest id) else the cheapest card; following, the
    cheapest card when the partner wins the trick (four players), else the cheapest card
    that wins it, else the cheapest card."""
    legal = _core.legal_play_mask(hand, trick)
    if not trick:
        aces = legal & ACES_MASK & ~SUIT_MASKS[trump]
        return (aces & -aces).bit_length() - 1 if aces else cheapest(legal, trump)
    if seats == 4:
        winner = (leader + _core.winning_index(trick, trump)) % seats
        if (winner - seat) % 2 == 0:
            return cheapest(legal, trump)
    beating = beating_mask(legal, trick, trump)
    return cheapest(beating if beating else legal, trump)


def greedy_pile(rnd: FastRound) -> int:
    """The greedy bot's pile (two players): the more valuable top, A on a tie."""
    drawn, trump = rnd.piles_drawn, rnd.trump
    value_a = _core.pile_value(rnd.pile_a[drawn], trump)
    return 0 if value_a >= _core.pile_value(rnd.pile_b[drawn], trump) else 1


def greedy_set_aside(hand: CardSet, trump: int) -> CardSet:
    """The greedy bot's 4 cards to lay aside (three players): the cheapest ones."""
    aside = 0
    for _ in range(SET_ASIDE_COUNT):
        aside |= 1 << cheapest(hand & ~aside, trump)
    return aside


def greedy_playout(rnd: FastRound) -> None:
    """Play ``rnd`` to its end with every seat following the greedy bot."""
    seats, trump, hands = rnd.seats, rnd.trump, rnd.hands
    while not rnd.over:
        if rnd.taking:
            rnd.take_pile(greedy_pile(rnd))
            continue
        turn = rnd.turn
        rnd.play(greedy_card(hands[turn], rnd.trick, rnd.leader, turn, seats, trump))
