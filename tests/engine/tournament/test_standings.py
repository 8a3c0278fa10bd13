"""Standings and tie-breaks: match points, then the options' tie-breaks in order (tricks,
points, opponents by default where tricks count), then the lot; shared wins; penalty games
rank the fewest points first; every line has its own rank."""

from __future__ import annotations

from engine.tournament import (
    Format,
    Record,
    TieBreak,
    TournamentOptions,
    hand_spec,
    hokm_spec,
    resolve_options,
)
from engine.tournament.standings import compute_standings

from .support import make_run, play_round, result

LOT = ("a", "b", "c", "d")


def _rank(options: TournamentOptions, records: dict[str, Record]) -> list[str]:
    standings = compute_standings(
        resolve_options(options), records, LOT, eliminated={}, withdrawn=frozenset()
    )
    assert [s.rank for s in standings] == list(range(1, len(LOT) + 1))
    return [s.entrant_id for s in standings]


def test_default_tie_breaks_with_tricks_are_tricks_points_opponents() -> None:
    assert resolve_options(TournamentOptions(variant=hokm_spec(4))).tie_breaks == (
        TieBreak.TRICKS,
        TieBreak.POINTS,
        TieBreak.OPPONENTS,
    )
    assert resolve_options(TournamentOptions(variant=hand_spec(3))).tie_breaks == (
        TieBreak.POINTS,
        TieBreak.WINS,
        TieBreak.OPPONENTS,
    )


def test_match_points_come_before_every_tie_break() -> None:
    records = {
        "a": Record(match_points=2, tricks=0),
        "b": Record(match_points=4, tricks=0),
        "c": Record(match_points=0, tricks=99),
        "d": Record(match_points=2, tricks=1),
    }
    assert _rank(TournamentOptions(variant=hokm_spec(4)), records) == ["b", "d", "a", "c"]


def test_tricks_break_ties_before_points() -> None:
    records = {
        "a": Record(match_points=2, tricks=20, points=1),
        "b": Record(match_points=2, tricks=21, points=0),
        "c": Record(match_points=2, tricks=20, points=5),
        "d": Record(match_points=2, tricks=19, points=9),
    }
    assert _rank(TournamentOptions(variant=hokm_spec(4)), records) == ["b", "c", "a", "d"]


def test_opponents_match_points_break_ties_after_points() -> None:
    records = {
        "a": Record(match_points=2, opponents=("c",)),
        "b": Record(match_points=2, opponents=("d",)),
        "c": Record(match_points=4, opponents=("a",)),
        "d": Record(match_points=0, opponents=("b",)),
    }
    assert _rank(TournamentOptions(variant=hokm_spec(4)), records) == ["c", "a", "b", "d"]


def test_the_lot_breaks_what_nothing_else_does() -> None:
    records = {e: Record(match_points=2) for e in LOT}
    assert _rank(TournamentOptions(variant=hokm_spec(4)), records) == list(LOT)


def test_options_tie_break_order_is_followed() -> None:
    records = {
        "a": Record(match_points=2, tricks=30, wins=0),
        "b": Record(match_points=2, tricks=10, wins=1),
        "c": Record(),
        "d": Record(),
    }
    options = TournamentOptions(variant=hokm_spec(4), tie_breaks=(TieBreak.WINS,))
    assert _rank(options, records)[:2] == ["b", "a"]


def test_penalty_game_ranks_the_fewest_points_first() -> None:
    records = {
        "a": Record(match_points=2, points=150),
        "b": Record(match_points=2, points=90),
        "c": Record(match_points=2, points=-60),
        "d": Record(match_points=0, points=-200),
    }
    assert _rank(TournamentOptions(variant=hand_spec(3)), records) == ["c", "b", "a", "d"]


def test_shared_win_scores_the_shared_win_points() -> None:
    run = make_run(3, variant=hand_spec(3), rounds=1)
    (table,) = run.state.tables
    run.apply(result(run.state, table, [0, 2], points=[50, 120, 50]))
    by_side = {
        side: run.state.records[table.side_entrants(side)[0]].match_points for side in range(3)
    }
    assert by_side == {0: 1, 1: 0, 2: 1}


def test_standings_totals_add_up_to_the_results() -> None:
    run = make_run(10, format=Format.SWISS, rounds=3)
    while not run.state.is_over:
        play_round(run, lambda table: table.table % 2)
    standings = run.state.standings
    tables_played = 3 * 5
    assert sum(s.match_points for s in standings) == tables_played * 2
    assert sum(s.wins for s in standings) == tables_played
    assert sum(s.played for s in standings) == tables_played * 2
