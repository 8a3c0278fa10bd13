"""The ``expert`` Hand bot: the exact meld solver and sampled draws within a budget.

A pure policy over the seat's :class:`~dast.v1.hand_pb2.HandView`, like the other bots.
Its yardstick is *deadwood*: the least penalty the solver can leave in a hand
(:func:`~engine.hand.solver.min_penalty`, with lay-offs on the table once opened). The
cards it cannot see are the deck less its hand, the discard pile and the table melds: a
card taken from the discard pile must be melded the same turn (docs/rules/hand.md "A turn"),
so every card a player took from the pile is on the table, and every other unseen card is
equally likely to come off the stock next.

- **Draw**: take the discard when the hand with it leaves less deadwood than the mean over
  sampled stock cards (the view lists ``take_discard`` only when the card can be used).
- **Go out** whenever the view lists the "hand" lay-down (all cards but one at once).
- **Open now or wait for a hand**: when the seat could open, rollouts play its next
  :data:`LOOKAHEAD_TURNS` turns on sampled stock cards (drawing, then shedding the costliest
  loose card) and count how often a "hand" comes; it waits when that is at least
  :data:`WAIT_FOR_HAND_CHANCE` and no opponent looks close to going out (opened with few
  cards) and the stock is not running low.
- **Discard**: among the ``basic`` bot's first choices that it ranks alike but for their
  cost (never a joker while another card remains, not a card the next seat can use at
  once, as far from melds), the one whose hand makes the most progress after a sampled
  draw: before opening the best opening total (capped at the threshold), after it the
  least deadwood.
- Otherwise (once opened): lay the meld that lays the most cards, then lay-offs and joker
  retrievals, as the ``basic`` bot does.

The budget (:class:`~engine.core.budget.Budget`) caps the sampled cards (deterministic
given the generator) and optionally the time, with a clock the caller injects.
"""

from __future__ import annotations

import random
from typing import Final

from dast.v1 import hand_pb2
from engine.core.budget import Budget
from engine.core.cards import CardSet, iter_cards
from engine.core.rng import DeterministicRandom
from engine.hand.basic_bot import closeness, feeds_next
from engine.hand.bots import Policy
from engine.hand.cards import FULL_DECK, JOKERS_MASK, is_joker, natural_of, penalty_value
from engine.hand.codec import table_meld_of_proto
from engine.hand.melds import Meld
from engine.hand.rules import Options, options_of
from engine.hand.solver import best_opening, can_go_out, min_penalty

DEFAULT_SAMPLES: Final = 6
"""Sampled stock cards per decision when no clock is given (deterministic)."""
LOOKAHEAD_TURNS: Final = 3
WAIT_FOR_HAND_CHANCE: Final = 0.35
"""A "hand" doubles everyone else's round and scores −60 instead of −30 (docs/rules/hand.md
"Scoring"): worth a few turns' wait when it is this likely soon and nobody threatens to
go out first."""
_CLOSE_TO_OUT: Final = 5
"""An opponent who has opened and holds this many cards or fewer may go out any turn."""
_SHORTLIST: Final = 4
"""Discards searched at most: the ``basic`` bot's first choices, as far as they are equally
loose and safe (searching every card measured far worse, 40 matches +86 penalty points a
match against ``basic``: the solver's one-draw view cannot see how close a loose card is to
a meld)."""
_MIN_STOCK_TO_WAIT: Final = 12
_ROLLOUTS_PER_SAMPLE: Final = 4


class _Table:
    """What the solver needs of the seat's position, read once from the view."""

    def __init__(self, view: hand_pb2.HandView) -> None:
        self.view = view
        self.options: Options = options_of(view.rules)
        self.opened = bool(view.opened[view.seat]) if view.opened else False
        self.melds: tuple[Meld, ...] = tuple(table_meld_of_proto(m).meld for m in view.melds)
        hand = 0
        for card in view.hand:
            hand |= 1 << card
        self.hand: CardSet = hand
        seen = hand
        for card in view.discard_pile:
            seen |= 1 << card
        for meld in view.melds:
            for card in meld.cards:
                seen |= 1 << card
        self.unseen: list[int] = list(iter_cards(FULL_DECK & ~seen))

    def progress(self, hand: CardSet) -> float:
        """How good a hand just after a draw is (higher is better). Before opening what
        counts is reaching the opening (an unopened seat scores a flat 100, whatever it
        holds): the best opening total, capped at ``open_min``. Once opened, the penalty
        the solver can leave, negated."""
        if self.opened:
            return -float(self.deadwood(hand, keep=1))
        options = self.options
        total = best_opening(hand, ace_low_value=options.ace_low_value,
                             max_jokers=options.max_jokers_per_meld).total
        return float(min(total, options.open_min))

    def deadwood(self, hand: CardSet, keep: int) -> int:
        """The least penalty the solver can leave in ``hand`` keeping ``keep`` card(s),
        laying off on the table once opened. Before opening it is still counted as if
        any meld could be laid: the opening threshold would make every hand short of it
        score its whole penalty, which says nothing about how close it is to melding."""
        options = self.options
        return min_penalty(
            hand, table_melds=self.melds, can_lay_off=self.opened,
            max_jokers=options.max_jokers_per_meld, joker_penalty=options.joker_penalty,
            keep=keep,
        ).points


def _of_kind(view: hand_pb2.HandView, kind: str) -> list[hand_pb2.HandCommand]:
    return [command for command in view.legal if command.WhichOneof("kind") == kind]


def _laid_count(command: hand_pb2.HandCommand) -> int:
    return sum(len(meld.cards) for meld in command.lay_melds.melds)


def _draw(table: _Table, budget: Budget, rng: random.Random) -> hand_pb2.HandCommand:
    view = table.view
    takes = _of_kind(view, "take_discard")
    stock = _of_kind(view, "draw_from_stock")
    if not takes or not table.unseen:
        return (stock or takes)[0]
    with_top = table.deadwood(table.hand | 1 << view.discard_pile[-1], keep=1)
    stop = budget.stopper()
    total, done = 0, 0
    while not stop(done):
        card = table.unseen[rng.randrange(len(table.unseen))]
        total += table.deadwood(table.hand | 1 << card, keep=1)
        done += 1
    # Ties go to the stock: taking shows the others what the seat collects.
    return takes[0] if with_top * done < total else stock[0]


def _loose_card(table: _Table, hand: CardSet) -> int:
    """The card a rollout sheds: the costliest one the solver leaves out of every meld."""
    options = table.options
    penalty = min_penalty(
        hand, max_jokers=options.max_jokers_per_meld, joker_penalty=options.joker_penalty,
        keep=1,
    )
    melded = 0
    for meld in penalty.melds:
        for card in meld.cards:
            melded |= 1 << card
    loose = hand & ~melded & ~JOKERS_MASK or hand
    return max(iter_cards(loose), key=lambda c: (penalty_value(c), c))


def hand_chance(table: _Table, budget: Budget, rng: random.Random) -> float:
    """How often rollouts of the next turns (shed the loosest card, draw a sampled stock
    card) reach a "hand" finish within :data:`LOOKAHEAD_TURNS` turns."""
    options = table.options
    stop = budget.stopper()
    hits = done = 0
    pool = table.unseen[:]
    while not stop(done) and len(pool) >= LOOKAHEAD_TURNS:
        draws = rng.sample(pool, LOOKAHEAD_TURNS)
        hand = table.hand
        for card in draws:
            hand &= ~(1 << _loose_card(table, hand))
            hand |= 1 << card
            plan = can_go_out(
                hand, has_opened=False, open_min=options.open_min,
                ace_low_value=options.ace_low_value, max_jokers=options.max_jokers_per_meld,
                hand_waives_open_min=options.hand_waives_open_min,
            )
            if plan is not None and plan.is_hand:
                hits += 1
                break
        done += 1
    return hits / done if done else 0.0


def _threatened(view: hand_pb2.HandView) -> bool:
    """Whether waiting is risky: an opponent has opened with few cards, or the stock is
    low."""
    seats = len(view.hand_counts)
    partnered = view.rules.partnerships
    for seat in range(seats):
        if seat == view.seat or (partnered and (seat - view.seat) % 2 == 0):
            continue
        if view.opened[seat] and view.hand_counts[seat] <= _CLOSE_TO_OUT:
            return True
    return view.stock_count < _MIN_STOCK_TO_WAIT


def _basic_order(view: hand_pb2.HandView, card: int) -> tuple[bool, bool, int, int, int]:
    """The ``basic`` bot's discard preference (smallest first): not a joker, not a card
    the next seat can use at once, far from melds, costly."""
    return (is_joker(card), feeds_next(card, view), closeness(card, list(view.hand)),
            -penalty_value(card, joker_penalty=view.rules.joker_penalty), card)


def _discard(table: _Table, budget: Budget, rng: random.Random) -> hand_pb2.HandCommand:
    view = table.view
    # Two copies of one face, or the two jokers, leave the same hand behind.
    by_face: dict[int, hand_pb2.HandCommand] = {}
    for command in _of_kind(view, "discard"):
        card = command.discard.card
        by_face.setdefault(-1 if is_joker(card) else natural_of(card), command)
    ranked = sorted(by_face.values(), key=lambda c: _basic_order(view, c.discard.card))
    # Search only among the cards the basic order cannot tell apart but by their cost
    # (as loose, as safe to give): the search picks which of them to keep.
    first = _basic_order(view, ranked[0].discard.card)[:3]
    shortlist = [c for c in ranked[:_SHORTLIST]
                 if _basic_order(view, c.discard.card)[:3] == first]
    if len(shortlist) == 1:
        return shortlist[0]
    remaining = [table.hand & ~(1 << c.discard.card) for c in shortlist]
    totals = [0.0] * len(shortlist)
    stop = budget.stopper()
    done = 0
    while not stop(done) and table.unseen:
        card = table.unseen[rng.randrange(len(table.unseen))]
        for index, hand in enumerate(remaining):
            totals[index] += table.progress(hand | 1 << card)
        done += 1
    # Best mean progress after the next draw; ties keep the basic order.
    best = max(range(len(shortlist)), key=lambda i: (totals[i], -i))
    return shortlist[best]


def _meld_or_discard(
    table: _Table, budget: Budget, rng: random.Random
) -> hand_pb2.HandCommand:
    view = table.view
    lay_downs = _of_kind(view, "lay_melds")
    size = len(view.hand)
    hand_finish = [c for c in lay_downs if _laid_count(c) == size - 1]
    if hand_finish and not table.opened:
        return hand_finish[0]
    discards = _of_kind(view, "discard")
    if lay_downs and not table.opened:
        if not discards or view.HasField("must_use"):
            return lay_downs[0]  # the opening must be completed, or the taken card melded
        if _threatened(view):
            return lay_downs[0]  # the solver's best opening
        # Two searches share the decision's budget: half the time each; the rollouts are
        # a yes/no estimate, so they get more (cheaper) samples than the discard.
        half = budget.time_ms / 2
        rollouts = Budget(budget.samples * _ROLLOUTS_PER_SAMPLE, half, budget.clock)
        if hand_chance(table, rollouts, rng) >= WAIT_FOR_HAND_CHANCE:
            return _discard(table, Budget(budget.samples, half, budget.clock), rng)
        return lay_downs[0]
    if lay_downs:
        return max(lay_downs, key=_laid_count)
    for kind in ("lay_off", "retrieve_joker"):
        found = _of_kind(view, kind)
        if found:
            return found[0]
    if discards:
        return _discard(table, budget, rng)
    return view.legal[0]


def make_expert(budget: Budget | None = None) -> Policy:
    """The ``expert`` policy with ``budget`` per decision (default: :data:`DEFAULT_SAMPLES`
    sampled cards, no clock). The search draws from a :class:`random.Random` seeded by one
    word of the policy's generator, so a sample budget makes decisions reproducible."""
    chosen = Budget(DEFAULT_SAMPLES) if budget is None else budget

    def expert_policy(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
        """The ``expert`` bot's command for the seat of ``view`` (module docstring).

        :raises ValueError: if the view lists no legal command (the seat is not to act).
        """
        if not view.legal:
            raise ValueError("the seat has no legal command")
        search_rng = random.Random(rng.next_word())
        table = _Table(view)
        if view.phase == hand_pb2.HAND_PHASE_DRAW:
            return _draw(table, chosen, search_rng)
        if view.phase == hand_pb2.HAND_PHASE_FIRST_DISCARD:
            return _discard(table, chosen, search_rng)
        return _meld_or_discard(table, chosen, search_rng)

    return expert_policy


expert_policy: Final = make_expert()
"""The ``expert`` with the default sample budget (deterministic; no clock)."""
