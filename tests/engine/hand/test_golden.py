"""What the Hand golden logs hold (the generic checks are in tests/test_golden_logs.py)."""

from __future__ import annotations

import pytest

from engine import hand
from engine.core.logformat import load_jsonl
from tests.golden_logs import HAND_GOLDEN, GoldenMatch


@pytest.mark.parametrize("match", HAND_GOLDEN, ids=lambda m: m.name)
def test_golden_match_plays_every_round_with_the_recorded_totals(match: GoldenMatch) -> None:
    entries = load_jsonl(match.path.read_text(encoding="utf-8"))
    final = hand.replay(entry.event for entry in entries)
    ended = entries[-1].event.hand.match_ended
    assert list(ended.totals) == list(final.totals)
    assert list(ended.winners) == list(final.winners)
    assert final.rounds_played == final.options.rounds


def test_golden_logs_cover_melding_lay_offs_retrievals_and_partnerships() -> None:
    seen: set[str] = set()
    for match in HAND_GOLDEN:
        for entry in load_jsonl(match.path.read_text(encoding="utf-8")):
            seen.add(entry.event.hand.WhichOneof("kind") or "")
    assert {"melds_laid", "card_laid_off", "joker_retrieved", "round_ended",
            "match_ended"} <= seen
    partners = load_jsonl(HAND_GOLDEN[1].path.read_text(encoding="utf-8"))
    assert any(len(e.event.hand.round_ended.team_points) == 2 for e in partners)
