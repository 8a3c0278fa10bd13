"""docs/clients.md stays true to the code: it names every error reason the API can send,
its generated tables are current, and the example it includes by reference exists."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "clients.md"


def load_script() -> ModuleType:
    path = ROOT / "scripts" / "reason_tables.py"
    spec = importlib.util.spec_from_file_location("reason_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_the_guide_names_every_reason_the_code_can_send() -> None:
    script = load_script()
    guide = GUIDE.read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `(ERROR_REASON_[A-Z0-9_]+)` \|", guide, flags=re.MULTILINE))
    reasons = script.all_reasons()
    assert {"stale_expected_seq", "table_full", "must_follow_suit", "run_has_gap"} <= reasons
    wire = {f"ERROR_REASON_{reason.upper()}" for reason in reasons}
    assert wire - named == set(), "run scripts/reason_tables.py"


def test_the_generated_tables_are_current() -> None:
    script = load_script()
    guide = GUIDE.read_text(encoding="utf-8")
    assert script.with_block(guide) == guide, "run scripts/reason_tables.py"


def test_a_reason_missing_from_the_guide_is_caught() -> None:
    script = load_script()
    guide = GUIDE.read_text(encoding="utf-8")
    stripped = guide.replace("| `ERROR_REASON_MUST_FOLLOW_SUIT` |", "| `(removed)` |")
    assert script.with_block(stripped) != stripped


def test_the_guide_includes_the_tested_example() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    assert "docs/examples/play_hokm.py" in guide
    assert (ROOT / "docs" / "examples" / "play_hokm.py").is_file()
    assert "```mermaid" in guide and "sequenceDiagram" in guide
    # The TypeScript example it names is the one tests/e2e/test_ts_client.py runs.
    assert "clients/ts/examples/play_match.ts" in guide
    assert (ROOT / "clients" / "ts" / "examples" / "play_match.ts").is_file()
