"""What a seat knows from its view, deals sampled consistently with it, and their weights.

A seat's :class:`~dast.v1.hokm_pb2.HokmView` is all a bot may read, never the full state.
:func:`knowledge_of` gathers from it what constrains the hidden cards: the seat's own
hand, every card played this round, its own set-aside cards (a three-player hakem), the
piles' face-up tops (two players), how many cards each seat holds, and the suits each
seat has shown it lacks by not following them. :func:`sample_world` deals the unseen cards
at random under those constraints (OpenSpiel's "resample from infostate"), and
:func:`likelihood` says how probable the round's play so far is in a sampled deal if the
other seats play like the greedy bot most of the time; :func:`plausible_world` keeps one of
a few sampled deals in proportion to it, which is how the ``expert`` uses the inference.

The two-player view does not list the cards taken from the piles, so there the seat's
knowledge is weaker than the rules allow (those cards are sampled as unseen), a void
counts only once the piles are empty (until then a seat may draw the suit again), and no
weighting is done (the opponent's earlier hands are not known).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

from dast.v1 import hokm_pb2
from engine.core.cards import FULL_PACK, RANKS_PER_SUIT, SUITS, Card, CardSet, iter_cards
from engine.hokm import _core
from engine.hokm.rules import HokmOptions, resolve_rules
from engine.hokm.search.core import FastRound
from engine.hokm.search.playout import greedy_card

_SINK: Final = -1
"""Where an unseen card lies when no hand holds it (set aside, face down in a pile)."""
_ATTEMPTS: Final = 24
"""Constrained deals tried before the voids are relaxed (only very tight spots need it)."""
MODEL_NOISE: Final = 0.3
"""How often the play model lets a seat stray from the greedy bot's choice: soft enough
that partners who play better than greedy (or a ``basic`` bot) keep their samples alive."""


class Play(NamedTuple):
    """One card played this round, with the trick as it stood before it."""

    seat: int
    card: Card
    before: tuple[Card, ...]
    leader: int


@dataclass(frozen=True, slots=True)
class Knowledge:
    """What the seat ``me`` knows of the round in trick play (or at a pile choice)."""

    options: HokmOptions
    me: int
    hakem: int
    trump: int
    hand: CardSet
    unseen: CardSet
    """Cards whose place the seat does not know: in another hand or the sink."""
    counts: tuple[int, ...]
    """Cards held per seat."""
    sink: int
    """How many unseen cards lie outside the hands (set aside by another seat's hakem,
    face down in the piles)."""
    voids: tuple[int, ...]
    """Per seat, a bit per suit it has shown it lacks."""
    plays: tuple[Play, ...]
    """This round's plays in order (finished tricks, then the trick on the table)."""
    leader: int
    trick: tuple[Card, ...]
    tricks_won: tuple[int, ...]
    turn: int
    taking: bool
    top_a: int
    """Two players: the face-up tops, and how many cards each pile holds."""
    top_b: int
    pile_size: int

    @property
    def seats(self) -> int:
        """Number of seats."""
        return len(self.counts)


def knowledge_of(view: hokm_pb2.HokmView) -> Knowledge:
    """The seat's knowledge from its view, in the ``PLAY`` or ``TAKE_PILE`` phase."""
    options = resolve_rules(view.rules)
    seats = len(view.hand_counts)
    hand = _mask(view.hand)
    plays: list[Play] = []
    voids = [0] * seats
    tricks = [*view.tricks, view.current_trick]
    for index, trick in enumerate(tricks):
        # Two players draw after each of the first 13 tricks: a void shown before the
        # piles are empty may be filled again by the next draw.
        voids_hold = seats != 2 or index >= options.total_tricks - 13
        cards = [play.card for play in trick.plays]
        led = cards[0] // RANKS_PER_SUIT if cards else -1
        for position, play in enumerate(trick.plays):
            plays.append(Play(play.seat, play.card, tuple(cards[:position]), trick.leader))
            if position and voids_hold and play.card // RANKS_PER_SUIT != led:
                voids[play.seat] |= 1 << led
    known = hand | _mask(view.set_aside) | _mask(play.card for play in plays)
    if view.pile_size:
        known |= (1 << view.top_a) | (1 << view.top_b)
    unseen = FULL_PACK & ~known
    counts = tuple(view.hand_counts)
    held_by_others = sum(counts) - counts[view.seat]
    current = view.current_trick
    return Knowledge(
        options=options, me=view.seat, hakem=view.hakem, trump=view.trump - 1, hand=hand,
        unseen=unseen, counts=counts, sink=unseen.bit_count() - held_by_others,
        voids=tuple(voids), plays=tuple(plays),
        leader=current.leader if current.plays else view.turn,
        trick=tuple(play.card for play in current.plays), tricks_won=tuple(view.tricks_won),
        turn=view.turn, taking=view.phase == hokm_pb2.HOKM_PHASE_TAKE_PILE,
        top_a=view.top_a, top_b=view.top_b, pile_size=view.pile_size,
    )


def _mask(cards: Iterable[Card]) -> CardSet:
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


class World(NamedTuple):
    """One deal consistent with a seat's knowledge."""

    hands: tuple[CardSet, ...]
    sink: tuple[Card, ...]
    """The unseen cards outside the hands, in random order (two players: the piles'
    face-down cards, pile A's first)."""


def sample_world(knowledge: Knowledge, rng: random.Random) -> World:
    """Deal the unseen cards at random: each other seat gets as many as it holds, none of
    a suit it has shown it lacks; the rest go to the sink. In the rare spot where random
    tries keep failing the voids are dropped, so a world always comes back."""
    for attempt in range(_ATTEMPTS + 1):
        world = _try_deal(knowledge, rng, respect_voids=attempt < _ATTEMPTS)
        if world is not None:
            return world
    raise AssertionError("a deal that ignores voids cannot fail")


def _try_deal(knowledge: Knowledge, rng: random.Random, respect_voids: bool) -> World | None:
    cards = list(iter_cards(knowledge.unseen))
    rng.shuffle(cards)
    room = {seat: count for seat, count in enumerate(knowledge.counts) if seat != knowledge.me}
    room[_SINK] = knowledge.sink
    voids = knowledge.voids if respect_voids else (0,) * knowledge.seats
    # Who may hold a card of each suit: the sink, and every seat not void in it.
    holders = [
        [seat for seat in room if seat == _SINK or not voids[seat] >> suit & 1]
        for suit in range(SUITS)
    ]
    # The most constrained cards first, so that the free ones fill whatever room is left
    # (a stable sort keeps the shuffled order within each group).
    cards.sort(key=lambda card: len(holders[card // RANKS_PER_SUIT]))
    hands = [0] * knowledge.seats
    hands[knowledge.me] = knowledge.hand
    sink: list[Card] = []
    for card in cards:
        options = [seat for seat in holders[card // RANKS_PER_SUIT] if room[seat]]
        if not options:
            return None
        seat = options[0]
        if len(options) > 1:
            # Weighted by room left: close to uniform over the consistent deals.
            pick = rng.random() * sum(room[s] for s in options)
            for seat in options:
                pick -= room[seat]
                if pick < 0:
                    break
        room[seat] -= 1
        if seat == _SINK:
            sink.append(card)
        else:
            hands[seat] |= 1 << card
    return World(tuple(hands), tuple(sink))


def round_of(knowledge: Knowledge, world: World) -> FastRound:
    """The search core's round in ``world``, at the position of ``knowledge``."""
    piles: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ())
    if knowledge.pile_size:
        hidden = knowledge.pile_size - 1
        piles = ((knowledge.top_a, *world.sink[:hidden]),
                 (knowledge.top_b, *world.sink[hidden:2 * hidden]))
    rnd = FastRound.deal(knowledge.options, knowledge.hakem, knowledge.trump, world.hands,
                         *piles)
    rnd.leader, rnd.turn = knowledge.leader, knowledge.turn
    rnd.trick = list(knowledge.trick)
    rnd.tricks_won = list(knowledge.tricks_won)
    rnd.taking = knowledge.taking
    return rnd


def likelihood(knowledge: Knowledge, world: World, noise: float = MODEL_NOISE) -> float:
    """How probable the opponents' play so far is in ``world`` if each plays the greedy
    bot's card with probability ``1 - noise`` and otherwise a uniform legal card. Partners
    are not weighted: a partner is often another expert, whose play the greedy model
    misreads (weighting it too lost matches in the arena). Forced plays (one legal card)
    say nothing and weigh 1. Two players: always 1."""
    if knowledge.seats == 2:
        return 1.0
    seats, trump, me = knowledge.seats, knowledge.trump, knowledge.me
    # Each seat's hand when the round's play began: what it holds now and what it played.
    hands = list(world.hands)
    for play in knowledge.plays:
        hands[play.seat] |= 1 << play.card
    hakem = knowledge.hakem
    my_side = _core.is_hakem_side(knowledge.options, hakem, me)
    weight = 1.0
    for play in knowledge.plays:
        seat = play.seat
        hand = hands[seat]
        hands[seat] = hand & ~(1 << play.card)
        if _core.is_hakem_side(knowledge.options, hakem, seat) == my_side:
            continue  # a partner may be another expert (or a person): not modelled
        legal = _core.legal_play_mask(hand, play.before)
        choices = legal.bit_count()
        if choices == 1:
            continue
        chosen = greedy_card(hand, play.before, play.leader, seat, seats, trump)
        weight *= noise / choices + (1.0 - noise if chosen == play.card else 0.0)
    return weight


def deal_from_five(
    options: HokmOptions, hakem: int, first_five: CardSet, rng: random.Random
) -> tuple[list[CardSet], tuple[Card, ...]]:
    """A whole deal around the hakem's first 5 cards (docs/rules/hokm.md "Dealing and trump"):
    the hands, and the undealt rest (three players: the kitty; two players: the piles'
    cards, pile A's first)."""
    cards = list(iter_cards(FULL_PACK & ~first_five))
    rng.shuffle(cards)
    hands = [0] * options.seats
    hands[hakem] = first_five
    position = 0
    for seat in range(options.seats):
        need = options.hand_size - (first_five.bit_count() if seat == hakem else 0)
        for card in cards[position:position + need]:
            hands[seat] |= 1 << card
        position += need
    return hands, tuple(cards[position:])



def plausible_world(knowledge: Knowledge, rng: random.Random, pool: int) -> World:
    """One of ``pool`` sampled deals, drawn in proportion to :func:`likelihood`
    (sampling-importance-resampling). Playouts then count every chosen deal equally:
    weighting the playouts themselves lets a handful of deals decide (the weights are very
    uneven; against greedy, 32 weighted deals a move won 0.60-0.64 of 80 matches where 32
    unweighted ones won 0.71); resampling spends the playouts on the deals the opponents'
    play makes likely instead."""
    if pool <= 1 or knowledge.seats == 2 or not knowledge.plays:
        return sample_world(knowledge, rng)
    worlds = [sample_world(knowledge, rng) for _ in range(pool)]
    weights = [likelihood(knowledge, world) for world in worlds]
    pick = rng.random() * sum(weights)
    for world, weight in zip(worlds, weights, strict=True):
        pick -= weight
        if pick < 0:
            return world
    return worlds[-1]
