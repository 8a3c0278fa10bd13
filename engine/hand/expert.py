"""The ``expert`` Hand bot: the exact meld solver valuing the discards against the draws.

A pure policy over the seat's :class:`~dast.v1.hand_pb2.HandView`, like the other bots.
A round is a race (docs/rules/hand.md "Scoring"): whoever goes out scores −30, the others
keep the penalty of their cards (+100 before opening), and a turn sheds at most one card
that no meld takes. So the bot's yardstick is a hand's *loose* cards: those the solver
(:func:`~engine.hand.solver.min_penalty`, with lay-offs on the table once opened) leaves
out of every meld, first their number, then their penalty; before opening, also how far
the best opening (:func:`~engine.hand.solver.best_opening`) falls short of the threshold.
The cards it cannot see are the deck less its hand, the discard pile and the table melds:
a card taken from the discard pile must be melded the same turn (docs/rules/hand.md "A
turn"), so every card a player took from the pile is on the table, and every other unseen
card is equally likely to come off the stock next.

- **Draw**: take the discard whenever the view offers it (it lists ``take_discard`` only
  when the card can be used at once: a sure step where the stock gives a chance of one);
  but before opening, where taking it would oblige the seat to open this turn, draw from
  the stock instead when rollouts find that keeping the choice scores better.
- **Go out** whenever the solver finds how (the "hand" lay-down first, before opening;
  once opened, the joker retrievals of its plan first, then its melds at once);
  open as soon as allowed, unless rollouts find that keeping the melds in hand for a
  "hand" (−60, every other figure doubled) scores better; then lay the meld that lays the
  most cards, and the lay-offs of the solver's plan, and joker retrievals.
- **Rollouts** (:mod:`engine.hand.expert_race`): the unseen cards dealt at random to the
  other hands and the stock, every other seat playing a greedy solitaire that tells when
  it would go out, the seat's plans (take or draw; open now, or wait one or three turns
  for a hand) played on the same deals and valued as the round scores; a plan replaces
  the default only where it gains :data:`~engine.hand.expert_race.MARGIN` points on it
  on average, and more than the standard error.
- **Discard**: never a joker while another card remains, nor a card the next seat can use
  at once while another will do (the ``basic`` bot's first keys); among the cards the
  solver leaves loose, the ``basic`` bot's first :data:`_SHORTLIST` (once opened, only
  those as far from melds as the farthest), the one whose hand stands best after the next
  draw, on average over every unseen card that could change the solver's plan (any other
  is discarded again): fewest loose cards, then least penalty (weighed more when an
  opponent is close to going out), then the opening's shortfall.

The budget (:class:`~engine.core.budget.Budget`) caps the hands valued (deterministic
given the generator: the draws are tried in a shuffled order) and optionally the time,
with a clock the caller injects; a rollout counts as
:data:`~engine.hand.expert_race.ROLLOUT_COST` samples, and the rollouts take at most half
the time.
"""

from __future__ import annotations

import random
from typing import Final

from dast.v1 import hand_pb2
from engine.core.budget import Budget
from engine.core.cards import RANKS_PER_SUIT, CardSet, iter_cards
from engine.core.rng import DeterministicRandom
from engine.hand.basic_bot import closeness, feeds_next
from engine.hand.bots import Policy
from engine.hand.cards import FULL_DECK, JOKERS_MASK, is_joker, natural_of, penalty_value
from engine.hand.codec import meld_spec_of, table_meld_of_proto
from engine.hand.expert_race import WAIT_TURNS, Race, better, compare
from engine.hand.melds import Meld, MeldKind
from engine.hand.rules import Options, options_of
from engine.hand.solver import best_opening, can_go_out, min_penalty

DEFAULT_SAMPLES: Final = 240
"""Hands valued per decision when no clock is given (deterministic): about every card
that could change the plan, for each shortlisted discard."""
_CLOSE_TO_OUT: Final = 5
"""An opponent who has opened and holds this many cards or fewer may go out any turn."""
_SHORTLIST: Final = 6
"""Discards valued at most: the ``basic`` bot's first choices among the loose cards (it
keeps the time within the budget; the basic order puts first what is far from melds)."""
_MIN_STOCK_TO_WAIT: Final = 12
"""Below this many stock cards the round may soon end: dump penalty as when threatened."""
_OUT_VALUE: Final = 5.0
"""The value of going out next turn, above any hand that still holds loose cards."""
_PENALTY_WEIGHT: Final = 0.03
"""Loose cards' value per penalty point: a 10 a third of a loose card (the penalty counts
only if another seat goes out first)."""
_THREAT_PENALTY_WEIGHT: Final = 0.1
"""The same when an opponent may go out any turn: a 10 is worth a loose card."""
_RACE_STREAM: Final = 0x5EED_0F_7ACE
"""Mixed into the decision's seed word for the rollouts' generator."""
_POINTS_PER_CARD: Final = 8.0
"""Before opening, a loose card's worth of the opening's shortfall, in points."""


_SUITS: Final = 4
_RUN_REACH: Final = 2
"""A run holds a card within two positions of another (the one between, or one joker)."""


def _positions(rank: int) -> tuple[int, ...]:
    """A rank's run positions: the ace low and high, any other rank once."""
    return (0, RANKS_PER_SUIT) if rank == RANKS_PER_SUIT - 1 else (rank + 1,)


def _near(face: int) -> int:
    """The faces (a 52-bit mask) that can meld with ``face``: its rank in every suit, and
    its suit within :data:`_RUN_REACH` run positions."""
    suit, rank = divmod(face, RANKS_PER_SUIT)
    near = 0
    for other_suit in range(_SUITS):
        near |= 1 << (other_suit * RANKS_PER_SUIT + rank)
    for other in range(RANKS_PER_SUIT):
        if any(abs(p - q) <= _RUN_REACH for p in _positions(rank) for q in _positions(other)):
            near |= 1 << (suit * RANKS_PER_SUIT + other)
    return near


_NEAR: Final = tuple(_near(face) for face in range(_SUITS * RANKS_PER_SUIT))
_SAME_RANK: Final = tuple(
    sum(1 << (s * RANKS_PER_SUIT + face % RANKS_PER_SUIT) for s in range(_SUITS))
    for face in range(_SUITS * RANKS_PER_SUIT))
_SAME_SUIT: Final = tuple(
    sum(1 << (face // RANKS_PER_SUIT * RANKS_PER_SUIT + r) for r in range(RANKS_PER_SUIT))
    for face in range(_SUITS * RANKS_PER_SUIT))


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
        self._plans: dict[tuple[CardSet, int], tuple[CardSet, int]] = {}
        self._laid_off: dict[tuple[CardSet, int], CardSet] = {}
        self._openings: dict[CardSet, int] = {}
        self.penalty_weight = _THREAT_PENALTY_WEIGHT if _threatened(view) else _PENALTY_WEIGHT

    def plan(self, hand: CardSet, keep: int) -> tuple[CardSet, int]:
        """The cards the solver leaves out of every meld and lay-off (keeping ``keep``),
        and their penalty; before opening, as if any meld could be laid (the structure of
        the hand, whatever the threshold)."""
        found = self._plans.get((hand, keep))
        if found is None:
            options = self.options
            penalty = min_penalty(
                hand, table_melds=self.melds, can_lay_off=self.opened,
                max_jokers=options.max_jokers_per_meld, joker_penalty=options.joker_penalty,
                keep=keep,
            )
            left = 0
            for card in penalty.left:
                left |= 1 << card
            laid_off = 0
            for lay_off in penalty.lay_offs:
                laid_off |= 1 << lay_off.card
            # what stays in hand: a table joker the plan retrieves may be among it
            found = self._plans[(hand, keep)] = (left, penalty.points)
            self._laid_off[(hand, keep)] = laid_off
        return found

    def laid_off(self, hand: CardSet, keep: int) -> CardSet:
        """The cards the solver's plan of ``hand`` lays off on the table."""
        self.plan(hand, keep)
        return self._laid_off[(hand, keep)]

    def loose_cards(self, hand: CardSet, keep: int) -> CardSet:
        """The cards of ``hand`` that the solver's plan leaves in hand."""
        return self.plan(hand, keep)[0]

    def opening_total(self, hand: CardSet) -> int:
        """The best opening total ``hand`` can lay (threshold aside)."""
        found = self._openings.get(hand)
        if found is None:
            options = self.options
            found = self._openings[hand] = best_opening(
                hand, ace_low_value=options.ace_low_value,
                max_jokers=options.max_jokers_per_meld).total
        return found

    def rest_value(self, hand: CardSet, *, drawn: bool) -> float:
        """How good the seat stands after its next turn (higher is better), from ``hand``
        just after that turn's draw (``drawn``; its costliest loose card then goes) or
        as it will be when the drawn card is simply discarded again.

        The round is a race: whoever goes out scores −30 and the others keep their
        loose cards' penalty (+100 before opening), and a turn sheds at most one loose
        card, so what counts first is how many loose cards remain, then (the more, the
        closer an opponent is to going out) their penalty; before opening, how far the
        best opening falls short of the threshold."""
        loose, points = self.plan(hand, keep=1 if drawn else 0)
        count = loose.bit_count()
        if drawn and count:
            count -= 1
            points -= max(penalty_value(c, joker_penalty=self.options.joker_penalty)
                          for c in iter_cards(loose))
        if count == 0:
            return _OUT_VALUE  # the seat goes out (a hand too, before opening)
        value = -count - self.penalty_weight * points
        if not self.opened:
            shortfall = max(0, self.options.open_min - self.opening_total(hand))
            value -= shortfall / _POINTS_PER_CARD
        return value

    def draw_weights(self, hand: CardSet) -> dict[int, int]:
        """The unseen cards that could change the solver's plan of ``hand`` (one card per
        face, with how many copies of it are unseen): a joker, a card of a rank the hand
        holds, or within two ranks of a card of its suit (one joker fills a gap of one),
        and once opened any card a table meld's suit or rank could take."""
        near_faces = 0
        for card in iter_cards(hand & ~JOKERS_MASK):
            near_faces |= _NEAR[natural_of(card)]
        if self.opened:
            for meld in self.melds:
                face = next(f for c, f in zip(meld.cards, meld.faces, strict=True)
                            if not is_joker(c))
                near_faces |= _SAME_RANK[face] if meld.kind == MeldKind.SET else _SAME_SUIT[face]
        weights: dict[int, int] = {}
        first: dict[int, int] = {}
        for card in self.unseen:
            key = -1 if is_joker(card) else natural_of(card)
            if key >= 0 and not near_faces >> key & 1:
                continue
            if key in first:
                weights[first[key]] += 1
            else:
                first[key] = card
                weights[card] = 1
        return weights


def _of_kind(view: hand_pb2.HandView, kind: str) -> list[hand_pb2.HandCommand]:
    return [command for command in view.legal if command.WhichOneof("kind") == kind]


def _laid_count(command: hand_pb2.HandCommand) -> int:
    return sum(len(meld.cards) for meld in command.lay_melds.melds)


def _compare(
    table: _Table, plans: list[tuple[int, int, int]], budget: Budget, rng: random.Random
) -> int:
    """The plan the rollouts choose (:func:`~engine.hand.expert_race.better`; 0 is the
    default), within the rollouts' share of ``budget``."""
    view = table.view
    rollouts = _rollout_budget(budget)
    race = Race(table.options, view.seat, list(view.hand_counts),
                [bool(o) for o in view.opened], table.melds, table.unseen,
                list(view.discard_pile), out_of_time=rollouts.deadline())
    return better(compare(race, plans, rng, rollouts.stopper()))


def _rollout_budget(budget: Budget) -> Budget:
    """The rollouts' share of a decision's budget: its samples, and half its time (the
    discard search that may follow in the same decision gets the rest)."""
    return Budget(budget.samples, budget.time_ms / 2, budget.clock)


def _draw(table: _Table, budget: Budget, rng: random.Random) -> hand_pb2.HandCommand:
    """Take the discard whenever the view offers it (the card is usable at once, so it is
    a sure step of the race where the stock's card is a chance of one); but before opening,
    when taking it would oblige the seat to open now, draw from the stock instead if the
    rollouts (:mod:`engine.hand.expert_race`) find that keeping the choice (open when able,
    or wait for a hand) scores better."""
    view = table.view
    takes = _of_kind(view, "take_discard")
    stock = _of_kind(view, "draw_from_stock")
    if takes and stock and not table.opened and view.discard_pile:
        taken = view.discard_pile[-1]
        plans = [(table.hand | 1 << taken, -1, 0), (table.hand, 0, 0)]
        plans += [(table.hand, 0, wait) for wait in WAIT_TURNS]
        if _compare(table, plans, budget, rng):
            return stock[0]
    return (takes or stock)[0]


def _wait_for_hand(table: _Table, budget: Budget, rng: random.Random) -> bool:
    """Whether to keep the melds in hand for a "hand" rather than open now: only where
    the rollouts find that waiting scores better on the same deals."""
    plans = [(table.hand, -1, 0)] + [(table.hand, -1, wait) for wait in WAIT_TURNS]
    return _compare(table, plans, budget, rng) > 0


def _threatened(view: hand_pb2.HandView) -> bool:
    """Whether the round may end soon: an opponent has opened with few cards, or the
    stock is low (the loose cards' penalty then weighs more)."""
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
    # Never a joker while another card remains, never a card the next seat can use at
    # once while another will do (the basic bot's first two keys); among the rest, only
    # cards outside the solver's best melds of the hand are worth giving up.
    first = _basic_order(view, ranked[0].discard.card)[:2]
    safe = [c for c in ranked if _basic_order(view, c.discard.card)[:2] == first]
    loose = table.loose_cards(table.hand, keep=1)
    shortlist = ([c for c in safe if loose >> c.discard.card & 1] or safe)[:_SHORTLIST]
    if table.opened:
        # Once opened, only the cards as far from melds as the farthest (the basic order's
        # third key): one draw's view undervalues a card close to others, which may join
        # a meld over the turns to come (solitaire races from 360 deals: 0.5 to 1.2 turns
        # faster to go out than valuing every loose card).
        keys = _basic_order(view, shortlist[0].discard.card)[:3]
        shortlist = [c for c in shortlist if _basic_order(view, c.discard.card)[:3] == keys]
    if len(shortlist) == 1:
        return shortlist[0]
    remaining = [table.hand & ~(1 << c.discard.card) for c in shortlist]
    weight = [0.0] * len(shortlist)
    # A card near nothing of the hand or the table changes no plan: drawing it is as if
    # drawing nothing (it is the next discard). Only the other faces are searched.
    draws = table.draw_weights(table.hand)
    faces = sorted(draws)
    rng.shuffle(faces)
    useless = len(table.unseen) - sum(draws.values())
    # A sample is one hand valued: every shortlisted discard is valued against a drawn
    # card before the next card is tried, so that the budget cuts between cards.
    stop = budget.stopper()
    done = tried = searched = 0
    while tried < len(faces) and not stop(done):
        card, copies = faces[tried], draws[faces[tried]]
        for index, hand in enumerate(remaining):
            weight[index] += copies * table.rest_value(hand | 1 << card, drawn=True)
        searched += copies
        tried += 1
        done += len(remaining)
    scores = []
    for index, hand in enumerate(remaining):
        relevant = weight[index] / searched * (len(table.unseen) - useless) if searched else 0.0
        scores.append(relevant + useless * table.rest_value(hand, drawn=False))
    # Best expected position after the next draw; ties keep the basic order.
    best = max(range(len(shortlist)), key=lambda i: (scores[i], -i))
    return shortlist[best]


def _meld_or_discard(
    table: _Table, budget: Budget, rng: random.Random, race_rng: random.Random
) -> hand_pb2.HandCommand:
    view = table.view
    lay_downs = _of_kind(view, "lay_melds")
    size = len(view.hand)
    hand_finish = [c for c in lay_downs if _laid_count(c) == size - 1]
    if hand_finish and not table.opened:
        return hand_finish[0]
    discards = _of_kind(view, "discard")
    if lay_downs and not table.opened:
        if view.HasField("must_use") or not discards or not _wait_for_hand(table, budget, race_rng):
            return lay_downs[0]  # the solver's best opening
        # Waiting: the discard search has the half of the time the rollouts left.
        return _discard(table, _rollout_budget(budget), rng)
    if lay_downs and table.opened and not view.HasField("must_use"):
        options = table.options
        plan = can_go_out(
            table.hand, table.melds, has_opened=True, open_min=options.open_min,
            ace_low_value=options.ace_low_value, max_jokers=options.max_jokers_per_meld,
        )
        # Going out: make the solver's joker retrievals first, then lay its melds at once
        # (the greedy longest meld first may strand cards), then its lay-offs below.
        if plan is not None and plan.retrievals:
            retrieval = plan.retrievals[0]
            return hand_pb2.HandCommand(retrieve_joker=hand_pb2.RetrieveJoker(
                meld_id=view.melds[retrieval.meld_index].id, cards=retrieval.cards))
        if plan is not None and plan.melds:
            return hand_pb2.HandCommand(lay_melds=hand_pb2.LayMelds(
                melds=[meld_spec_of(meld) for meld in plan.melds]))
    if lay_downs:
        return max(lay_downs, key=_laid_count)
    if table.opened and not view.HasField("must_use"):
        # Only the lay-offs of the solver's plan: another may take a card that the plan
        # melds otherwise, or a joker worth more in hand.
        planned = table.laid_off(table.hand, keep=1)
        for command in _of_kind(view, "lay_off"):
            if planned >> command.lay_off.card & 1:
                return command
    else:
        found = _of_kind(view, "lay_off")
        if found:
            return found[0]
    found = _of_kind(view, "retrieve_joker")
    if found:
        return found[0]
    if discards:
        return _discard(table, budget, rng)
    return view.legal[0]


def make_expert(budget: Budget | None = None) -> Policy:
    """The ``expert`` policy with ``budget`` per decision (default: :data:`DEFAULT_SAMPLES`
    hands valued, no clock). The search draws from a :class:`random.Random` seeded by one
    word of the policy's generator, so a sample budget makes decisions reproducible."""
    chosen = Budget(DEFAULT_SAMPLES) if budget is None else budget

    def expert_policy(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
        """The ``expert`` bot's command for the seat of ``view`` (module docstring).

        :raises ValueError: if the view lists no legal command (the seat is not to act).
        """
        if not view.legal:
            raise ValueError("the seat has no legal command")
        word = rng.next_word()
        search_rng = random.Random(word)
        # The rollouts draw from their own generator, so that the discard search is the
        # same whether or not they ran.
        race_rng = random.Random(word ^ _RACE_STREAM)
        table = _Table(view)
        if view.phase == hand_pb2.HAND_PHASE_DRAW:
            return _draw(table, chosen, race_rng)
        if view.phase == hand_pb2.HAND_PHASE_FIRST_DISCARD:
            return _discard(table, chosen, search_rng)
        return _meld_or_discard(table, chosen, search_rng, race_rng)

    return expert_policy


expert_policy: Final = make_expert()
"""The ``expert`` with the default sample budget (deterministic; no clock)."""
