"""Rollouts of a Hand round's race, for the ``expert`` bot's two choices before opening.

Before it has opened, a seat chooses (docs/rules/hand.md "A turn", "Taking the discard",
"Going out and the hand", "Scoring"):

- whether to take a usable discard, which obliges it to open this turn (the taken card
  must join a new meld, and before opening that meld is part of the opening), or to draw
  from the stock and keep every choice open;
- once it may open, whether to open now (then lay-offs help it shed cards, and it goes out
  for −30) or to keep its melds in hand for a "hand" (−60, and every other figure of the
  round doubled: an unopened opponent +200), at the risk of +100 (+200 after another's
  hand) if another seat goes out first.

A rollout deals the cards the seat cannot see (:attr:`Race.unseen`: every card taken from
the pile is on the table, so the rest are equally likely anywhere) at random: the other
seats' hands by their counts, then the stock. Every other seat then plays the same greedy
solitaire turn after turn (draw from the stock; open as soon as its melds reach the
threshold; meld and lay off what the solver melds; discard the loose card nearest
nothing; go out when one loose card is left), which tells on which of its turns it would go
out and with what left in hand. The seat plays each of its plans against the *same* deal
(common random numbers, so the plans' difference has little noise), and each outcome is
valued as the round is scored: the seat's side's figure minus the other sides' mean.

The rollouts are cheap on purpose (one solver call a player-turn, a few turns deep): the
other seats draw only from the stock and nobody's discards are taken.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from engine.core.cards import CardSet, iter_cards
from engine.hand.basic_bot import closeness
from engine.hand.cards import is_joker, penalty_value
from engine.hand.melds import Meld
from engine.hand.rules import Options
from engine.hand.solver import best_opening, min_penalty

HORIZON: Final = 10
"""Turns of each seat a rollout plays at most (a round rarely lasts longer once a seat
can open)."""
ROLLOUT_COST: Final = 10
"""A rollout's worth in budget samples (about its solver calls against the discard
search's one per sample)."""
WAIT_TURNS: Final = (1, 3)
"""The "wait for a hand" plans compared with opening now: wait this many turns (going
out with a hand as soon as the whole hand but one card melds), then open when able."""
MARGIN: Final = 4.0
"""Points per round a plan must gain on the default (take the discard, open at once) on
average, and by more than its standard error, to be chosen."""

_UNOPENED: Final = 100
_OUT: Final = -30
_HAND: Final = -60


@dataclass
class _Line:
    """One player's course in a rollout: per turn (0 is the seat's current turn), what it
    would score if another went out before that turn; and the turn it goes out."""

    holding: list[int] = field(default_factory=list)
    out_turn: int | None = None
    is_hand: bool = False


class OutOfTime(Exception):
    """The decision's deadline passed inside a rollout (which is then left out)."""


def _never() -> bool:
    return False


class Race:
    """The seat's position for rollouts: its options, the table, what it cannot see;
    ``out_of_time`` tells when the decision's deadline has passed (checked every turn a
    rollout plays, since one rollout calls the solver dozens of times)."""

    def __init__(
        self, options: Options, seat: int, counts: Sequence[int], opened: Sequence[bool],
        melds: tuple[Meld, ...], unseen: list[int], pile: Sequence[int],
        out_of_time: Callable[[], bool] = _never,
    ) -> None:
        self.out_of_time = out_of_time
        self.options = options
        self.seat = seat
        self.counts = list(counts)
        self.opened = list(opened)
        self.melds = melds
        self.unseen = unseen
        self.pile = list(pile[:-1])
        """The discard pile under its top card: the next stock once the stock runs out."""
        self.seats = len(counts)
        self._plans: dict[tuple[CardSet, bool, tuple[int, ...]], tuple[CardSet, int,
                                                                       tuple[Meld, ...]]] = {}
        self._opens: dict[CardSet, bool] = {}

    # -- solver, cached --------------------------------------------------------------

    def _plan(self, hand: CardSet, opened: bool, own: tuple[Meld, ...]
              ) -> tuple[CardSet, int, tuple[Meld, ...]]:
        """The cards the solver leaves loose (keeping one to discard), their penalty, and
        the new melds; lay-offs on the table (and ``own`` melds) once ``opened``."""
        key = (hand, opened, tuple(id(m) for m in own))
        found = self._plans.get(key)
        if found is None:
            options = self.options
            penalty = min_penalty(
                hand, table_melds=self.melds + own if opened else (), can_lay_off=opened,
                max_jokers=options.max_jokers_per_meld, joker_penalty=options.joker_penalty,
                keep=1,
            )
            left = 0  # a table joker the plan retrieves may stay in hand
            for card in penalty.left:
                left |= 1 << card
            found = self._plans[key] = (left, penalty.points, tuple(penalty.melds))
        return found

    def _can_open(self, hand: CardSet) -> bool:
        found = self._opens.get(hand)
        if found is None:
            options = self.options
            found = self._opens[hand] = best_opening(
                hand, ace_low_value=options.ace_low_value,
                max_jokers=options.max_jokers_per_meld, floor=options.open_min,
            ).total >= options.open_min
        return found

    def _points(self, hand: CardSet) -> int:
        joker = self.options.joker_penalty
        return sum(penalty_value(c, joker_penalty=joker) for c in iter_cards(hand))

    @staticmethod
    def _shed(loose: CardSet, hand: CardSet) -> CardSet:
        """``hand`` less the card a greedy player discards from its ``loose`` cards: not a
        joker while another remains, the one nearest nothing of ``hand``, then the
        costliest."""
        cards = list(iter_cards(loose or hand))
        naturals = [c for c in cards if not is_joker(c)] or cards
        held = list(iter_cards(hand))
        worst = min(naturals, key=lambda c: (closeness(c, held), -penalty_value(c), c))
        return hand & ~(1 << worst)

    # -- one player's greedy course ----------------------------------------------------

    def play(self, hand: CardSet, draws: Sequence[int], *, opened: bool, open_from: int,
             until: int) -> _Line:
        """A player holding ``hand`` (turn 0's card already drawn when ``draws[0]`` is -1)
        plays its turns 0..``until`` greedily: before ``open_from`` it only goes out with a
        hand; from then on it opens when able. ``draws[t]`` is turn ``t``'s card."""
        line = _Line()
        own: tuple[Meld, ...] = ()
        for turn in range(min(until, len(draws) - 1) + 1):
            if self.out_of_time():
                raise OutOfTime
            # What it would score if another went out before this turn.
            line.holding.append(self._points(hand) if opened else _UNOPENED)
            if draws[turn] >= 0:
                hand |= 1 << draws[turn]
            if not opened:
                loose, _, melds = self._plan(hand, False, ())
                if loose.bit_count() <= 1 and melds:
                    line.out_turn, line.is_hand = turn, True
                    return line
                if turn >= open_from and self._can_open(hand):
                    opened = True
                else:
                    hand = self._shed(loose, hand)
                    continue
            loose, _, melds = self._plan(hand, True, own)
            if loose.bit_count() <= 1:
                line.out_turn = turn
                return line
            own = own + melds
            hand = self._shed(loose, loose)
        return line

    # -- rollouts ----------------------------------------------------------------------

    def deal(self, rng: random.Random, turns: int) -> tuple[list[int], dict[int, CardSet],
                                                            dict[int, list[int]]]:
        """A random deal of the unseen cards: the seat's stock draws for turns 0..``turns``
        - 1, the other seats' hands, and their draws."""
        pool = list(self.unseen)
        rng.shuffle(pool)
        hands: dict[int, CardSet] = {}
        for seat in range(self.seats):
            if seat == self.seat:
                continue
            count = self.counts[seat]
            taken, pool = pool[:count], pool[count:]
            mask = 0
            for card in taken:
                mask |= 1 << card
            hands[seat] = mask
        # The stock: the unseen cards the other hands leave, then (once restocked) the
        # discard pile shuffled (the cards discarded meanwhile are left out).
        restock = list(self.pile)
        rng.shuffle(restock)
        stock = pool + restock
        mine: list[int] = []
        theirs: dict[int, list[int]] = {s: [-1] for s in hands}
        order = [(self.seat + step) % self.seats for step in range(1, self.seats)]
        index = 0
        for _ in range(turns):
            for seat in [*order, self.seat]:
                card = stock[index] if index < len(stock) else -1
                index += 1
                (mine if seat == self.seat else theirs[seat]).append(card)
        return mine, hands, theirs

    def others(self, hands: dict[int, CardSet], draws: dict[int, list[int]]
               ) -> dict[int, _Line]:
        """Every other seat's greedy course (its turn ``t`` comes before the seat's turn
        ``t``; its list starts with a placeholder for turn 0, which it has already had)."""
        lines: dict[int, _Line] = {}
        for seat, hand in hands.items():
            # Its k-th turn of the rollout (from 0) is its turn k + 1 in the seat's
            # numbering, and what it holds before it is what it holds after turn k.
            line = self.play(hand, draws[seat][1:], opened=self.opened[seat], open_from=0,
                             until=HORIZON)
            if line.out_turn is not None:
                line.out_turn += 1
            lines[seat] = line
        return lines

    def value(self, me: _Line, others: dict[int, _Line]) -> float:
        """The outcome as the round scores it (lower is better for the seat): its side's
        figure minus the other sides' mean. The first to go out ends the round; the other
        seats come before the seat in each turn number."""
        ends: list[tuple[int, int, int, bool]] = []  # (turn, order, seat, hand)
        for seat, line in others.items():
            if line.out_turn is not None:
                ends.append((line.out_turn, (seat - self.seat) % self.seats, seat, line.is_hand))
        if me.out_turn is not None:
            ends.append((me.out_turn, self.seats, self.seat, me.is_hand))
        if not ends:
            turn, order, winner, is_hand = HORIZON, self.seats, -1, False
        else:
            turn, order, winner, is_hand = min(ends)
        factor = 2 if is_hand else 1
        # What each holds when the round ends: the seat before its turn ``turn``; another
        # seat after its turn ``turn`` if it plays before the winner, else after the one
        # before.
        scores = {self.seat: float(factor * _held(me, turn))}
        for seat, line in others.items():
            done = turn if (seat - self.seat) % self.seats < order else turn - 1
            scores[seat] = float(factor * _held(line, done))
        if winner >= 0:
            scores[winner] = _HAND if is_hand else _OUT
            if self.options.partnerships and not self.options.partner_of_winner_scores:
                scores[(winner + 2) % self.seats] = 0.0
        if self.options.partnerships:
            mine = scores[self.seat] + scores[(self.seat + 2) % self.seats]
            theirs = scores[(self.seat + 1) % self.seats] + scores[(self.seat + 3) % self.seats]
            return mine - theirs
        rest = [score for seat, score in scores.items() if seat != self.seat]
        return scores[self.seat] - sum(rest) / len(rest)


def _held(line: _Line, turn: int) -> int:
    """What ``line``'s player holds when the round ends before its turn ``turn``."""
    if not line.holding:
        return _UNOPENED
    return line.holding[max(0, min(turn, len(line.holding) - 1))]



def compare(
    race: Race, plans: Sequence[tuple[CardSet, int, int]], rng: random.Random,
    stop: Callable[[int], bool],
) -> list[tuple[float, float]]:
    """Mean and standard error, per plan, of the seat's outcome (lower is better) over
    rollouts until ``stop`` (given budget samples done) says enough. A plan is ``(hand,
    first_draw, open_from)``: the hand at turn 0 (before ``first_draw``, a stock card
    index into the seat's draws, or -1 for none) and the turn from which it opens when
    able (0: now). Differences are measured against plan 0 on the same deals."""
    totals = [0.0] * len(plans)
    squares = [0.0] * len(plans)
    done = rollouts = 0
    while not stop(done):
        mine, hands, draws = race.deal(rng, HORIZON + 1)
        try:
            others = race.others(hands, draws)
            end = min((line.out_turn for line in others.values() if line.out_turn is not None),
                      default=HORIZON)
            values = []
            for hand, first, open_from in plans:
                # Turn 0: the card drawn now (a stock card: the deal's first for the seat).
                sequence = [mine[0] if first >= 0 else -1, *mine[1:]]
                line = race.play(hand, sequence, opened=False, open_from=open_from, until=end)
                values.append(race.value(line, others))
        except OutOfTime:
            break  # the unfinished rollout counts for nothing
        for index, value in enumerate(values):
            difference = value - values[0] if index else value
            totals[index] += difference
            squares[index] += difference * difference
        rollouts += 1
        done += ROLLOUT_COST
    if not rollouts:
        return [(0.0, math.inf)] * len(plans)  # no evidence: the default stands
    results = []
    for index in range(len(plans)):
        mean = totals[index] / rollouts
        variance = max(squares[index] / rollouts - mean * mean, 0.0)
        error = math.sqrt(variance / rollouts) if rollouts > 1 else math.inf
        results.append((mean, error))
    return results


def better(results: list[tuple[float, float]]) -> int:
    """The plan to choose: 0 (the default) unless another gains :data:`MARGIN` on it on
    average and by more than its standard error; the greatest gain among those."""
    best, gain = 0, 0.0
    for index, (difference, error) in enumerate(results):
        if index and -difference > max(MARGIN, error) and -difference > gain:
            best, gain = index, -difference
    return best
