"""The golden logs (STYLE.md "Golden logs"): tests/golden/hokm_*.jsonl keep verifying,
keep replaying to the same final state, and regenerate byte for byte from their seeds and
bots. A difference means the rules changed: regenerate deliberately (see golden.py)."""

from __future__ import annotations

import pytest

from engine import hokm
from engine.core.audit import audit_log
from engine.core.logformat import load_jsonl

from .golden import GOLDEN, GoldenMatch


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_verifies_and_replays_to_its_final_state(match: GoldenMatch) -> None:
    entries = load_jsonl(match.path.read_text(encoding="utf-8"))
    report = audit_log(entries)
    assert report.ok, report.problems
    final = hokm.replay(entry.event for entry in entries)
    assert hokm.is_over(final)
    assert final == hokm.replay(match.events())
    ended = entries[-1].event.hokm.match_ended
    assert list(ended.scores) == list(final.scores) and list(ended.winners) == list(final.winners)
    assert max(final.scores) >= final.options.target_score


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_regenerates_byte_for_byte(match: GoldenMatch) -> None:
    stored = match.path.read_text(encoding="utf-8").splitlines()
    regenerated = match.text().splitlines()
    assert len(regenerated) == len(stored)
    for number, (want, got) in enumerate(zip(stored, regenerated, strict=True), start=1):
        assert got == want, f"{match.path.name} line {number} differs"


def test_golden_logs_cover_every_variant_and_command_kind() -> None:
    seen: set[str] = set()
    for match in GOLDEN:
        for entry in load_jsonl(match.path.read_text(encoding="utf-8")):
            seen.add(entry.event.hokm.WhichOneof("kind") or "")
    assert {"kitty_taken", "cards_set_aside", "piles_laid", "pile_cards_taken",
            "hakem_cards_shown", "trump_declared", "round_ended", "match_ended"} <= seen
