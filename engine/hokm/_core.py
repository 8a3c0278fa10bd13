"""Int-only rule kernels shared by ``decide``, ``legal``, the views and the bots.

These trust their input (python-chess ``push`` style): the public functions validate
commands before calling them. Each rule of ``docs/rules/hokm.md`` lives here exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from dast.v1 import hokm_pb2
from engine.core.cards import RANKS_PER_SUIT, SUIT_MASKS, Card, CardSet
from engine.hokm.rules import HokmOptions

_R: Final = RANKS_PER_SUIT


def legal_play_mask(hand: CardSet, trick: Sequence[Card]) -> CardSet:
    """The cards of ``hand`` that may be played on ``trick`` ("Playing tricks": follow suit).

    Leading, any card; following, a card of the led suit if the hand has one, else any.

    >>> from engine.core.cards import mask_of, parse_cards, iter_cards, cards_text
    >>> hand = mask_of(parse_cards("A♠ 2♥ 3♥ K♦"))
    >>> cards_text(iter_cards(legal_play_mask(hand, parse_cards("10♥"))))
    '2♥ 3♥'
    >>> cards_text(iter_cards(legal_play_mask(hand, parse_cards("10♣"))))
    'A♠ 2♥ 3♥ K♦'
    """
    if not trick:
        return hand
    follow = hand & SUIT_MASKS[trick[0] // _R]
    return follow if follow else hand


def winning_index(cards: Sequence[Card], trump: int) -> int:
    """Index in ``cards`` (play order) of the card that wins a trick ("Playing tricks").

    The highest trump if any was played, else the highest card of the led suit.

    >>> from engine.core.cards import parse_cards, Suit
    >>> winning_index(parse_cards("10♥ A♣ 2♠ K♥"), Suit.SPADES)
    2
    >>> winning_index(parse_cards("10♥ A♣ 2♦ K♥"), Suit.SPADES)
    3
    """
    best = 0
    best_card = cards[0]
    best_trump = best_card // _R == trump
    led = best_card // _R
    for index in range(1, len(cards)):
        card = cards[index]
        suit = card // _R
        if suit == trump:
            if not best_trump or card > best_card:
                best, best_card, best_trump = index, card, True
        elif not best_trump and suit == led and card > best_card:
            best, best_card = index, card
    return best


def is_hakem_side(options: HokmOptions, hakem: int, seat: int) -> bool:
    """Whether ``seat`` plays on the hakem's side: the hakem's team with four players
    (partners opposite, "Seats and teams"), the hakem alone with three or two."""
    if options.seats == 4:
        return (seat - hakem) % 2 == 0
    return seat == hakem


def side_tricks(options: HokmOptions, hakem: int, tricks_won: Sequence[int]) -> tuple[int, int]:
    """Tricks taken by (the hakem's side, the other side): the sides of
    :func:`is_hakem_side`, counted without asking it seat by seat (after every trick)."""
    ours = tricks_won[hakem]
    if len(tricks_won) == 4:
        ours += tricks_won[(hakem + 2) % 4]
    return ours, sum(tricks_won) - ours


def round_winner(options: HokmOptions, hakem: int, tricks_won: Sequence[int]) -> bool | None:
    """Whether the hakem's side won the round (None while it goes on).

    Without ``play_all_tricks`` the round stops as soon as a side has the majority
    (7; ``tricks_to_win_3p``; ``tricks_to_win_2p``). Otherwise, or if all tricks are played
    without either side reaching it (8–8 with three players, 13–13 with two), it is judged
    after the last trick, and the hakem's side wins only with the majority: the engine reads
    a tie as the hakem failing to make the contract.
    """
    ours, theirs = side_tricks(options, hakem, tricks_won)
    needed = options.tricks_needed
    if ours + theirs == options.total_tricks:
        return ours >= needed
    if options.play_all_tricks:
        return None
    if ours >= needed:
        return True
    if theirs >= needed:
        return False
    return None


class RoundScore(NamedTuple):
    """How a round was scored ("Scoring a round")."""

    result: int
    """A :class:`~dast.v1.hokm_pb2.RoundResult` value."""
    winners: tuple[int, ...]
    points: tuple[int, ...]
    """Points awarded to each seat this round."""


def score_round(
    options: HokmOptions, hakem: int, tricks_won: Sequence[int], hakem_won: bool
) -> RoundScore:
    """Score a finished round ("Scoring a round"; three players: "Three players").

    >>> from engine.hokm.rules import resolve_rules
    >>> score_round(resolve_rules(hokm_pb2.HokmRules()), 0, [0, 7, 0, 0], False).points  # hakem kot
    (0, 3, 0, 3)
    """
    seats = options.seats
    winners = tuple(s for s in range(seats) if is_hakem_side(options, hakem, s) == hakem_won)
    ours, theirs = side_tricks(options, hakem, tricks_won)
    loser_tricks = theirs if hakem_won else ours
    if seats == 3:
        if hakem_won:
            result, each = hokm_pb2.ROUND_RESULT_WIN, options.points_hakem_win_3p
        elif ours == 0:
            result, each = hokm_pb2.ROUND_RESULT_HAKEM_KOT, options.points_hakem_kot_3p
        else:
            result, each = hokm_pb2.ROUND_RESULT_WIN, options.points_defenders_win_3p
    elif loser_tricks == 0 and options.play_all_tricks:
        # All tricks to one side: shelem (the kot judged at the end coincides with it).
        result, each = hokm_pb2.ROUND_RESULT_SHELEM, options.shelem_points
    elif loser_tricks == 0:
        if hakem_won:
            result, each = hokm_pb2.ROUND_RESULT_KOT, options.points_kot
        else:
            result, each = hokm_pb2.ROUND_RESULT_HAKEM_KOT, options.points_hakem_kot
    else:
        result, each = hokm_pb2.ROUND_RESULT_WIN, options.points_win
    points = tuple(each if s in winners else 0 for s in range(seats))
    return RoundScore(result, winners, points)


def next_hakem_kept(options: HokmOptions, hakem: int, hakem_won: bool) -> int:
    """The next round's hakem under ``keep_if_won`` ("Next round and end of game")."""
    return hakem if hakem_won else (hakem + 1) % options.seats


def match_winners(options: HokmOptions, scores: Sequence[int]) -> tuple[int, ...]:
    """Seats that won the match: every seat at or above ``target_score`` (empty while
    nobody has reached it), checked after each round ("Next round and end of game": the
    side that reaches the target first wins).

    Only one side scores in a round, so the seats listed reached the target in the same
    round: partners, who share a total, or with three players the two defenders, who win
    together even when their totals differ (neither reached it before the other; the
    engine's reading, docs/rules/hokm.md).

    >>> from engine.hokm.rules import resolve_rules
    >>> three = resolve_rules(hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS))
    >>> [match_winners(three, scores) for scores in ([2, 9, 8], [2, 7, 4], [6, 6, 6])]
    [(1, 2), (1,), ()]
    """
    target = options.target_score
    return tuple(seat for seat, score in enumerate(scores) if score >= target)


def pile_value(card: Card, trump: int) -> int:
    """A bot's value of a card: trumps above every other suit, then by rank."""
    return card % _R + (_R if card // _R == trump else 0)


ROUND_RESULT_NAMES: Final = {
    value: name.removeprefix("ROUND_RESULT_").lower()
    for name, value in hokm_pb2.RoundResult.items()
}
