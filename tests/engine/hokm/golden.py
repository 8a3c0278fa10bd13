"""The Hokm golden logs ``tests/golden/hokm_{4p,3p,2p}.jsonl`` and how they are made.

Each is a whole match from a fixed seed, played by fixed bots, written as JSON Lines of
``LogEntry`` (:mod:`engine.core.logformat`), so ``dast verify FILE`` reads it. The format
is a contract: ``test_golden.py`` fails when the engine stops reproducing a file byte for
byte. To change them deliberately (a reviewed rule change), regenerate with::

    .venv/bin/python -m tests.engine.hokm.golden
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine.core.chain import chain_entries
from engine.core.logformat import dump_jsonl
from engine.hokm.sim import play_match

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden"


@dataclass(frozen=True)
class GoldenMatch:
    name: str
    rules: hokm_pb2.HokmRules
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
    GoldenMatch("hokm_4p", hokm_pb2.HokmRules(), ("greedy", "random", "greedy", "random")),
    GoldenMatch(
        "hokm_3p",
        hokm_pb2.HokmRules(
            variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS,
            hakem_selection=hokm_pb2.HAKEM_SELECTION_ACE_IN_FIVE,
            target_score=5,
        ),
        ("greedy", "random", "greedy"),
    ),
    GoldenMatch(
        "hokm_2p",
        hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=3),
        ("greedy", "random"),
    ),
)


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for match in GOLDEN:
        match.path.write_text(match.text(), encoding="utf-8")
        print(f"wrote {match.path}")


if __name__ == "__main__":
    main()
