"""What a ``dast arena`` run is made of: its setup, and the results of its sets and matches
(shared by the run, :mod:`services.cli.arena`, and its journal,
:mod:`services.cli.arena_journal`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ArenaSetup:
    """What every set of a run shares (picklable, for ``--jobs``)."""

    game: str
    rules: bytes
    """The serialized rules proto."""
    seats: int
    level_a: str
    level_b: str
    budget_ms: float
    samples: int
    seed: int


@dataclass
class MatchResult:
    """One match of a set."""

    seating: tuple[str, ...]
    a_won: bool
    b_won: bool
    a_points: float
    """Mean final score (Hokm) or penalty total (Hand) of A's seats."""
    b_points: float


@dataclass
class SetResult:
    """One deal played in every seating."""

    index: int
    matches: list[MatchResult]
    decision_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per side (``a``, ``b``), milliseconds of every decision."""
