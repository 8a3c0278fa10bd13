"""Bots: pure policies over a seat's :class:`~dast.v1.hokm_pb2.HokmView`, never the state.

A policy is ``(view, rng) -> HokmCommand``; :data:`BOTS` names them:

- ``random``: a uniformly random legal command.
- ``greedy``: the hints of ``docs/rules/hokm.md`` "Strategy hints": as hakem declare the suit it
  holds most of; cash non-trump aces when leading; let a winning partner have the trick
  with the lowest card; otherwise win the trick as cheaply as possible, or throw the
  lowest card (non-trumps before trumps).
- ``basic``: :func:`engine.hokm.basic_bot.basic_policy`, the greedy hints plus counting
  trumps and the cards played (masters, known voids).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from dast.v1 import hokm_pb2
from engine.core.cards import RANKS_PER_SUIT, Card, Rank
from engine.core.rng import DeterministicRandom
from engine.hokm import _core
from engine.hokm.basic_bot import basic_policy
from engine.hokm.rules import SET_ASIDE_COUNT

Policy = Callable[[hokm_pb2.HokmView, DeterministicRandom], hokm_pb2.HokmCommand]


def _set_aside(cards: Sequence[Card]) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(set_aside_cards=hokm_pb2.SetAsideCards(cards=sorted(cards)))


def _play(card: Card) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))


def random_policy(view: hokm_pb2.HokmView, rng: DeterministicRandom) -> hokm_pb2.HokmCommand:
    """A uniformly random legal command (a uniform 4 of the hand when laying aside).

    :raises ValueError: if the view offers no legal command.
    """
    if not view.legal:
        raise ValueError("the seat has nothing to do")
    if view.phase == hokm_pb2.HOKM_PHASE_SET_ASIDE:
        return _set_aside(rng.shuffle(list(view.hand))[:SET_ASIDE_COUNT])
    return view.legal[rng.randbelow(len(view.legal))]


def _cheapness(card: Card, trump: int) -> tuple[bool, int, int]:
    """Sort key: non-trumps first, then low ranks."""
    return (card // RANKS_PER_SUIT == trump, card % RANKS_PER_SUIT, card)


def greedy_policy(view: hokm_pb2.HokmView, rng: DeterministicRandom) -> hokm_pb2.HokmCommand:
    """The rule-based bot of the module docstring; deterministic (``rng`` unused).

    :raises ValueError: if the view offers no legal command.
    """
    if not view.legal:
        raise ValueError("the seat has nothing to do")
    phase = view.phase
    trump = view.trump - 1
    if phase == hokm_pb2.HOKM_PHASE_DECLARE_TRUMP:
        # "As hakem, choose the suit you hold most of; count matters more than height."
        def strength(suit: int) -> tuple[int, int, int]:
            ranks = [c % RANKS_PER_SUIT for c in view.hand if c // RANKS_PER_SUIT == suit]
            return (len(ranks), sum(ranks), -suit)

        best = max(range(4), key=strength)
        return hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=best + 1))  # type: ignore[arg-type]
    if phase == hokm_pb2.HOKM_PHASE_SET_ASIDE:
        return _set_aside(sorted(view.hand, key=lambda c: _cheapness(c, trump))[:SET_ASIDE_COUNT])
    if phase == hokm_pb2.HOKM_PHASE_TAKE_PILE:
        value_a = _core.pile_value(view.top_a, trump)
        value_b = _core.pile_value(view.top_b, trump)
        pile = 0 if value_a >= value_b else 1
        return hokm_pb2.HokmCommand(take_pile_card=hokm_pb2.TakePileCard(pile=pile))
    cards = [command.play_card.card for command in view.legal]
    lowest = min(cards, key=lambda c: _cheapness(c, trump))
    plays = view.current_trick.plays
    if not plays:
        aces = [c for c in cards if c % RANKS_PER_SUIT == Rank.ACE and c // RANKS_PER_SUIT != trump]
        return _play(aces[0] if aces else lowest)
    on_table = [play.card for play in plays]
    leader_index = _core.winning_index(on_table, trump)
    winning_seat = plays[leader_index].seat
    seats = len(view.hand_counts)
    if seats == 4 and (winning_seat - view.seat) % 2 == 0:
        return _play(lowest)  # "When your partner is already winning, play your lowest card."
    winners = [c for c in cards if _core.winning_index([*on_table, c], trump) == len(on_table)]
    if winners:
        return _play(min(winners, key=lambda c: _cheapness(c, trump)))
    return _play(lowest)


BOTS: Final[dict[str, Policy]] = {
    "random": random_policy, "greedy": greedy_policy, "basic": basic_policy,
}
"""The bots by name."""
