"""The Hand golden logs ``tests/golden/hand_*.jsonl`` and how they are made.

Each is a whole match from a fixed seed, played by fixed bots, written as JSON Lines of
``LogEntry`` (:mod:`engine.core.logformat`), so ``dast verify FILE`` reads it. The format
is a contract: ``test_golden.py`` fails when the engine stops reproducing a file byte for
byte. To change them deliberately (a reviewed rule change), regenerate with::

    .venv/bin/python -m tests.engine.hand.golden
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dast.v1 import common_pb2, hand_pb2, log_pb2
from engine.core.chain import chain_entries
from engine.core.logformat import dump_jsonl
from engine.hand.sim import play_match

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden"


@dataclass(frozen=True)
class GoldenMatch:
    name: str
    rules: hand_pb2.HandRules
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
        return play_match(self.rules, self.seed, self.policies, 2026, players=self.players(),
                          at_ms=1_767_225_600_000)

    def text(self) -> str:
        return dump_jsonl(chain_entries(self.events()))


GOLDEN = (
    GoldenMatch("hand_2p", hand_pb2.HandRules(rounds=3), ("greedy", "random")),
    GoldenMatch(
        "hand_4p_partners",
        hand_pb2.HandRules(partnerships=True, rounds=2, turn_seconds=30),
        ("greedy", "random", "greedy", "random"),
    ),
    GoldenMatch(
        "hand_3p",
        hand_pb2.HandRules(
            rounds=2,
            must_beat_previous=True,
            dealer_rotation=hand_pb2.HAND_DEALER_ROTATION_NEXT,
            max_restocks=1,
        ),
        ("random", "greedy", "random"),
    ),
)


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for match in GOLDEN:
        match.path.write_text(match.text(), encoding="utf-8")
        print(f"wrote {match.path}")


if __name__ == "__main__":
    main()
