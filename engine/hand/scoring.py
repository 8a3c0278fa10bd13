"""Hand's round scoring and dealer rotation (docs/rules/hand.md "Scoring", "Players, seats and
the deal").

Penalty points: the lowest total wins. The player who goes out scores −30, or −60 with a
hand; a player who opened adds the penalty values of the cards left in hand; a player who
never opened adds 100. After a hand every figure is doubled (the winner's −60 already is
the hand figure). In partnerships a team scores the sum of its two players, and the
partner of the player who went out scores 0 unless ``partner_of_winner_scores``.

>>> from engine.hand.rules import options_of, resolve_rules
>>> from dast.v1 import hand_pb2
>>> options = options_of(resolve_rules(hand_pb2.HandRules(), 2))
>>> round_points(options, (0, 0), (True, False), went_out=0, is_hand=False)
(-30, 100)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engine.core.cards import CardSet, iter_cards
from engine.hand.cards import penalty_value
from engine.hand.rules import DealerRotation, Options
from engine.hand.state import team_of

OUT_POINTS: Final = -30
HAND_POINTS: Final = -60
UNOPENED_POINTS: Final = 100
HAND_MULTIPLIER: Final = 2


def penalty_in_hand(hand: CardSet, joker_penalty: int) -> int:
    """The penalty value of the cards in a hand (A = 11, a joker ``joker_penalty``)."""
    return sum(penalty_value(card, joker_penalty=joker_penalty) for card in iter_cards(hand))


def round_points(
    options: Options,
    hands: Sequence[CardSet],
    opened: Sequence[bool],
    *,
    went_out: int,
    is_hand: bool,
) -> tuple[int, ...]:
    """Each seat's figure for a round that ``went_out`` ended (with a hand or not)."""
    points = []
    for seat, hand in enumerate(hands):
        if seat == went_out:
            points.append(HAND_POINTS if is_hand else OUT_POINTS)
            continue
        is_partner = options.partnerships and team_of(seat) == team_of(went_out)
        if is_partner and not options.partner_of_winner_scores:
            points.append(0)
            continue
        figure = (
            penalty_in_hand(hand, options.joker_penalty) if opened[seat] else UNOPENED_POINTS
        )
        points.append(figure * HAND_MULTIPLIER if is_hand else figure)
    return tuple(points)


def team_points(options: Options, points: Sequence[int]) -> tuple[int, ...]:
    """Partnerships: each team's round score (the sum of its players); else empty."""
    if not options.partnerships:
        return ()
    return tuple(
        sum(p for seat, p in enumerate(points) if team_of(seat) == team) for team in (0, 1)
    )


def new_totals(options: Options, totals: Sequence[int], points: Sequence[int]) -> tuple[int, ...]:
    """The running totals after a round: per seat, or per team shown on both partners."""
    if options.partnerships:
        teams = team_points(options, points)
        return tuple(total + teams[team_of(seat)] for seat, total in enumerate(totals))
    return tuple(total + p for total, p in zip(totals, points, strict=True))


def next_dealer(options: Options, dealer: int, points: Sequence[int]) -> int:
    """Who deals the next round.

    ``loser_deals``: the seat with the most penalty in the round just played; a tie goes to
    the tied seat that comes first in play order after the dealer. ``next``: the next seat.
    """
    seats = options.players
    if options.dealer_rotation is DealerRotation.NEXT:
        return (dealer + 1) % seats
    order = [(dealer + step) % seats for step in range(1, seats + 1)]
    return max(order, key=lambda seat: (points[seat], -order.index(seat)))


def match_winners(totals: Sequence[int]) -> tuple[int, ...]:
    """The seats with the lowest total (a tie is shared; partners share their total)."""
    best = min(totals)
    return tuple(seat for seat, total in enumerate(totals) if total == best)
