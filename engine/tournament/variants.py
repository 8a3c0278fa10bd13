"""The :class:`~engine.tournament.model.VariantSpec` of the games the project serves.

These are data, not code paths: the engine reads only the spec's numbers (seats, sides,
whether points count down, whether tricks count). A new game needs a spec, nothing else.
"""

from __future__ import annotations

from engine.tournament.model import VariantSpec

_PARTNERS_OPPOSITE = ((0, 2), (1, 3))
"""Four seats in two partnerships sitting opposite each other (Hokm; Hand with
partnerships)."""


def _singles(seats: int) -> tuple[tuple[int, ...], ...]:
    return tuple((seat,) for seat in range(seats))


def hokm_spec(seats: int = 4) -> VariantSpec:
    """Hokm with 4 (two partnerships), 3 or 2 players; points are the match score, tricks
    count.

    :raises ValueError: for another number of seats.
    """
    if seats not in (2, 3, 4):
        raise ValueError(f"Hokm is played by 2, 3 or 4 players, not {seats}")
    sides = _PARTNERS_OPPOSITE if seats == 4 else _singles(seats)
    return VariantSpec(game="hokm", seats=seats, sides=sides)


def hand_spec(seats: int = 4, *, partnerships: bool = False) -> VariantSpec:
    """Hand with 2–4 players, each for themselves or (4 players) in two partnerships;
    points are penalties (the lowest total wins), tricks do not exist.

    :raises ValueError: for another number of seats, or partnerships without 4 players.
    """
    if seats not in (2, 3, 4):
        raise ValueError(f"Hand is played by 2, 3 or 4 players, not {seats}")
    if partnerships and seats != 4:
        raise ValueError("Hand partnerships need 4 players")
    sides = _PARTNERS_OPPOSITE if partnerships else _singles(seats)
    return VariantSpec(
        game="hand", seats=seats, sides=sides, lower_points_win=True, has_tricks=False
    )
