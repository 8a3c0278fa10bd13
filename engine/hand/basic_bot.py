"""The ``basic`` Hand bot: keep what is close to melds, open early, feed nobody.

A pure policy ``(view, rng) -> HandCommand`` over the seat's
:class:`~dast.v1.hand_pb2.HandView` only:

- take the discard whenever the rules let us (the view lists ``take_discard`` only when
  the card can be used), else draw;
- open as soon as allowed and keep melding: the lay-down that lays the most cards, then
  every lay-off and joker retrieval the view offers;
- discard the card furthest from a meld (no card of its rank, no neighbour of its suit),
  costliest first, never a joker while another card remains;
- do not feed the next player: from the public table (the melds laid, with their owners,
  and who has opened) avoid discarding a card the next seat could lay off once opened, or
  that extends that seat's own melds.

Deterministic: ``rng`` is unused (the policy signature keeps it).
"""

from __future__ import annotations

from collections.abc import Sequence

from dast.v1 import hand_pb2
from engine.core.cards import RANKS_PER_SUIT
from engine.core.rng import DeterministicRandom
from engine.hand.cards import is_joker, natural_of, penalty_value

_SET_MAX = 4


def _of_kind(legal: Sequence[hand_pb2.HandCommand], kind: str) -> list[hand_pb2.HandCommand]:
    return [command for command in legal if command.WhichOneof("kind") == kind]


def closeness(card: int, hand: Sequence[int]) -> int:
    """How many cards of ``hand`` could meld with ``card``: same rank in another suit, or
    the same suit within two ranks (jokers count for everything).

    >>> closeness(0, [1, 2, 13])  # 2♠ with 3♠, 4♠ and 2♥
    3
    """
    if is_joker(card):
        return len(hand)
    face = natural_of(card)
    suit, rank = divmod(face, RANKS_PER_SUIT)
    near = 0
    for other in hand:
        if other == card:
            continue
        if is_joker(other):
            near += 1
            continue
        other_suit, other_rank = divmod(natural_of(other), RANKS_PER_SUIT)
        same_rank = other_rank == rank and other_suit != suit
        neighbour = other_suit == suit and 0 < abs(other_rank - rank) <= 2
        near += same_rank or neighbour
    return near


def fits_meld(card: int, meld: hand_pb2.TableMeld) -> bool:
    """Whether ``card`` (natural) could extend the table meld: a set's rank in a suit it
    lacks, or a run's suit at either end (the ace on both sides).

    >>> run = hand_pb2.TableMeld(kind=hand_pb2.HAND_MELD_KIND_RUN, faces=[1, 2, 3])
    >>> fits_meld(4, run), fits_meld(0, run), fits_meld(13, run)
    (True, True, False)
    """
    if is_joker(card) or not meld.faces:
        return False
    face = natural_of(card)
    suit, rank = divmod(face, RANKS_PER_SUIT)
    if meld.kind == hand_pb2.HAND_MELD_KIND_SET:
        suits = {f // RANKS_PER_SUIT for f in meld.faces}
        return (rank == meld.faces[0] % RANKS_PER_SUIT and suit not in suits
                and len(meld.faces) < _SET_MAX)
    if suit != meld.faces[0] // RANKS_PER_SUIT:
        return False
    ranks = sorted(f % RANKS_PER_SUIT for f in meld.faces)
    ace = RANKS_PER_SUIT - 1
    low_end = ranks[0] - 1 if ranks[0] > 0 else ace  # A-2-3 runs take the ace below the 2
    return rank in (low_end, ranks[-1] + 1) and rank not in ranks


def _next_seat(view: hand_pb2.HandView) -> int:
    return (view.seat + 1) % max(len(view.hand_counts), 1)


def feeds_next(card: int, view: hand_pb2.HandView) -> bool:
    """Whether discarding ``card`` hands the next seat something it can use now: a lay-off
    onto any table meld once it has opened, or an extension of its own melds."""
    following = _next_seat(view)
    opened = following < len(view.opened) and view.opened[following]
    return any((opened or meld.owner == following) and fits_meld(card, meld) for meld in view.melds)


def _discard(view: hand_pb2.HandView, discards: list[hand_pb2.HandCommand]
             ) -> hand_pb2.HandCommand:
    hand = list(view.hand)
    penalty = view.rules.joker_penalty

    def keep_score(command: hand_pb2.HandCommand) -> tuple[bool, bool, int, int, int]:
        card = command.discard.card
        # Smallest first: not a joker, does not feed the next seat, far from melds, costly.
        return (is_joker(card), feeds_next(card, view), closeness(card, hand),
                -penalty_value(card, joker_penalty=penalty), card)

    return min(discards, key=keep_score)


def basic_policy(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
    """The ``basic`` bot's command for the seat of ``view`` (see the module docstring).

    :raises ValueError: if the view lists no legal command (the seat is not to act).
    """
    legal = list(view.legal)
    if not legal:
        raise ValueError("the seat has no legal command")
    for kind in ("take_discard", "draw_from_stock"):
        found = _of_kind(legal, kind)
        if found:
            return found[0]
    melds = _of_kind(legal, "lay_melds")
    if melds:
        return max(melds, key=lambda c: sum(len(m.cards) for m in c.lay_melds.melds))
    table = _of_kind(legal, "lay_off") + _of_kind(legal, "retrieve_joker")
    if table:
        return table[0]
    discards = _of_kind(legal, "discard")
    return _discard(view, discards) if discards else legal[0]
