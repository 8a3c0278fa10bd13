"""Cheap necessary conditions for melding, over masks (internal, int-only).

The exact solver (:mod:`engine.hand.solver`) answers every question about melds, at a
few hundred microseconds a hand; ``legal`` and ``decide`` ask it several times a turn.
Most hands a random or early turn holds cannot open or go out at all, and a bound read
off the hand's face mask in a few microseconds says so first:

- a natural card can be in a meld only if it is *alive*: its rank in at least 3 suits of
  the hand (2 with a joker), or its suit holds a window of 3 consecutive run positions
  around it with 3 naturals (2 with a joker; with two jokers allowed in a meld, also two
  naturals 3 positions apart);
- an opening totals at most the opening values of the alive naturals (an ace 11) plus 11
  per joker, and a "hand" leaves at most one card that is not alive.

Run positions as in :mod:`engine.hand._search`: 0 the low ace, rank+1, 13 the high ace.

.. warning:: internal: inputs are trusted, nothing is validated here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, NamedTuple

from engine.core.cards import PACK_SIZE, RANKS_PER_SUIT, SUITS, CardSet

FACES_MASK: Final = (1 << PACK_SIZE) - 1
_SUIT_BITS: Final = (1 << RANKS_PER_SUIT) - 1
_ACE: Final = RANKS_PER_SUIT - 1
_JOKER_SHIFT: Final = 2 * PACK_SIZE
_RANK_MASKS: Final = tuple(
    sum(1 << (suit * RANKS_PER_SUIT + rank) for suit in range(SUITS))
    for rank in range(RANKS_PER_SUIT)
)
_VALUES: Final = tuple(
    11 if face % RANKS_PER_SUIT == _ACE else min(face % RANKS_PER_SUIT + 2, 10)
    for face in range(PACK_SIZE)
)
"""A face's highest opening value (the ace 11)."""
MAX_JOKER_VALUE: Final = 11


def faces_of(hand: CardSet) -> int:
    """The faces of ``hand``'s naturals as a 52-bit mask (both packs folded together)."""
    return (hand | hand >> PACK_SIZE) & FACES_MASK


def _partner_faces(face: int) -> int:
    suit, rank = divmod(face, RANKS_PER_SUIT)
    mask = 0
    for other in range(PACK_SIZE):
        other_suit, other_rank = divmod(other, RANKS_PER_SUIT)
        if other == face:
            continue
        low = min(abs(_low(other_rank) - _low(rank)), abs(other_rank - rank)) <= 2
        if other_rank == rank or (other_suit == suit and low):
            mask |= 1 << other
    return mask


def _low(rank: int) -> int:
    """The rank with the ace below the 2 (for distances in A-2-3)."""
    return -1 if rank == _ACE else rank


PARTNERS: Final = tuple(_partner_faces(face) for face in range(PACK_SIZE))
"""For each face, the faces that may share a meld with it (its rank in the other suits,
its suit at most two ranks away, the ace counted high and low)."""


def has_partner(hand: CardSet, face: int) -> bool:
    """A necessary condition for ``face`` to join a meld with cards of ``hand``: a joker,
    or a natural of :data:`PARTNERS`."""
    return bool(hand >> _JOKER_SHIFT) or bool(faces_of(hand) & PARTNERS[face])


def _suit_live(bits: int, jokers: int, max_jokers: int) -> int:
    """The ranks (13-bit mask) of a suit's naturals ``bits`` that could be in a run."""
    at = bits << 1 | bits >> _ACE  # positions: the ace at 0 and 13
    three = at & at >> 1 & at >> 2
    live = three | three << 1 | three << 2
    if jokers:
        next_to = at & at >> 1
        one_apart = at & at >> 2
        live |= next_to | next_to << 1 | one_apart | one_apart << 2
        if jokers >= 2 and max_jokers >= 2:
            two_apart = at & at >> 3
            live |= two_apart | two_apart << 3
    live &= at
    return (live >> 1 | (live & 1) << _ACE) & _SUIT_BITS


_RUN_LIVE: Final = tuple(
    tuple(_suit_live(bits, jokers, 2) for bits in range(1 << RANKS_PER_SUIT))
    for jokers in range(3)
)
"""The run-alive ranks of every suit mask: indexed by 0 (no joker), 1 (a joker) or 2 (two
jokers and melds taking two), then by the suit's 13-bit mask (read, not recomputed, in the
hot path)."""


def alive_faces(hand: CardSet, max_jokers: int, *, use_jokers: bool = True) -> int:
    """The faces of ``hand``'s naturals that could be in a meld of ``hand`` (see the
    module docs), as a 52-bit mask; with ``use_jokers`` false, in a meld of naturals."""
    jokers = (hand >> _JOKER_SHIFT).bit_count() if use_jokers else 0
    return alive_of_faces(faces_of(hand), jokers, max_jokers)


def alive_of_faces(faces: int, jokers: int, max_jokers: int) -> int:
    """:func:`alive_faces` of a hand given as its faces (52-bit mask) and its number of
    jokers (the exact search keeps both as they are, node after node)."""
    # Sets, all ranks at once: a rank is alive when 3 of its suits are held (2 and a joker).
    a = faces & _SUIT_BITS
    b = faces >> RANKS_PER_SUIT & _SUIT_BITS
    c = faces >> 2 * RANKS_PER_SUIT & _SUIT_BITS
    d = faces >> 3 * RANKS_PER_SUIT
    ranks = (
        a & (b | c | d) | b & (c | d) | c & d  # in two suits at least
        if jokers
        else a & b & (c | d) | (a | b) & c & d  # in three
    )
    table = _RUN_LIVE[0 if not jokers else 1 if jokers == 1 or max_jokers < 2 else 2]
    return (
        (ranks | table[a])
        | (ranks | table[b]) << RANKS_PER_SUIT
        | (ranks | table[c]) << 2 * RANKS_PER_SUIT
        | (ranks | table[d]) << 3 * RANKS_PER_SUIT
    ) & faces


class Reach(NamedTuple):
    """What :func:`reach` reads off a hand."""

    alive: int
    """The alive faces (52-bit mask)."""
    opening_bound: int
    """No opening of the hand totals more."""
    dead: int
    """Natural cards of the hand that are not alive (they stay in hand whatever happens)."""


@lru_cache(maxsize=1024)
def reach(hand: CardSet, max_jokers: int, ace_low_value: int = 1) -> Reach:
    """The alive faces of ``hand``, a bound on its openings (``ace_low_value``: the
    option, should it exceed an ace's 11), and its dead cards.

    With one joker per meld the bound is tighter: a natural alive only thanks to a joker
    sits in a meld with that joker, and such a meld holds at most 4 of them (2 on each
    side of the joker in a run: 3 in a row would need no joker; 2 of a rank in a set).
    With a single joker, they all sit in its one meld: those of one suit within 2
    positions of the joker, or those of one rank (:func:`_one_joker_meld`).
    """
    faces = faces_of(hand)
    jokers = (hand >> _JOKER_SHIFT).bit_count()
    alive = alive_of_faces(faces, jokers, max_jokers)
    twins = hand & hand >> PACK_SIZE & FACES_MASK
    top = max(MAX_JOKER_VALUE, ace_low_value)
    bound = jokers * top + opening_value(alive, twins, top)
    if jokers and max_jokers == 1:
        sure = alive_of_faces(faces, 0, max_jokers)
        by_joker = alive & ~sure
        if jokers == 1 and by_joker:  # never above the bound of 4 per joker below
            tight = opening_value(sure, twins, top) + _one_joker_meld(by_joker, top) + top
            bound = min(bound, tight)
        # At most 4 per joker count: with fewer, all of them count and the bound stands.
        elif by_joker.bit_count() + (by_joker & twins).bit_count() > 4 * jokers:
            values = sorted(_values_of(by_joker, twins, top), reverse=True)
            tight = opening_value(sure, twins, top) + sum(values[: 4 * jokers]) + jokers * top
            bound = min(bound, tight)
    naturals = (hand & ((1 << _JOKER_SHIFT) - 1)).bit_count()
    alive_cards = alive.bit_count() + (twins & alive).bit_count()
    return Reach(alive, bound, naturals - alive_cards)


def one_joker_bound(faces: int, twins: int, alive: int, ace: int) -> int:
    """A bound on the openings of naturals ``faces`` (``twins`` held twice, ``alive`` as
    :func:`alive_of_faces` reads them with one joker) and a single joker, with one joker
    a meld: those alive without the joker, the most that the joker's meld takes of the
    others, and the joker (an ace and the joker counting ``ace``)."""
    sure = alive_of_faces(faces, 0, 1)
    return opening_value(sure, twins & sure, ace) + _one_joker_meld(alive & ~sure, ace) + ace


def _one_joker_meld(by_joker: int, ace: int) -> int:
    """The most opening value of the naturals ``by_joker`` (52-bit faces, alive only
    thanks to a joker) that one meld holding the hand's single joker can take, an ace
    counting ``ace``: in a run, one more than 2 positions away from the joker would make
    3 in a row of naturals with its neighbours there (alive without the joker), so a
    window of 5 positions of one suit bounds it; in a set, those of one rank (each face
    once in a meld)."""
    a = by_joker & _SUIT_BITS
    b = by_joker >> RANKS_PER_SUIT & _SUIT_BITS
    c = by_joker >> 2 * RANKS_PER_SUIT & _SUIT_BITS
    d = by_joker >> 3 * RANKS_PER_SUIT
    best = max(_joker_run(a, ace), _joker_run(b, ace), _joker_run(c, ace), _joker_run(d, ace))
    # A rank held in one suit only is in a window already: only those in 2 or more count.
    shared = a & (b | c | d) | b & (c | d) | c & d
    while shared:
        low = shared & -shared
        rank = low.bit_length() - 1
        held = (a >> rank & 1) + (b >> rank & 1) + (c >> rank & 1) + (d >> rank & 1)
        best = max(best, held * (ace if rank == _ACE else _VALUES[rank]))
        shared ^= low
    return best


@lru_cache(maxsize=4096)
def _joker_run(bits: int, ace: int) -> int:
    """The most opening value of one suit's naturals (13-bit ``bits``) within 2 run
    positions of a joker (the joker's own position excluded), an ace counting ``ace``."""
    values = [0] * (_ACE + 2)  # by run position: the ace at 0 and 13
    for rank in range(RANKS_PER_SUIT):
        if bits >> rank & 1:
            if rank == _ACE:
                values[0] = values[_ACE + 1] = ace
            else:
                values[rank + 1] = _VALUES[rank]
    return max(
        sum(values[max(0, joker - 2) : joker + 3]) - values[joker] for joker in range(_ACE + 2)
    )


def _values_of(faces: int, twins: int, ace: int) -> list[int]:
    """The opening values of the cards of ``faces`` (each face once, or twice when in
    ``twins``), an ace counting ``ace``."""
    values = []
    while faces:
        low = faces & -faces
        face = low.bit_length() - 1
        value = ace if face % RANKS_PER_SUIT == _ACE else _VALUES[face]
        values.append(value)
        if twins & low:
            values.append(value)
        faces ^= low
    return values


def _suit_values() -> tuple[int, ...]:
    values = [0] * (1 << RANKS_PER_SUIT)
    for bits in range(1, 1 << RANKS_PER_SUIT):  # a mask's value: its lowest rank's + the rest's
        low = bits & -bits
        values[bits] = _VALUES[low.bit_length() - 1] + values[bits ^ low]
    return tuple(values)


_SUIT_VALUES: Final = _suit_values()
"""The opening values (the ace 11) of every suit mask's ranks, summed."""
_ACES: Final = _RANK_MASKS[_ACE]


def opening_value(faces: int, twins: int, ace: int) -> int:
    """The opening values of the cards of ``faces`` (each face once, or twice when in
    ``twins``), an ace counting ``ace``; read off per-suit tables."""
    total = 0
    for mask in (faces, faces & twins):
        total += (
            _SUIT_VALUES[mask & _SUIT_BITS]
            + _SUIT_VALUES[mask >> RANKS_PER_SUIT & _SUIT_BITS]
            + _SUIT_VALUES[mask >> 2 * RANKS_PER_SUIT & _SUIT_BITS]
            + _SUIT_VALUES[mask >> 3 * RANKS_PER_SUIT]
        )
        if ace != MAX_JOKER_VALUE:
            total += (ace - MAX_JOKER_VALUE) * (mask & _ACES).bit_count()
    return total
