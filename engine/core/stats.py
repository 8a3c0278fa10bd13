"""What a game counts for players' statistics, read from its events.

The stats service (``services/stats``) knows no game: each game that offers statistics has a
module ``<its package>.stats`` (``engine/<game>/stats.py``) exposing ``STATS``, an object
implementing :class:`GameStats`. :func:`stats_of` finds it for a registered game. Everything
here is a pure function of events, so the service can fold them one at a time and a replay
of the log gives the same figures.

- :meth:`GameStats.frame` reads a match's first event: the variant (a short stable name
  such as ``4p``), the player of every seat, and the teams the match is rated by.
- :meth:`GameStats.tally` reads one of the game's own events (never a seat-control event)
  and says which seat's command caused it (a move; the seat of the game's ``command_for``),
  which counters of which seats it adds to, and, for the final event, the result: the
  winning seats and every team's rank. It is called for every event, so a move returns a
  shared :class:`Tally` (:func:`move_by`) rather than a new one.
- :attr:`GameStats.LAYOUT` names the game's counters and the means shown from them (a mean
  is a total counter divided by a count counter).

Counters are plain non-negative or signed integers that only ever add up, so a projection
is a sum over events and an independent recomputation is easy to write.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final, Protocol

from dast.v1 import common_pb2, log_pb2


@dataclass(frozen=True, slots=True)
class Mean:
    """A figure shown as ``total / count`` of two counters (0 when ``count`` is 0)."""

    name: str
    total: str
    count: str


@dataclass(frozen=True, slots=True)
class StatsLayout:
    """The counters a game keeps per player and the means computed from them."""

    counters: tuple[str, ...]
    means: tuple[Mean, ...] = ()

    def __post_init__(self) -> None:
        known = set(self.counters)
        if len(known) != len(self.counters):
            raise ValueError(f"duplicate counter names in {self.counters}")
        for mean in self.means:
            if mean.total not in known or mean.count not in known:
                raise ValueError(f"mean {mean.name!r} names an unknown counter")


@dataclass(frozen=True, slots=True)
class MatchFrame:
    """What a match's first event says about who plays it and how it is rated."""

    variant: str
    """A short, stable name of the variant (leaderboards and ratings are per variant)."""
    players: tuple[common_pb2.Player, ...]
    """The player of every seat, in seat order."""
    teams: tuple[tuple[int, ...], ...]
    """The seats of every team the match is rated by (a seat alone when it plays alone)."""


@dataclass(frozen=True, slots=True)
class MatchResult:
    """How a match ended."""

    winners: frozenset[int]
    """The seats that won."""
    team_ranks: tuple[int, ...]
    """Per team of :attr:`MatchFrame.teams`: 0 for the best, equal ranks for a tie."""


@dataclass(frozen=True, slots=True)
class Tally:
    """What one event adds: the seat whose move it is, ``(seat, counter, amount)`` triples,
    and the result if it is the final event."""

    mover: int | None = None
    counts: tuple[tuple[int, str, int], ...] = ()
    result: MatchResult | None = None


_MOVES: Final = tuple(Tally(mover=seat) for seat in range(16))


def move_by(seat: int) -> Tally:
    """The tally of a move of ``seat`` that adds to no counter (shared, not copied)."""
    return _MOVES[seat] if 0 <= seat < len(_MOVES) else Tally(mover=seat)


class GameStats(Protocol):
    """The statistics of one game (``engine/<game>/stats.py`` exposes one as ``STATS``)."""

    LAYOUT: StatsLayout

    def frame(self, first_event: log_pb2.Event) -> MatchFrame:
        """The frame of a match from its first event.

        :raises ValueError: if the event is not the game's first event.
        """
        ...

    def tally(self, frame: MatchFrame, event: log_pb2.Event) -> Tally | None:
        """What the game's ``event`` adds (None: nothing, and no move). ``mover`` is the
        seat of the game's ``command_for(event)``, read without building the command."""
        ...


PARTNERS: Final = ((0, 2), (1, 3))
"""The two partnerships of a four-seat partnership game: partners sit opposite."""


def seat_teams(seats: int, *, partners: bool) -> tuple[tuple[int, ...], ...]:
    """The teams of a match of ``seats`` seats: :data:`PARTNERS` when four seats play in
    partnerships, else every seat alone.

    >>> seat_teams(4, partners=True), seat_teams(3, partners=False)
    (((0, 2), (1, 3)), ((0,), (1,), (2,)))
    """
    return PARTNERS if partners and seats == 4 else tuple((seat,) for seat in range(seats))


def ranks_by_score(scores: tuple[int, ...], *, higher_is_better: bool) -> tuple[int, ...]:
    """Competition ranks of ``scores`` (0 best; equal scores share a rank)."""
    return tuple(
        sum(1 for other in scores if (other > score if higher_is_better else other < score))
        for score in scores
    )


_FOUND: dict[str, GameStats | None] = {}


def stats_of(game: Any) -> GameStats | None:
    """The :class:`GameStats` of a registered game (its module's ``stats`` submodule's
    ``STATS``), or None for a game that keeps no statistics."""
    module = getattr(game, "game", game)  # a ControlledGame wraps the game's module
    package = getattr(module, "__name__", None)
    if not isinstance(package, str):
        return None
    if package not in _FOUND:
        name = f"{package}.stats"
        try:
            found = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name != name:
                raise
            _FOUND[package] = None
        else:
            _FOUND[package] = found.STATS
    return _FOUND[package]
