"""The cores of a new meld holding a retrieved joker (internal, int-only).

A seat that has not opened may retrieve a table joker only once its opening has reached
the threshold (docs/rules/hand.md "Opening", "Joker retrieval"), so a retrieved joker
never counts towards the opening. A new meld holding one is laid in two steps: its
*core*, a valid meld of the seat's own cards laid with the opening (and counted in it),
then, after the retrieval, the rest laid off onto the core one card at a time, outwards
(docs/rules/hand.md "Laying off": a seat may lay off onto its own new melds). The core of
a run is a stretch of at least 3 consecutive positions (each card laid off after it then
extends an end); the core of a set, its naturals and some of its jokers (3 cards at
least). The core may be empty: the whole meld is then laid after the retrieval and
counts nothing.

Which jokers of the meld were retrieved does not matter to the search, only how many
of the core's jokers must be the seat's own (:func:`meld_cores` lists each count with
the best core): jokers are alike but for when they reach the hand.

Faces and positions as in :mod:`engine.hand._search`: a meld's faces are its naturals
then the faces its jokers stand for; run positions 0 the low ace, rank+1, 13 the high ace.

.. warning:: internal: inputs are trusted, nothing is validated here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

_RANKS: Final = 13
_ACE: Final = 12
_KING: Final = 11
_HIGH: Final = 13
_MIN_MELD: Final = 3

Core = tuple[int, int, int]
"""``(mask, jokers, value)``: the faces in the core (bit ``i`` for ``faces[i]``), how many
of them are jokers, and the core's opening value (0 for the empty core)."""


@lru_cache(maxsize=4096)
def meld_cores(
    faces: tuple[int, ...], jokers: int, ace_low_value: int, required: int, joker_required: bool
) -> tuple[Core, ...]:
    """The cores worth considering of the new meld of ``faces`` (its last ``jokers`` faces
    stood for by jokers), the most valuable first: for each number of jokers a core may
    hold, the most valuable core holding that many, unless one holding fewer jokers is
    worth as much (the empty core included). A card laid off onto the core is in no new
    meld, so a core that is not empty holds ``required`` when it is >= 0 (a natural face
    that must end in a new meld: the taken discard), and a joker when ``joker_required``
    (the taken discard is a joker, and this meld holds it).

    >>> from engine.core.cards import parse_card
    >>> five, six, seven, eight = (parse_card(t) for t in ("5♠", "6♠", "7♠", "8♠"))
    >>> meld_cores((five, six, seven, eight), 1, 1, -1, False)  # 5♠ 6♠ 7♠, then JK=8♠
    ((15, 1, 26), (7, 0, 18))
    >>> meld_cores((five, seven, six), 1, 1, -1, False)  # 5♠ JK=6♠ 7♠: the joker or nothing
    ((7, 1, 18), (0, 0, 0))
    """
    count = len(faces)
    joker_bits = ((1 << jokers) - 1) << (count - jokers)
    ranks = {face % _RANKS for face in faces}
    best: dict[int, tuple[int, int]] = {0: (0, 0)}  # core jokers -> (value, mask)

    def offer(mask: int, value: int) -> None:
        held = (mask & joker_bits).bit_count()
        if required >= 0 and not mask >> faces.index(required) & 1:
            return
        if joker_required and not held:
            return
        if held not in best or value > best[held][0]:
            best[held] = (value, mask)

    if len(ranks) == 1:  # a set: its naturals and some of its jokers
        value = min(faces[0] % _RANKS + 2, 10) if faces[0] % _RANKS != _ACE else 11
        naturals = count - jokers
        for held in range(jokers + 1):
            if naturals + held >= _MIN_MELD:
                offer((1 << (naturals + held)) - 1, (naturals + held) * value)
    else:  # a run: a stretch of 3 positions or more, with 2 naturals at least
        # validate_meld reads the ace low only when the high ace does not fit (2…K + A)
        low_ace = _ACE in ranks and 0 in ranks and _KING not in ranks
        order = sorted(range(count), key=lambda i: _position(faces[i] % _RANKS, low_ace))
        for start in range(count):
            mask = value = 0
            for end in range(start, count):
                index = order[end]
                mask |= 1 << index
                rank = faces[index] % _RANKS
                value += (ace_low_value if low_ace else 11) if rank == _ACE else min(rank + 2, 10)
                size = end - start + 1
                if size >= _MIN_MELD and size - (mask & joker_bits).bit_count() >= 2:
                    offer(mask, value)
    cores: list[Core] = []
    for held in sorted(best):
        value, mask = best[held]
        if all(value > kept for _mask, _held, kept in cores):
            cores.append((mask, held, value))
    return tuple(sorted(cores, key=lambda core: -core[2]))


def _position(rank: int, low_ace: bool) -> int:
    if rank == _ACE:
        return 0 if low_ace else _HIGH
    return rank + 1
