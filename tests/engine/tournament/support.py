"""Helpers of the tournament engine's tests: a registered field, results by hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.tournament import (
    ReportResult,
    SideResult,
    Start,
    Table,
    TournamentOptions,
    TournamentState,
    VariantSpec,
    hokm_spec,
)
from engine.tournament.sim import TournamentRun

SEED = bytes(range(32))


def make_run(
    entrants: int,
    *,
    variant: VariantSpec | None = None,
    ratings: Sequence[int] = (),
    seed: bytes = SEED,
    start: bool = True,
    **options: Any,
) -> TournamentRun:
    """A tournament of ``entrants`` registered entrants (``e0``…), started unless told not."""
    run = TournamentRun(
        "t", TournamentOptions(variant=variant or hokm_spec(4), **options), seed, at_ms=1000
    )
    run.register_field(entrants, ratings=ratings)
    if start:
        run.apply(Start(at_ms=2000))
    return run


def side_of(table: Table, entrant_id: str) -> int:
    """The side ``entrant_id`` plays on at ``table``."""
    for seat in table.seats:
        if seat.entrant_id == entrant_id:
            return seat.side
    raise AssertionError(f"{entrant_id} is not at table {table.table}")


def result(
    state: TournamentState,
    table: Table,
    winners: Sequence[int],
    *,
    points: Sequence[int] | None = None,
    tricks: Sequence[int] | None = None,
    timed_out: bool = False,
    at_ms: int = 3000,
) -> ReportResult:
    """A result for ``table``: ``points``/``tricks`` per side (winners 7 and 13 by default,
    others 3 and 0; tricks 0 when the game counts none)."""
    count = state.options.variant.side_count
    has_tricks = state.options.variant.has_tricks
    points = points or [7 if side in winners else 3 for side in range(count)]
    if tricks is None:
        tricks = [13 if side in winners and has_tricks else 0 for side in range(count)]
    return ReportResult(
        round=state.round,
        table=table.table,
        sides=tuple(SideResult(p, t) for p, t in zip(points, tricks, strict=True)),
        winners=() if timed_out else tuple(winners),
        timed_out=timed_out,
        at_ms=at_ms,
    )


def play_round(run: TournamentRun, winner: Callable[[Table], int]) -> None:
    """Report every table of the current round, ``winner(table)`` winning alone."""
    state = run.state
    for table in state.tables:
        run.apply(result(run.state, table, [winner(table)]))


def best_seed_wins(run: TournamentRun) -> Callable[[Table], int]:
    """A winner rule: the side holding the entrant seeded best."""
    order = {entrant: index for index, entrant in enumerate(run.state.seed_order)}

    def winner(table: Table) -> int:
        best = min(table.entrants, key=order.__getitem__)
        return side_of(table, best)

    return winner

