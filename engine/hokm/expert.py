"""The ``expert`` Hokm bot: determinized search within a per-move budget.

A pure policy over the seat's :class:`~dast.v1.hokm_pb2.HokmView`, like the other bots.
For each decision it repeatedly

1. deals the cards it cannot see at random, consistently with everything the view shows
   (:func:`~engine.hokm.search.worlds.sample_world`: its hand, the cards played, the suits
   each seat has shown it lacks, its own set-aside cards, the piles' tops);
2. keeps one of a few such deals in proportion to how likely each makes the opponents'
   play so far if they play like the greedy bot most of the time
   (:func:`~engine.hokm.search.worlds.likelihood`, :data:`RESAMPLING_POOL`);
3. plays every candidate in that deal and the rest of the round out with every seat
   following the greedy bot (:func:`~engine.hokm.search.playout.greedy_playout`), scoring
   the round for the seat's side;

and chooses the candidate with the best mean ("perfect information Monte Carlo").
Every candidate is scored on the same deals, so their differences are not luck of the
deal. Candidates: the legal cards (cards that are equivalent because nothing unseen lies
between them count once); the two piles; the four trump suits, over deals completing the
hakem's 5 cards; a short list of 4-card set-asides (the cheapest cards, or emptying short
side suits).

The budget (:class:`~engine.core.budget.Budget`) caps the number of sampled deals, which
makes a decision deterministic given the generator, and optionally the time: the caller
injects a clock (the engine never reads one), and the search stops after the sample during
which the deadline passed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Final

from dast.v1 import hokm_pb2
from engine.core.budget import Budget
from engine.core.cards import PACK_SIZE, SUIT_MASKS, SUITS, Card, CardSet, iter_cards
from engine.core.rng import DeterministicRandom
from engine.hokm.rules import SET_ASIDE_COUNT, HokmOptions, resolve_rules
from engine.hokm.search.core import FastRound
from engine.hokm.search.playout import cheapest, greedy_playout, greedy_set_aside
from engine.hokm.search.worlds import (
    Knowledge,
    deal_from_five,
    knowledge_of,
    plausible_world,
    round_of,
)

Policy = Callable[[hokm_pb2.HokmView, DeterministicRandom], hokm_pb2.HokmCommand]

DEFAULT_SAMPLES: Final = 48
"""Deals per decision when no clock is given (deterministic; tens of milliseconds)."""
_TRICK_MARGIN: Final = 0.01
"""Weight of the trick difference in a round's value: breaks ties between equal scores."""
_MAX_SET_ASIDES: Final = 10
RESAMPLING_POOL: Final = 2
"""Deals sampled for each one played out (:func:`~engine.hokm.search.worlds.plausible_world`).
Short arena runs against greedy (80 matches, 60 ms a move) could not tell pools of 1, 2 and
4 apart beyond noise (win rates 0.71-0.80); a larger pool costs playouts (each sampled
deal costs about a third of its playouts), so the pool stays small."""


def _round_value(rnd: FastRound, me: int) -> float:
    """The finished round for ``me``: my side's mean points less the other side's, plus a
    small trick margin."""
    score = rnd.score()
    mine = theirs = 0.0
    my_seats = other_seats = 0
    my_tricks = other_tricks = 0
    mine_side = rnd.side_of(me)
    for seat in range(rnd.seats):
        if rnd.side_of(seat) == mine_side:
            mine += score.points[seat]
            my_seats += 1
            my_tricks += rnd.tricks_won[seat]
        else:
            theirs += score.points[seat]
            other_seats += 1
            other_tricks += rnd.tricks_won[seat]
    return mine / my_seats - theirs / other_seats + _TRICK_MARGIN * (my_tricks - other_tricks)


def _best(totals: Sequence[float]) -> int:
    return max(range(len(totals)), key=lambda index: (totals[index], -index))


def distinct_plays(legal: CardSet, known: CardSet) -> list[Card]:
    """One card of each group of ``legal`` cards that play alike: same suit with no card
    between them that is not ``known`` (played, or in the seat's hand).

    >>> from engine.core.cards import mask_of, parse_cards, cards_text
    >>> hand = mask_of(parse_cards("9♠ 10♠ Q♠ 2♥"))
    >>> cards_text(distinct_plays(hand, hand))  # J♠ is out: Q♠ plays unlike 10♠
    '9♠ Q♠ 2♥'
    >>> cards_text(distinct_plays(hand, hand | mask_of(parse_cards("J♠"))))
    '9♠ 2♥'
    """
    kept: list[Card] = []
    for suit in range(SUITS):
        previous = -1
        for card in iter_cards(legal & SUIT_MASKS[suit]):
            between = ((1 << card) - 1) & ~((2 << previous) - 1) if previous >= 0 else 0
            if previous < 0 or between & ~known:
                kept.append(card)
            previous = card
    return kept


def _search_plays(
    knowledge: Knowledge, budget: Budget, rng: random.Random, candidates: Sequence[int],
    apply: Callable[[FastRound, int], None],
) -> int:
    """The index of the best candidate by playouts over sampled deals."""
    totals = [0.0] * len(candidates)
    stop = budget.stopper()
    done = 0
    while not stop(done):
        world = plausible_world(knowledge, rng, RESAMPLING_POOL)
        base = round_of(knowledge, world)
        for index, candidate in enumerate(candidates):
            rnd = base.copy()
            apply(rnd, candidate)
            greedy_playout(rnd)
            totals[index] += _round_value(rnd, knowledge.me)
        done += 1
    return _best(totals)


def _play_card(view: hokm_pb2.HokmView, budget: Budget, rng: random.Random) -> Card:
    knowledge = knowledge_of(view)
    legal = 0
    for command in view.legal:
        legal |= 1 << command.play_card.card
    played = 0
    for play in knowledge.plays:
        played |= 1 << play.card
    candidates = distinct_plays(legal, knowledge.hand | played)
    if len(candidates) == 1:
        return candidates[0]
    return candidates[_search_plays(knowledge, budget, rng, candidates, FastRound.play)]


def _take_pile(view: hokm_pb2.HokmView, budget: Budget, rng: random.Random) -> int:
    return _search_plays(knowledge_of(view), budget, rng, (0, 1), FastRound.take_pile)


def _start_round(
    options: HokmOptions, hakem: int, trump: int, hands: list[CardSet], rest: Sequence[Card],
    set_aside: CardSet | None = None,
) -> FastRound:
    """The first lead of a round dealt in full (three players: the hakem takes the kitty
    and lays ``set_aside``, or the greedy bot's 4; two players: the piles of ``rest``)."""
    hands = hands[:]
    if options.seats == 3:
        with_kitty = hands[hakem] | sum(1 << card for card in rest)
        aside = greedy_set_aside(with_kitty, trump) if set_aside is None else set_aside
        hands[hakem] = with_kitty & ~aside
        return FastRound.deal(options, hakem, trump, hands)
    if options.seats == 2:
        half = len(rest) // 2
        return FastRound.deal(options, hakem, trump, hands, rest[:half], rest[half:])
    return FastRound.deal(options, hakem, trump, hands)


def _declare_trump(view: hokm_pb2.HokmView, budget: Budget, rng: random.Random) -> int:
    options = resolve_rules(view.rules)
    hakem, five = view.seat, 0
    for card in view.hand:
        five |= 1 << card
    totals = [0.0] * SUITS
    stop = budget.stopper()
    done = 0
    while not stop(done):
        hands, rest = deal_from_five(options, hakem, five, rng)
        for suit in range(SUITS):
            rnd = _start_round(options, hakem, suit, hands, rest)
            greedy_playout(rnd)
            totals[suit] += _round_value(rnd, hakem)
        done += 1
    return _best(totals)


def set_aside_candidates(hand: CardSet, trump: int) -> list[CardSet]:
    """4-card sets worth laying aside from the hakem's 20 (three players): the greedy
    bot's cheapest 4, and every way of emptying one or two short side suits (aces kept
    only when nothing else fits) filled up with the cheapest cards left."""
    found = [greedy_set_aside(hand, trump)]
    side = [s for s in range(SUITS) if s != trump and hand & SUIT_MASKS[s]]
    groups = [(s,) for s in side] + list(combinations(side, 2))
    for group in groups:
        aside = 0
        for suit in group:
            aside |= hand & SUIT_MASKS[suit]
        if aside.bit_count() > SET_ASIDE_COUNT:
            continue
        while aside.bit_count() < SET_ASIDE_COUNT:
            aside |= 1 << cheapest(hand & ~aside, trump)
        if aside not in found:
            found.append(aside)
    return found[:_MAX_SET_ASIDES]


def _set_aside(view: hokm_pb2.HokmView, budget: Budget, rng: random.Random) -> CardSet:
    options = resolve_rules(view.rules)
    hakem, trump = view.seat, view.trump - 1
    hand = 0
    for card in view.hand:
        hand |= 1 << card
    candidates = set_aside_candidates(hand, trump)
    unseen = [card for card in range(PACK_SIZE) if not hand >> card & 1]
    totals = [0.0] * len(candidates)
    stop = budget.stopper()
    done = 0
    while not stop(done):
        rng.shuffle(unseen)
        defenders = [s for s in range(options.seats) if s != hakem]
        hands = [0] * options.seats
        for index, seat in enumerate(defenders):
            for card in unseen[index * options.hand_size:(index + 1) * options.hand_size]:
                hands[seat] |= 1 << card
        for index, aside in enumerate(candidates):
            hands[hakem] = hand & ~aside
            rnd = FastRound.deal(options, hakem, trump, hands)
            greedy_playout(rnd)
            totals[index] += _round_value(rnd, hakem)
        done += 1
    return candidates[_best(totals)]


def make_expert(budget: Budget | None = None) -> Policy:
    """The ``expert`` policy with ``budget`` per decision.

    The search draws from a :class:`random.Random` seeded by one word of the policy's
    :class:`~engine.core.rng.DeterministicRandom` (its HMAC per draw would cost more than
    the search itself), so a sample budget makes every decision reproducible. The default
    budget is :data:`DEFAULT_SAMPLES` deals and no clock.
    """
    if budget is None:
        budget = Budget(DEFAULT_SAMPLES)

    def expert_policy(
        view: hokm_pb2.HokmView, rng: DeterministicRandom
    ) -> hokm_pb2.HokmCommand:
        """The ``expert`` bot's command for the seat of ``view`` (module docstring).

        :raises ValueError: if the view offers no legal command.
        """
        if not view.legal:
            raise ValueError("the seat has nothing to do")
        search_rng = random.Random(rng.next_word())
        phase = view.phase
        if phase == hokm_pb2.HOKM_PHASE_DECLARE_TRUMP:
            suit = _declare_trump(view, budget, search_rng)
            return hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=suit + 1))  # type: ignore[arg-type]
        if phase == hokm_pb2.HOKM_PHASE_SET_ASIDE:
            aside = list(iter_cards(_set_aside(view, budget, search_rng)))
            return hokm_pb2.HokmCommand(set_aside_cards=hokm_pb2.SetAsideCards(cards=aside))
        if phase == hokm_pb2.HOKM_PHASE_TAKE_PILE:
            pile = _take_pile(view, budget, search_rng)
            return hokm_pb2.HokmCommand(take_pile_card=hokm_pb2.TakePileCard(pile=pile))
        card = _play_card(view, budget, search_rng)
        return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))

    return expert_policy


expert_policy: Final = make_expert()
"""The ``expert`` with the default sample budget (deterministic; no clock)."""
