"""Benchmark the Hand engine's exact meld solver on one core.

- ``best_opening_ms_mean`` / ``_max``: :func:`engine.hand.solver.best_opening` over random
  14- and 15-card hands drawn from the 106-card deck (jokers included), milliseconds.
- ``can_go_out_ms_mean`` / ``_max``: :func:`engine.hand.solver.can_go_out` over the same
  hands, against a table of 4 random melds from the rest of the deck, the seat opened on
  every other hand, milliseconds.
- ``min_penalty_ms_mean`` / ``_max``: :func:`engine.hand.solver.min_penalty` likewise.
- ``baseline_best_opening_ms_mean`` / ``_max``: the same hands through
  :mod:`bench.baselines.plain_meld_search`, a textbook exact search (every meld listed,
  depth-first with memoization, no bounds), in the same run; ``best_opening_vs_baseline`` is
  the ratio of the means (the figure to compare across machines, these being noisy).
- ``meld_rich_*``: the same three over hands built mostly of melds (two jokers, many
  overlapping runs and sets), the solver's hard case.
- ``decisions_per_s``: random legal play of whole 4-player matches (default rules) through
  ``legal`` + ``decide`` + ``evolve`` of :mod:`engine.hand`, commands per second.

Goals: best_opening and can_go_out mean ≤ 0.5 ms and worst ≤ 5 ms over ≥ 2,000 random
hands. Run ``python bench/hand_engine.py --json`` for one JSON object (fixed seed).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.hand.candidates import candidate_melds
from engine.hand.cards import DECK_SIZE, JOKERS, hand_card_of
from engine.hand.melds import Meld
from engine.hand.solver import best_opening, can_go_out, min_penalty

Case = tuple[list[int], tuple[Meld, ...], bool]
"""A hand, the table melds around it, and whether its seat has opened."""


def random_table(rng: random.Random, rest: list[int], count: int) -> tuple[Meld, ...]:
    """``count`` disjoint melds picked at random among what ``rest`` can form."""
    options = candidate_melds(rest)
    rng.shuffle(options)
    chosen: list[Meld] = []
    used: set[int] = set()
    for meld in options:
        if len(chosen) == count:
            break
        if not used & set(meld.cards):
            chosen.append(meld)
            used |= set(meld.cards)
    return tuple(chosen)


def random_cases(hands: int, seed: int) -> list[Case]:
    """Random 14- and 15-card hands (alternating) with a table and an opened flag."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for i in range(hands):
        deck = list(range(DECK_SIZE))
        rng.shuffle(deck)
        size = 14 + i % 2
        hand, rest = deck[:size], deck[size:size + 40]
        cases.append((hand, random_table(rng, rest, 4), i % 2 == 1))
    return cases


def meld_rich_cases(hands: int, seed: int) -> list[Case]:
    """15-card hands of overlapping runs and sets of two suits and both jokers."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for i in range(hands):
        suits = rng.sample(range(4), 2)
        start = rng.randrange(0, 7)
        pool = [hand_card_of(s * 13 + r, c) for s in suits for r in range(start, start + 7)
                for c in (0, 1)]
        extra = [hand_card_of(s * 13 + r, 0) for s in range(4) if s not in suits
                 for r in range(start, start + 7)]
        hand = [*JOKERS, *rng.sample(pool, 10), *rng.sample(extra, 3)]
        cases.append((hand, (), i % 2 == 1))
    return cases


def _time(cases: list[Case], run: Callable[[Case], object]) -> tuple[float, float]:
    """(mean, max) milliseconds of ``run`` over ``cases``. The garbage collector is paused
    while timing, as :mod:`timeit` does: a collection pass walks the whole process's
    objects and would land its milliseconds on whichever hand happens to trigger it."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for case in cases:
            began = time.process_time()
            run(case)
            times.append((time.process_time() - began) * 1000)
    finally:
        gc.enable()
    return sum(times) / len(times), max(times)


def bench_best_opening(cases: list[Case]) -> tuple[float, float]:
    """best_opening over the cases' hands."""
    return _time(cases, lambda case: best_opening(case[0]))


def bench_baseline_best_opening(cases: list[Case]) -> tuple[float, float]:
    """The plain exact search (bench/baselines) over the cases' hands."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.baselines.plain_meld_search import best_opening_total

    return _time(cases, lambda case: best_opening_total(case[0]))


def bench_can_go_out(cases: list[Case]) -> tuple[float, float]:
    """can_go_out over the cases (table and opened flag included)."""
    return _time(cases, lambda case: can_go_out(case[0], case[1], has_opened=case[2]))


def bench_min_penalty(cases: list[Case]) -> tuple[float, float]:
    """min_penalty over the cases, lay-offs on the table allowed."""
    return _time(cases, lambda case: min_penalty(case[0], table_melds=case[1]))


def bench_decisions(matches: int, seed: int) -> tuple[float, int]:
    """(commands per second, commands) of random legal play: ``legal``, a uniform choice,
    ``decide`` and ``evolve`` for every command of ``matches`` whole 4-player matches."""
    from dast.v1 import common_pb2, hand_pb2
    from engine import hand as game

    rng = random.Random(seed)
    players = [common_pb2.Player(player_id=f"p{seat}") for seat in range(4)]
    commands = 0
    elapsed = 0.0
    for index in range(matches):
        server_seed = random.Random(seed + index).randbytes(32)
        state = game.replay(game.start(hand_pb2.HandRules(), server_seed, players))
        began = time.process_time()
        while (seat := game.to_act(state)) is not None:
            options = game.legal(state, seat)
            for event in game.decide(state, options[rng.randrange(len(options))]):
                state = game.evolve(state, event)
            commands += 1
        elapsed += time.process_time() - began
    return commands / elapsed, commands


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--hands", type=int, default=2000, help="random hands to solve")
    parser.add_argument("--seed", type=int, default=20261130, help="the hands' seed")
    args = parser.parse_args()
    cases = random_cases(args.hands, args.seed)
    rich = meld_rich_cases(max(1, args.hands // 10), args.seed)
    results: dict[str, float | int] = {"hands": len(cases), "meld_rich_hands": len(rich)}
    for name, bench in (
        ("best_opening", bench_best_opening),
        ("can_go_out", bench_can_go_out),
        ("min_penalty", bench_min_penalty),
    ):
        mean, worst = bench(cases)
        results[f"{name}_ms_mean"] = round(mean, 4)
        results[f"{name}_ms_max"] = round(worst, 4)
        mean, worst = bench(rich)
        results[f"meld_rich_{name}_ms_mean"] = round(mean, 4)
        results[f"meld_rich_{name}_ms_max"] = round(worst, 4)
    mean, worst = bench_baseline_best_opening(cases)
    results["baseline_best_opening_ms_mean"] = round(mean, 4)
    results["baseline_best_opening_ms_max"] = round(worst, 4)
    results["best_opening_vs_baseline"] = round(mean / float(results["best_opening_ms_mean"]), 1)
    per_s, decisions = bench_decisions(3, args.seed)
    results.update(decisions_per_s=round(per_s), decisions=decisions)
    if args.json:
        print(json.dumps(results, sort_keys=True))
    else:
        for key, value in sorted(results.items()):
            print(f"{key:36} {value}")


if __name__ == "__main__":
    main()
