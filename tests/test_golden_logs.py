"""Every golden log (tests/golden/*.jsonl) keeps verifying, keeps replaying to the same final
state, and regenerates byte for byte from its seed and bots. A difference means the rules
changed: regenerate deliberately (see tests/golden_logs.py)."""

from __future__ import annotations

import pytest

from engine.core.audit import audit_log
from engine.core.logformat import load_jsonl
from tests.golden_logs import GOLDEN, GOLDEN_DIR, GoldenMatch


def test_every_golden_file_is_declared() -> None:
    assert {p.name for p in GOLDEN_DIR.glob("*.jsonl")} == {m.path.name for m in GOLDEN}


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_verifies_and_replays_to_its_final_state(match: GoldenMatch) -> None:
    entries = load_jsonl(match.path.read_text(encoding="utf-8"))
    report = audit_log(entries)
    assert report.ok, report.problems
    final = match.game.replay(entry.event for entry in entries)
    assert match.game.is_over(final)
    assert final == match.game.replay(match.events())


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_regenerates_byte_for_byte(match: GoldenMatch) -> None:
    stored = match.path.read_text(encoding="utf-8").splitlines()
    regenerated = match.text().splitlines()
    assert len(regenerated) == len(stored)
    for number, (want, got) in enumerate(zip(stored, regenerated, strict=True), start=1):
        assert got == want, f"{match.path.name} line {number} differs"
