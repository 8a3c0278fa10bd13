"""What the Hokm golden logs hold (the generic checks are in tests/test_golden_logs.py)."""

from __future__ import annotations

import pytest

from engine import hokm
from engine.core.logformat import load_jsonl
from tests.golden_logs import HOKM_GOLDEN, GoldenMatch


@pytest.mark.parametrize("match", HOKM_GOLDEN, ids=lambda m: m.name)
def test_golden_match_ends_at_target_score_with_the_recorded_winners(match: GoldenMatch) -> None:
    entries = load_jsonl(match.path.read_text(encoding="utf-8"))
    final = hokm.replay(entry.event for entry in entries)
    ended = entries[-1].event.hokm.match_ended
    assert list(ended.scores) == list(final.scores) and list(ended.winners) == list(final.winners)
    assert max(final.scores) >= final.options.target_score


def test_golden_logs_cover_every_variant_and_command_kind() -> None:
    seen: set[str] = set()
    for match in HOKM_GOLDEN:
        for entry in load_jsonl(match.path.read_text(encoding="utf-8")):
            seen.add(entry.event.hokm.WhichOneof("kind") or "")
    assert {"kitty_taken", "cards_set_aside", "piles_laid", "pile_cards_taken",
            "hakem_cards_shown", "trump_declared", "round_ended", "match_ended"} <= seen
