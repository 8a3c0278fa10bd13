"""The ``basic`` Hokm bot: the "Strategy hints" of docs/rules/hokm.md over a view.

A pure policy ``(view, rng) -> HokmCommand`` reading only the seat's
:class:`~dast.v1.hokm_pb2.HokmView` (its hand, this round's tricks, the trick on the table):

- trump by count: as hakem declare the suit held most ("count matters more than height");
- cash side aces early, and lead a side card no unseen card can beat (a *master*);
- play low when the partner is already winning the trick;
- count trumps: the trumps not yet seen are ``13 - played - held``; while some are out and
  we hold more than they do, draw them with a high trump first; a side master is led
  unless an opponent has shown a void in its suit and trumps are still out;
- otherwise win as cheaply as possible, else throw the lowest card (side suits first).

Deterministic: ``rng`` is unused (the policy signature keeps it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dast.v1 import hokm_pb2
from engine.core.cards import RANKS_PER_SUIT, Card, Rank
from engine.core.rng import DeterministicRandom
from engine.hokm import _core
from engine.hokm.rules import SET_ASIDE_COUNT

SUITS = 4


def _suit(card: Card) -> int:
    return card // RANKS_PER_SUIT


def _rank(card: Card) -> int:
    return card % RANKS_PER_SUIT


def _play(card: Card) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))


def _cheapness(card: Card, trump: int) -> tuple[bool, int, int]:
    """Sort key: side suits before trumps, then low ranks."""
    return (_suit(card) == trump, _rank(card), card)


def seen_cards(view: hokm_pb2.HokmView) -> set[Card]:
    """Cards played this round (finished tricks and the trick on the table).

    >>> view = hokm_pb2.HokmView(current_trick=hokm_pb2.Trick(plays=[
    ...     hokm_pb2.SeatCard(seat=1, card=12)]))
    >>> sorted(seen_cards(view))
    [12]
    """
    tricks: Iterable[hokm_pb2.Trick] = [*view.tricks, view.current_trick]
    return {play.card for trick in tricks for play in trick.plays}


def trumps_out(view: hokm_pb2.HokmView, trump: int) -> int:
    """Trumps neither played this round nor in this hand (held by others or unseen).

    >>> trumps_out(hokm_pb2.HokmView(hand=[0, 1]), 0)
    11
    """
    known = seen_cards(view) | set(view.hand)
    return RANKS_PER_SUIT - sum(1 for card in known if _suit(card) == trump)


def is_master(card: Card, view: hokm_pb2.HokmView) -> bool:
    """No card of ``card``'s suit that could still be played ranks above it.

    >>> is_master(12, hokm_pb2.HokmView(hand=[12]))  # the ace of spades
    True
    """
    known = seen_cards(view) | set(view.hand)
    higher = range(card + 1, _suit(card) * RANKS_PER_SUIT + RANKS_PER_SUIT)
    return all(other in known for other in higher)


def void_suits(view: hokm_pb2.HokmView) -> dict[int, set[int]]:
    """The suits each seat is known to lack this round: it did not follow them when led.

    >>> trick = hokm_pb2.Trick(leader=0, plays=[hokm_pb2.SeatCard(seat=0, card=0),
    ...                                         hokm_pb2.SeatCard(seat=1, card=13)])
    >>> void_suits(hokm_pb2.HokmView(tricks=[trick]))
    {1: {0}}
    """
    voids: dict[int, set[int]] = {}
    tricks: Iterable[hokm_pb2.Trick] = [*view.tricks, view.current_trick]
    for trick in tricks:
        if not trick.plays:
            continue
        led = _suit(trick.plays[0].card)
        for play in trick.plays[1:]:
            if _suit(play.card) != led:
                voids.setdefault(play.seat, set()).add(led)
    return voids


def _opponents(view: hokm_pb2.HokmView) -> list[int]:
    seats = len(view.hand_counts)
    if seats == 4:
        return [(view.seat + 1) % 4, (view.seat + 3) % 4]
    return [s for s in range(seats) if s != view.seat]


def _may_be_cut(card: Card, view: hokm_pb2.HokmView, trump: int) -> bool:
    """An opponent known to lack ``card``'s suit may still hold a trump to cut it with."""
    if trumps_out(view, trump) == 0:
        return False
    voids = void_suits(view)
    return any(_suit(card) in voids.get(seat, set()) and trump not in voids.get(seat, set())
               for seat in _opponents(view))


def declare_suit(hand: Sequence[Card]) -> int:
    """The suit held most (ties: higher total rank, then the lower suit number).

    >>> declare_suit([0, 1, 2, 25, 51])  # three spades
    0
    """
    def strength(suit: int) -> tuple[int, int, int]:
        ranks = [_rank(c) for c in hand if _suit(c) == suit]
        return (len(ranks), sum(ranks), -suit)

    return max(range(SUITS), key=strength)


def _lead(view: hokm_pb2.HokmView, cards: list[Card], trump: int) -> Card:
    side = [c for c in cards if _suit(c) != trump]
    aces = [c for c in side if _rank(c) == Rank.ACE]
    if aces:
        return aces[0]  # "cash non-trump aces early, before the suit can be cut"
    out = trumps_out(view, trump)
    trumps = sorted((c for c in cards if _suit(c) == trump), reverse=True)
    if out and len(trumps) > out and is_master(trumps[0], view):
        return trumps[0]  # count trumps: we hold more than are out, draw them
    # A master is worth leading unless an opponent has shown it can cut that suit.
    masters = [c for c in side if is_master(c, view) and not _may_be_cut(c, view, trump)]
    if masters:
        return max(masters, key=_rank)
    if side:
        # Lead low from the longest side suit: it keeps honours and may exhaust others.
        length = {s: sum(1 for c in side if _suit(c) == s) for s in range(SUITS)}
        return min(side, key=lambda c: (-length[_suit(c)], _rank(c)))
    return min(cards, key=lambda c: _cheapness(c, trump))


def _follow(view: hokm_pb2.HokmView, cards: list[Card], trump: int) -> Card:
    plays = view.current_trick.plays
    on_table = [play.card for play in plays]
    winning_seat = plays[_core.winning_index(on_table, trump)].seat
    lowest = min(cards, key=lambda c: _cheapness(c, trump))
    seats = len(view.hand_counts)
    if seats == 4 and (winning_seat - view.seat) % 2 == 0:
        return lowest  # "when your partner is already winning the trick, play your lowest"
    winners = [c for c in cards if _core.winning_index([*on_table, c], trump) == len(on_table)]
    if not winners:
        return lowest
    last_to_play = len(on_table) == seats - 1
    if not last_to_play:
        # Others still play: prefer a card nobody can beat, if cheap enough to be worth it.
        safe = [c for c in winners if is_master(c, view) and (
            _suit(c) == trump or trumps_out(view, trump) == 0 or _suit(c) == _suit(on_table[0])
        )]
        if safe:
            return min(safe, key=lambda c: _cheapness(c, trump))
    return min(winners, key=lambda c: _cheapness(c, trump))


def basic_policy(view: hokm_pb2.HokmView, rng: DeterministicRandom) -> hokm_pb2.HokmCommand:
    """The ``basic`` bot's command for the seat of ``view`` (see the module docstring).

    :raises ValueError: if the view offers no legal command.
    """
    if not view.legal:
        raise ValueError("the seat has nothing to do")
    trump = view.trump - 1
    if view.phase == hokm_pb2.HOKM_PHASE_DECLARE_TRUMP:
        suit = declare_suit(view.hand)
        return hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=suit + 1))  # type: ignore[arg-type]
    if view.phase == hokm_pb2.HOKM_PHASE_SET_ASIDE:
        aside = sorted(view.hand, key=lambda c: _cheapness(c, trump))[:SET_ASIDE_COUNT]
        return hokm_pb2.HokmCommand(set_aside_cards=hokm_pb2.SetAsideCards(cards=sorted(aside)))
    if view.phase == hokm_pb2.HOKM_PHASE_TAKE_PILE:
        value_a = _core.pile_value(view.top_a, trump)
        pile = 0 if value_a >= _core.pile_value(view.top_b, trump) else 1
        return hokm_pb2.HokmCommand(take_pile_card=hokm_pb2.TakePileCard(pile=pile))
    cards = [command.play_card.card for command in view.legal if command.HasField("play_card")]
    if not cards:
        return view.legal[0]
    if not view.current_trick.plays:
        return _play(_lead(view, cards, trump))
    return _play(_follow(view, cards, trump))
