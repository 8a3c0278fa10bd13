"""Benchmark the search core and the ``expert`` bots on one core.

- ``hokm_fast_core_decisions_per_s``: random legal play in the Hokm search core
  (:func:`engine.hokm.search.core.random_playout` over freshly shuffled 4-player deals,
  default rules), cards played per second; ``_3p`` and ``_2p`` for the other variants
  (pile choices count as decisions). Goal: at least 200,000 (4 players).
- ``hokm_engine_decisions_per_s``: the same random play through the engine's
  ``legal``/``decide``/``evolve``, measured in the same run: the in-run baseline, so that
  the ratio ``fast_core_vs_engine`` is the figure to compare across machines.
- ``hokm_expert_ms_p50`` / ``_p95`` / ``_max``: the Hokm ``expert`` with the bot service's
  budget (``--budget-ms``, default 200, on ``time.perf_counter``) playing whole 4-player
  matches (target 3) against ``greedy`` in both seatings; milliseconds per decision, over
  every decision including forced ones. Goal: p95 at most 250 ms.
- ``hand_expert_ms_*``: the same for the Hand ``expert`` against ``basic`` (2 players, 5
  rounds).

Run ``python bench/bots.py --json`` for one JSON object (about a minute with the
defaults: the expert matches dominate); ``--only hand`` (or ``hokm``) measures one game's
figures alone.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.report import print_figures
from dast.v1 import hand_pb2, hokm_pb2
from engine import hokm
from engine.core.cards import mask_of
from engine.core.testing import bot_players
from engine.hokm.rules import resolve_rules
from engine.hokm.search.core import FastRound, random_playout
from services.cli.arena import percentile, play_set
from services.cli.arena_records import ArenaSetup

_VARIANTS = {
    4: hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS,
    3: hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
    2: hokm_pb2.HOKM_VARIANT_TWO_PLAYERS,
}


def _random_round(seats: int, rng: random.Random) -> FastRound:
    """A fresh random deal at its first lead (three players: a random 4 laid aside; two
    players: the 26 undealt cards as the piles)."""
    options = resolve_rules(hokm_pb2.HokmRules(variant=_VARIANTS[seats]))
    deck = list(range(52))
    rng.shuffle(deck)
    size = options.hand_size
    hands = [mask_of(deck[seat * size:(seat + 1) * size]) for seat in range(seats)]
    rest = deck[seats * size:]
    if seats == 2:
        return FastRound.deal(options, 0, rng.randrange(4), hands, rest[:13], rest[13:])
    return FastRound.deal(options, 0, rng.randrange(4), hands)


def bench_fast_core(seats: int, seconds: float) -> float:
    """Random legal play in the core for about ``seconds``; decisions per second (dealing
    is not timed)."""
    rng = random.Random(seats)
    decisions, elapsed = 0, 0.0
    while elapsed < seconds:
        rnd = _random_round(seats, rng)
        began = time.perf_counter()
        decisions += random_playout(rnd, rng)
        elapsed += time.perf_counter() - began
    return decisions / elapsed


def bench_engine(seconds: float) -> float:
    """Random legal play through the engine (4 players) for about ``seconds``."""
    rng = random.Random(1)
    players = bot_players(4)
    decisions, elapsed, match = 0, 0.0, 0
    while elapsed < seconds:
        events = hokm.start(hokm_pb2.HokmRules(), match.to_bytes(32, "big"), players)
        began = time.perf_counter()
        state = hokm.replay(events)
        while (seat := hokm.to_act(state)) is not None:
            options = hokm.legal(state, seat)
            for event in hokm.decide(state, options[rng.randrange(len(options))]):
                state = hokm.evolve(state, event)
            decisions += 1
        elapsed += time.perf_counter() - began
        match += 1
    return decisions / elapsed


def bench_expert(setup: ArenaSetup, deals: int) -> dict[str, float]:
    """Milliseconds per decision of level A over ``deals`` duplicate sets."""
    times: list[float] = []
    for index in range(deals):
        times.extend(play_set(setup, index).decision_ms["a"])
    times.sort()
    return {"p50": percentile(times, 0.5), "p95": percentile(times, 0.95),
            "max": times[-1], "decisions": len(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per core measurement")
    parser.add_argument("--budget-ms", type=float, default=200.0, help="an expert's budget")
    parser.add_argument("--deals", type=int, default=1, help="duplicate deals per expert")
    parser.add_argument("--only", choices=("hokm", "hand"), help="one game's figures alone")
    args = parser.parse_args()
    result: dict[str, float | int] = {"expert_budget_ms": args.budget_ms}
    experts: list[tuple[str, dict[str, float]]] = []
    if args.only != "hand":
        core = {seats: bench_fast_core(seats, args.seconds) for seats in (4, 3, 2)}
        engine_per_s = bench_engine(args.seconds)
        result.update({
            "hokm_fast_core_decisions_per_s": round(core[4]),
            "hokm_fast_core_decisions_per_s_3p": round(core[3]),
            "hokm_fast_core_decisions_per_s_2p": round(core[2]),
            "hokm_engine_decisions_per_s": round(engine_per_s),
            "fast_core_vs_engine": round(core[4] / engine_per_s, 1),
        })
        hokm_rules = hokm_pb2.HokmRules(target_score=3, turn_seconds=0).SerializeToString()
        experts.append(("hokm_expert", bench_expert(
            ArenaSetup("hokm", hokm_rules, 4, "expert", "greedy", args.budget_ms, 1, 0),
            args.deals,
        )))
    if args.only != "hokm":
        hand_rules = hand_pb2.HandRules(players=2, turn_seconds=0).SerializeToString()
        experts.append(("hand_expert", bench_expert(
            ArenaSetup("hand", hand_rules, 2, "expert", "basic", args.budget_ms, 1, 0),
            args.deals,
        )))
    for name, figures in experts:
        result[f"{name}_ms_p50"] = round(figures["p50"], 2)
        result[f"{name}_ms_p95"] = round(figures["p95"], 2)
        result[f"{name}_ms_max"] = round(figures["max"], 2)
        result[f"{name}_decisions"] = int(figures["decisions"])
    print_figures(result, as_json=args.json, width=36)


if __name__ == "__main__":
    main()
