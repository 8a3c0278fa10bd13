"""The golden logs (STYLE.md "Golden logs"): tests/golden/hand_*.jsonl keep verifying,
keep replaying to the same final state, and regenerate byte for byte from their seeds and
bots. A difference means the rules changed: regenerate deliberately (see golden.py)."""

from __future__ import annotations

import pytest

from engine import hand
from engine.core.audit import audit_log
from engine.core.logformat import load_jsonl
from tests.engine.hand.golden import GOLDEN, GoldenMatch


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_verifies_and_replays_to_its_final_state(match: GoldenMatch) -> None:
    entries = load_jsonl(match.path.read_text(encoding="utf-8"))
    report = audit_log(entries)
    assert report.ok, report.problems
    final = hand.replay(entry.event for entry in entries)
    assert hand.is_over(final)
    assert final == hand.replay(match.events())
    ended = entries[-1].event.hand.match_ended
    assert list(ended.totals) == list(final.totals)
    assert list(ended.winners) == list(final.winners)
    assert final.rounds_played == final.options.rounds


@pytest.mark.parametrize("match", GOLDEN, ids=lambda m: m.name)
def test_golden_log_regenerates_byte_for_byte(match: GoldenMatch) -> None:
    stored = match.path.read_text(encoding="utf-8").splitlines()
    regenerated = match.text().splitlines()
    assert len(regenerated) == len(stored)
    for number, (want, got) in enumerate(zip(stored, regenerated, strict=True), start=1):
        assert got == want, f"{match.path.name} line {number} differs"


def test_golden_logs_cover_melding_lay_offs_retrievals_and_partnerships() -> None:
    seen: set[str] = set()
    for match in GOLDEN:
        for entry in load_jsonl(match.path.read_text(encoding="utf-8")):
            seen.add(entry.event.hand.WhichOneof("kind") or "")
    assert {"melds_laid", "card_laid_off", "joker_retrieved", "round_ended",
            "match_ended"} <= seen
    partners = load_jsonl(GOLDEN[1].path.read_text(encoding="utf-8"))
    assert any(len(e.event.hand.round_ended.team_points) == 2 for e in partners)
