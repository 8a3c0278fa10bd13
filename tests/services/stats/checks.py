"""Compare what the stats tables hold with :mod:`tests.services.stats.recompute`."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import create_engine, text

from dast.v1 import log_pb2
from services.stats.store import COUNTERS, MATCHES, PERIODS, PLAYERS, StatsStore
from tests.services.stats.recompute import Expected, recompute


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def _same(name: str, actual: dict[Any, dict[str, Any]],
          expected: dict[Any, dict[str, Any]]) -> None:
    assert sorted(actual) == sorted(expected), f"{name}: keys differ: " + str(
        sorted(set(actual) ^ set(expected))[:5])
    for key, row in expected.items():
        for column, value in row.items():
            assert _close(actual[key][column], value), (
                f"{name} {key} {column}: stored {actual[key][column]!r}, "
                f"recomputed {value!r}")


def assert_matches_logs(store: StatsStore, logs: dict[str, list[log_pb2.Event]]) -> Expected:
    """Every projection and rating in ``store`` equals the recomputation from ``logs``."""
    matches = {(r.game_id, r.seat): r._asdict() for r in store.all_rows(MATCHES)}
    order = {game_id: row["rating_order"] for (game_id, _), row in matches.items()}
    expected = recompute(logs, order)
    _same("stats_matches", matches, expected.matches)
    players = {(r.subject, r.game_type, r.variant): r._asdict()
               for r in store.all_rows(PLAYERS)}
    _same("stats_players", players, expected.players)
    # Every row, zeros included: a row exists once a non-zero amount was added, as a key
    # of the recomputation does, and signed counters (Hand's penalties) can add up to 0.
    counters = {(r.subject, r.game_type, r.variant, r.counter): r.value
                for r in store.all_rows(COUNTERS)}
    assert counters == expected.counters, "stats_counters (stored, recomputed): " + str(
        {key: (counters.get(key), expected.counters.get(key))
         for key in sorted(set(counters) | set(expected.counters))
         if counters.get(key) != expected.counters.get(key)})
    periods = {(r.subject, r.game_type, r.variant, r.period): r._asdict()
               for r in store.all_rows(PERIODS)}
    _same("stats_periods", periods, expected.periods)
    return expected


def stats_progress(database_url: str) -> tuple[int, int]:
    """(matches the stats service saw end, events it applied), from its own progress table."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as db:
            found = db.execute(text(
                "SELECT count(*) FILTER (WHERE over), coalesce(sum(applied_seq), 0) "
                "FROM stats_progress")).one()
    except Exception:  # its tables are not created yet
        return 0, 0
    finally:
        engine.dispose()
    return int(found[0]), int(found[1])
