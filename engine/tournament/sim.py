"""Play tournaments without games: a log holder and seeded random results.

:class:`TournamentRun` keeps a log and its state together (decide, then evolve, then
append), as a service does; :func:`random_result` invents a plausible result for a table
from a :class:`~engine.core.rng.DeterministicRandom`, and :func:`play_out` plays every
round to the end with such results. Tests, benches and simulations use them; nothing in
the engine depends on them.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.rng import DeterministicRandom
from engine.tournament.decide import create, decide
from engine.tournament.evolve import evolve
from engine.tournament.model import (
    DEFAULT_RATING,
    Command,
    Entry,
    Event,
    Phase,
    Register,
    ReportResult,
    SideResult,
    Start,
    Table,
    TournamentOptions,
    TournamentState,
)


class TournamentRun:
    """A tournament's log and state, advanced command by command."""

    __slots__ = ("events", "state")

    def __init__(
        self, tournament_id: str, options: TournamentOptions, seed: bytes, *, at_ms: int = 0
    ) -> None:
        self.events: list[Event] = create(tournament_id, options, seed, at_ms=at_ms)
        self.state: TournamentState = evolve(None, self.events[0])

    def apply(self, command: Command) -> list[Event]:
        """Decide ``command``, apply and append its events, and return them.

        :raises RuleViolation: as :func:`engine.tournament.decide` does (nothing changes).
        """
        events = decide(self.state, command)
        state = self.state
        for event in events:
            state = evolve(state, event)
        self.state = state
        self.events.extend(events)
        return events

    def register_field(self, count: int, *, ratings: Sequence[int] = ()) -> None:
        """Register ``count`` entrants ``e0``, ``e1``, … whose players are ``e<i>p<j>``
        (ratings from ``ratings`` when given, else the default)."""
        options = self.state.options
        members = options.variant.side_size if options.entry is Entry.PAIRS else 1
        for index in range(count):
            command = Register(
                entrant_id=f"e{index}",
                members=tuple(f"e{index}p{j}" for j in range(members)),
                rating=ratings[index] if ratings else DEFAULT_RATING,
            )
            self.apply(command)


def random_result(
    state: TournamentState, table: Table, rng: DeterministicRandom, *, at_ms: int = 0
) -> ReportResult:
    """A finished match at ``table``: one side (drawn) reaches the target, the others score
    less; tricks are drawn when the game counts them. A penalty game's winner scores least.
    """
    variant = state.options.variant
    target = state.options.table_target_score or 7
    count = variant.side_count
    winner = rng.randbelow(count)
    sides: list[SideResult] = []
    for side in range(count):
        if variant.lower_points_win:
            points = rng.randbelow(target) if side == winner else target + rng.randbelow(100)
        else:
            points = target if side == winner else rng.randbelow(target)
        tricks = rng.randbelow(13) + (13 if side == winner else 0) if variant.has_tricks else 0
        sides.append(SideResult(points=points, tricks=tricks))
    return ReportResult(
        round=state.round, table=table.table, sides=tuple(sides), winners=(winner,), at_ms=at_ms
    )


def play_out(run: TournamentRun, rng: DeterministicRandom, *, at_ms: int = 0) -> None:
    """Start the tournament if needed and report random results until it ends."""
    if run.state.phase is Phase.REGISTRATION:
        run.apply(Start(at_ms=at_ms))
    while run.state.phase is Phase.RUNNING:
        state = run.state
        pending = [table for table in state.tables if table.table not in state.results]
        for table in pending:
            run.apply(random_result(run.state, table, rng, at_ms=at_ms))
