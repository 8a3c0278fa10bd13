"""The golden logs ``tests/golden/*.jsonl`` and how they are made (docs/architecture.md "Golden
logs").

Each is a whole match from a fixed seed, played by fixed bots, written as JSON Lines of
``LogEntry`` (:mod:`engine.core.logformat`), so ``dast verify FILE`` reads it. The format
is a contract: ``tests/test_golden_logs.py`` fails when the engine stops reproducing a file
byte for byte, and old logs must keep replaying. To change them deliberately (a reviewed
rule change), regenerate with::

    .venv/bin/python -m tests.golden_logs
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import Message

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, log_pb2
from engine import hand, hokm
from engine.core.chain import chain_log
from engine.core.logformat import dump_jsonl
from engine.core.protocol import Game
from engine.core.testing import Policy, play_bots
from engine.hand.bots import BOTS as HAND_BOTS
from engine.hokm.bots import BOTS as HOKM_BOTS

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
_AT_MS = 1_767_225_600_000
_BOT_SEED = 2026


@dataclass(frozen=True)
class GoldenMatch:
    """One golden log: the game, its rules and the bot in each seat."""

    game: Game
    bots: Mapping[str, Policy]
    name: str
    rules: Message
    policies: tuple[str, ...]

    @property
    def path(self) -> Path:
        return GOLDEN_DIR / f"{self.name}.jsonl"

    @property
    def seed(self) -> bytes:
        return hashlib.sha256(f"golden/{self.name}".encode()).digest()

    def players(self) -> list[common_pb2.Player]:
        return [
            common_pb2.Player(player_id=f"{self.name}-{seat}", display_name=f"Seat {seat}",
                              is_bot=True, client_seed=f"client-{seat}".encode())
            for seat in range(len(self.policies))
        ]

    def events(self) -> list[log_pb2.Event]:
        return play_bots(self.game, self.bots, self.rules, self.seed, self.policies, _BOT_SEED,
                         players=self.players(), at_ms=_AT_MS)

    def text(self) -> str:
        return dump_jsonl(chain_log(self.events()))


def _hokm(name: str, rules: hokm_pb2.HokmRules, *policies: str) -> GoldenMatch:
    return GoldenMatch(hokm, HOKM_BOTS, name, rules, policies)


def _hand(name: str, rules: hand_pb2.HandRules, *policies: str) -> GoldenMatch:
    return GoldenMatch(hand, HAND_BOTS, name, rules, policies)


HOKM_GOLDEN = (
    _hokm("hokm_4p", hokm_pb2.HokmRules(), "greedy", "random", "greedy", "random"),
    _hokm(
        "hokm_3p",
        hokm_pb2.HokmRules(
            variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
            hakem_selection=hokm_pb2.HAKEM_SELECTION_ACE_IN_FIVE,
            target_score=5,
        ),
        "greedy", "random", "greedy",
    ),
    _hokm(
        "hokm_2p",
        hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=3),
        "greedy", "random",
    ),
)
HAND_GOLDEN = (
    _hand("hand_2p", hand_pb2.HandRules(rounds=3), "greedy", "random"),
    _hand(
        "hand_4p_partners",
        hand_pb2.HandRules(partnerships=True, rounds=2, turn_seconds=30),
        "greedy", "random", "greedy", "random",
    ),
    _hand(
        "hand_3p",
        hand_pb2.HandRules(
            rounds=2,
            must_beat_previous=True,
            dealer_rotation=hand_pb2.HAND_DEALER_ROTATION_NEXT,
            max_restocks=1,
        ),
        "random", "greedy", "random",
    ),
)
GOLDEN = HOKM_GOLDEN + HAND_GOLDEN


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for match in GOLDEN:
        match.path.write_text(match.text(), encoding="utf-8")
        print(f"wrote {match.path}")


if __name__ == "__main__":
    main()
