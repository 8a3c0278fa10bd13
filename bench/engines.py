"""Benchmark the engines against their pure-Python peers, side by side in one process.

Random legal play, decisions (commands or actions) per second, of

- ``rlcard_bridge``: RLCard's bridge game layer (``rlcard.games.bridge.game.BridgeGame``:
  ``judger.get_legal_actions`` and ``step``; the auction, then the 52 cards);
- ``rlcard_gin_rummy``: RLCard's gin-rummy game layer (``GinRummyGame``: ``judge.
  get_legal_actions`` and ``step``);
- ``hokm4``, ``hokm3``: whole Hokm matches (default rules, 4 and 3 players) and ``hand4``
  whole Hand matches (4 players) through the public protocol: ``legal``, one random
  command (a choice entry's commands drawn through :class:`~engine.core.legal.
  LegalEntries`), ``decide`` and ``evolve`` of every event, proto events included.

Neither side uses an environment wrapper, agents or observation encoding; starting a new
game or match (RLCard's ``init_game``, our ``start`` and ``replay``) counts in the time.
Time is the process's CPU time, so that other processes on a shared machine do not count,
and what noise is left hits every contender alike: they run interleaved, in ``--rounds``
rounds of one ``--slice`` of CPU seconds each, and each figure is the total decisions over
the total time of its slices. The ratios are ``hokm4_vs_rlcard_bridge``, ``hokm3_vs_hokm4`` and
``hand4_vs_rlcard_gin_rummy`` (goals ≥ 0.5, ≥ 0.8, ≥ 0.5).

Needs the ``bench`` extra (``pip install -e '.[bench]'``; ``make bench-peers`` installs it
and runs this). Run ``python bench/engines.py --json`` for one JSON object (seeded: the same
games are played, only the timing differs).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.report import print_figures
from dast.v1 import hand_pb2, hokm_pb2
from engine import hand, hokm
from engine.core.legal import LegalEntries
from engine.core.protocol import Game
from engine.core.testing import bot_players

CHECK_CLOCK_EVERY = 32
"""Decisions between two reads of the clock inside a slice."""


class DastRunner:
    """Random legal play of one of our games through its public protocol, match after
    match, resumable slice after slice."""

    def __init__(self, game: Game, rules: Message, seats: int, label: str, seed: int) -> None:
        self.game = game
        self.rules = rules
        self.players = bot_players(seats)
        self.label = label
        self.entries = LegalEntries(game)
        self.rng = random.Random(seed)
        self.matches = 0
        self.state: Any = None

    def _start(self) -> Any:
        seed = hashlib.sha256(f"bench/{self.label}/{self.matches}".encode()).digest()
        self.matches += 1
        return self.game.replay(self.game.start(self.rules, seed, self.players))

    def play(self, seconds: float) -> tuple[int, float]:
        """Play for about ``seconds``; (decisions made, seconds taken)."""
        game, entries, below = self.game, self.entries, self.rng.randrange
        to_act, legal, decide, evolve = game.to_act, game.legal, game.decide, game.evolve
        state = self.state if self.state is not None else self._start()
        made = 0
        began = time.process_time()
        deadline = began + seconds
        while True:
            seat = to_act(state)
            if seat is None:
                state = self._start()
                continue
            command = entries.random(legal(state, seat), below)
            for event in decide(state, command):
                state = evolve(state, event)
            made += 1
            if made % CHECK_CLOCK_EVERY == 0 and time.process_time() >= deadline:
                break
        self.state = state
        return made, time.process_time() - began


class RlcardRunner:
    """Random legal play of an RLCard game layer (``init_game``, legal actions, ``step``),
    game after game, resumable slice after slice."""

    def __init__(self, game: Any, legal_actions: Callable[[], list[Any]], seed: int) -> None:
        game.np_random.seed(seed)  # the game's own numpy generator: its deals and dealers
        self.game = game
        self.legal_actions = legal_actions
        self.rng = random.Random(seed)
        self.games = 0
        game.init_game()

    def play(self, seconds: float) -> tuple[int, float]:
        """Play for about ``seconds``; (decisions made, seconds taken)."""
        game, legal_actions, below = self.game, self.legal_actions, self.rng.randrange
        made = 0
        began = time.process_time()
        deadline = began + seconds
        while True:
            if game.is_over():
                game.init_game()
                self.games += 1
                continue
            actions = legal_actions()
            game.step(actions[below(len(actions))])
            made += 1
            if made % CHECK_CLOCK_EVERY == 0 and time.process_time() >= deadline:
                break
        return made, time.process_time() - began


def rlcard_bridge(seed: int) -> RlcardRunner:
    """RLCard's bridge game layer."""
    from rlcard.games.bridge.game import BridgeGame

    game = BridgeGame()
    return RlcardRunner(game, game.judger.get_legal_actions, seed)


def rlcard_gin_rummy(seed: int) -> RlcardRunner:
    """RLCard's gin-rummy game layer."""
    from rlcard.games.gin_rummy.game import GinRummyGame

    game = GinRummyGame()
    return RlcardRunner(game, game.judge.get_legal_actions, seed)


Runner = DastRunner | RlcardRunner


def contenders(seed: int) -> dict[str, Runner]:
    """Every contender by its name in the result, in the order they take their slices."""
    three = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS)
    return {
        "rlcard_bridge": rlcard_bridge(seed),
        "hokm4": DastRunner(hokm, hokm_pb2.HokmRules(), 4, "hokm4", seed),
        "hokm3": DastRunner(hokm, three, 3, "hokm3", seed),
        "rlcard_gin_rummy": rlcard_gin_rummy(seed),
        "hand4": DastRunner(hand, hand_pb2.HandRules(), 4, "hand4", seed),
    }


def run(rounds: int, slice_seconds: float, seed: int) -> dict[str, float | int]:
    """Interleave the contenders' slices; decisions/s of each and the ratios."""
    runners = contenders(seed)
    made = dict.fromkeys(runners, 0)
    spent = dict.fromkeys(runners, 0.0)
    for _ in range(rounds):
        for name, runner in runners.items():
            decisions, seconds = runner.play(slice_seconds)
            made[name] += decisions
            spent[name] += seconds
    per_s = {name: made[name] / spent[name] for name in runners}
    result: dict[str, float | int] = {
        f"{name}_decisions_per_s": round(rate) for name, rate in per_s.items()
    }
    result.update({f"{name}_decisions": count for name, count in made.items()})
    result.update(
        hokm4_vs_rlcard_bridge=round(per_s["hokm4"] / per_s["rlcard_bridge"], 3),
        hokm3_vs_hokm4=round(per_s["hokm3"] / per_s["hokm4"], 3),
        hand4_vs_rlcard_gin_rummy=round(per_s["hand4"] / per_s["rlcard_gin_rummy"], 3),
        rounds=rounds,
        slice_seconds=slice_seconds,
        seed=seed,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=25, help="slices per contender")
    parser.add_argument("--slice", type=float, default=0.2, help="CPU seconds per slice")
    parser.add_argument("--seed", type=int, default=20261130, help="the games' seed")
    args = parser.parse_args()
    result = run(args.rounds, args.slice, args.seed)
    print_figures(result, as_json=args.json, width=34)


if __name__ == "__main__":
    main()
