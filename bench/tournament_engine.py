"""Benchmark the tournament engine (:mod:`engine.tournament`) on one core, without games.

A 1,024-player Hokm tournament (four players a table, 256 tables a round, individuals with
partners drawn each round) is played through ``decide`` + ``evolve`` with seeded random
results, for ``--rounds`` Swiss rounds and as a knockout; a field of 512 registered pairs
plays the same Swiss rounds.

- ``swiss_1024_next_round_ms_max`` / ``_mean``: the ``decide`` of a round's last result,
  which ends the round (standings) and seats the next one (pairing, seating), milliseconds.
  Goal: well under 1,000 ms.
- ``swiss_512_pairs_next_round_ms_max``: the same for 512 registered pairs (two a table).
- ``knockout_1024_next_round_ms_max``: the same in a knockout of 1,024 individuals.
- ``result_decide_us_mean``: the ``decide`` + ``evolve`` of any other result, microseconds.
- ``swiss_1024_engine_s``: the whole Swiss tournament (registration to the end) in the engine.
- ``verify_1024_s``: :func:`engine.tournament.verify` of that log (every choice re-derived).
- ``swiss_1024_rematches``: tables seating two entrants who had met (0 expected).
- ``pairing_ms`` / ``greedy_pairing_ms`` / ``pairing_vs_greedy``: in-run baseline for the
  pairing alone, on the order and history after the last round (the hardest: the bottom of
  the standings has met itself) — the rematch-avoiding search of
  :func:`engine.tournament.pairing.group_swiss` against a greedy pass without backtracking
  (:func:`~engine.tournament.pairing.group_fewest_rematches`); ``pairing_rematches`` and
  ``greedy_rematches`` count the tables' repeated meetings each leaves.

Times are the process's CPU time (``time.process_time``), not wall time: the engine is
single-threaded and does no I/O, and CPU time is what stays meaningful on a shared machine.

Run ``python bench/tournament_engine.py --json`` for one JSON object (fixed seed).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Any

from engine.core.rng import DeterministicRandom
from engine.tournament import (
    Entry,
    Format,
    Phase,
    Start,
    TournamentOptions,
    hokm_spec,
    verify,
)
from engine.tournament.pairing import group_fewest_rematches, group_swiss
from engine.tournament.sim import TournamentRun, random_result

SEED = b"bench/tournament-engine/seed/v1!"


def play(entrants: int, options: TournamentOptions) -> tuple[TournamentRun, dict[str, float]]:
    """Register ``entrants``, start, and play to the end with random results; timings."""
    begun = time.process_time()
    run = TournamentRun("bench", options, SEED)
    rng = DeterministicRandom(SEED, "results")
    run.register_field(entrants, ratings=[1000 + (i * 7919) % 1000 for i in range(entrants)])
    started = time.process_time()
    run.apply(Start())
    next_round = [time.process_time() - started]
    others: list[float] = []
    rematches = 0
    met: set[frozenset[str]] = set()
    while run.state.phase is Phase.RUNNING:
        state = run.state
        for table in state.tables:
            people = table.entrants
            for i, a in enumerate(people):
                for b in people[i + 1 :]:
                    pair = frozenset((a, b))
                    rematches += pair in met
                    met.add(pair)
        last = len(state.tables) - 1
        for table in state.tables:
            command = random_result(run.state, table, rng)
            before = time.process_time()
            run.apply(command)
            spent = time.process_time() - before
            (next_round if table.table == last else others).append(spent)
    total = time.process_time() - begun
    return run, {
        "next_round_ms_max": max(next_round) * 1000,
        "next_round_ms_mean": statistics.fmean(next_round) * 1000,
        "result_us_mean": statistics.fmean(others) * 1e6 if others else 0.0,
        "total_s": total,
        "rematches": float(rematches),
    }


def _rematches(groups: list[tuple[str, ...]], met: dict[str, frozenset[str]]) -> int:
    return sum(
        1 for group in groups for i, a in enumerate(group) for b in group[i + 1 :] if b in met[a]
    )


def pairing_versus_greedy(run: TournamentRun) -> dict[str, float]:
    """Time ``group_swiss`` against the greedy pass on the final state's order."""
    state = run.state
    order = sorted(state.lot, key=lambda e: -state.records[e].match_points)
    size = 4
    sizes = [size] * (len(order) // size)
    order = order[: sum(sizes)]
    repeats = 3
    before = time.process_time()
    for _ in range(repeats):
        ours = group_swiss(order, sizes, state.met)
    ours_s = (time.process_time() - before) / repeats
    before = time.process_time()
    for _ in range(repeats):
        greedy = group_fewest_rematches(order, sizes, state.met)
    greedy_s = (time.process_time() - before) / repeats
    return {
        "pairing_ms": round(ours_s * 1000, 2),
        "greedy_pairing_ms": round(greedy_s * 1000, 2),
        "pairing_vs_greedy": round(ours_s / greedy_s, 2),
        "pairing_rematches": _rematches(ours, state.met),
        "greedy_rematches": _rematches(greedy, state.met),
    }


def main() -> None:
    """Run the tournaments and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=10, help="Swiss rounds")
    args = parser.parse_args()
    gc.collect()
    figures: dict[str, Any] = {"players": 1024, "rounds": args.rounds}
    individuals = TournamentOptions(
        variant=hokm_spec(4), entry=Entry.INDIVIDUALS, rounds=args.rounds
    )
    run, swiss = play(1024, individuals)
    figures["swiss_1024_next_round_ms_max"] = round(swiss["next_round_ms_max"], 1)
    figures["swiss_1024_next_round_ms_mean"] = round(swiss["next_round_ms_mean"], 1)
    figures["result_decide_us_mean"] = round(swiss["result_us_mean"], 1)
    figures["swiss_1024_engine_s"] = round(swiss["total_s"], 2)
    figures["swiss_1024_rematches"] = int(swiss["rematches"])
    before = time.process_time()
    problems = verify(run.events)
    figures["verify_1024_s"] = round(time.process_time() - before, 2)
    figures["verify_1024_ok"] = not problems
    figures.update(pairing_versus_greedy(run))
    pairs = TournamentOptions(variant=hokm_spec(4), entry=Entry.PAIRS, rounds=args.rounds)
    _, pair_figures = play(512, pairs)
    figures["swiss_512_pairs_next_round_ms_max"] = round(pair_figures["next_round_ms_max"], 1)
    figures["swiss_512_pairs_rematches"] = int(pair_figures["rematches"])
    knockout = TournamentOptions(
        variant=hokm_spec(4), entry=Entry.INDIVIDUALS, format=Format.KNOCKOUT
    )
    _, knockout_figures = play(1024, knockout)
    figures["knockout_1024_next_round_ms_max"] = round(knockout_figures["next_round_ms_max"], 1)
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
