"""Benchmark the Hokm engine on one core.

- ``decisions_per_s``: random legal play through ``legal`` + ``decide`` + ``evolve``
  (4 players, default rules), commands per second.
- ``replay_events_per_s``: ``evolve`` over recorded logs, events per second.
- ``match_replay_ms``: ``replay`` of one full 7-point four-player match, milliseconds.
- ``baseline_decisions_per_s``: the same random play in :mod:`bench.baselines.naive_hokm`, a
  straightforward list-of-objects Hokm round with none of the engine's guarantees, measured
  in the same run; ``decisions_vs_baseline`` is the ratio (the figure to compare across
  machines, since these shared machines are noisy).

Goals (docs/benchmarks.md): at least 30,000 decisions/s and 150,000 replayed events/s.
Run ``python bench/hokm_engine.py --json`` for one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.report import print_figures
from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.hokm.sim import default_players, play_match


def _baseline() -> Callable[[int, int], int]:
    """The naive baseline's ``play_random_rounds``."""
    from bench.baselines.naive_hokm import play_random_rounds

    return play_random_rounds


def _seed(i: int) -> bytes:
    return hashlib.sha256(f"bench/{i}".encode()).digest()


def bench_decisions(seconds: float) -> tuple[float, int]:
    """Random legal matches for about ``seconds``; (decisions per second, decisions)."""
    rng = random.Random(1)
    players = default_players(4)
    rules = hokm_pb2.HokmRules()
    decisions = 0
    elapsed = 0.0
    match = 0
    while elapsed < seconds:
        events = hokm.start(rules, _seed(match), players)
        began = time.perf_counter()
        state = hokm.replay(events)
        while (seat := hokm.to_act(state)) is not None:
            options = hokm.legal(state, seat)
            command = options[rng.randrange(len(options))]
            for event in hokm.decide(state, command):
                state = hokm.evolve(state, event)
            decisions += 1
        elapsed += time.perf_counter() - began
        match += 1
    return decisions / elapsed, decisions


def bench_baseline(seconds: float) -> float:
    """The naive baseline's random legal play for about ``seconds``; decisions per second."""
    play_random_rounds = _baseline()
    made = 0
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        made += play_random_rounds(2_000, made)
    return made / elapsed


def bench_replay(logs: list[list[log_pb2.Event]], seconds: float) -> float:
    """Replay ``logs`` over and over for about ``seconds``; events per second."""
    events = 0
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        for log in logs:
            hokm.replay(log)
            events += len(log)
    return events / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()
    decisions_per_s, decisions = bench_decisions(args.seconds)
    baseline_per_s = bench_baseline(args.seconds)
    logs = [
        play_match(hokm_pb2.HokmRules(variant=variant), _seed(100 + i), ["random"] * seats, i)
        for i in range(3)
        for variant, seats in (
            (hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 4),
            (hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, 3),
            (hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, 2),
        )
    ]
    replay_events_per_s = bench_replay(logs, args.seconds)
    match = play_match(hokm_pb2.HokmRules(target_score=7), _seed(7), ["greedy"] * 4, 7)
    runs = 20
    began = time.perf_counter()
    for _ in range(runs):
        hokm.replay(match)
    match_replay_ms = (time.perf_counter() - began) / runs * 1000
    result = {
        "decisions_per_s": round(decisions_per_s),
        "decisions": decisions,
        "baseline_decisions_per_s": round(baseline_per_s),
        "decisions_vs_baseline": round(decisions_per_s / baseline_per_s, 2),
        "replay_events_per_s": round(replay_events_per_s),
        "match_replay_ms": round(match_replay_ms, 3),
        "match_events": len(match),
    }
    print_figures(result, as_json=args.json, width=22)


if __name__ == "__main__":
    main()
