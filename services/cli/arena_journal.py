"""The journal of a ``dast arena`` run: every finished set, on disk as soon as it finishes.

A run to the default target takes hours; a run that dies (a reboot, a killed terminal)
must not take its finished sets with it. Beside the results file the run appends one JSON
line per finished set to ``<out>.sets.jsonl``, after a first line holding the run's setup,
and syncs it to disk. ``--resume`` reads the journal back, checks it was made by the same
setup (levels, rules, seed, budget), and plays only the sets it lacks, so the summary of a
resumed run is the summary of one run over every set.

The process may die in the middle of a line: a line that does not parse is the one the
kill cut, and its set is played again.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from services.cli.arena_records import ArenaSetup, MatchResult, SetResult


class JournalMismatch(ValueError):
    """The journal on disk was written by a run of another setup."""


def journal_path(out: Path) -> Path:
    """Where the run writing ``out`` keeps its journal."""
    return out.with_suffix(".sets.jsonl")


def _setup_record(setup: ArenaSetup) -> dict[str, Any]:
    record = asdict(setup)
    record["rules"] = setup.rules.hex()
    return record


def _set_record(result: SetResult, elapsed_s: float) -> dict[str, Any]:
    return {
        "index": result.index,
        "elapsed_s": elapsed_s,
        "matches": [asdict(match) for match in result.matches],
        # A hundredth of a millisecond is finer than the clock's noise and keeps a line of
        # hundreds of decisions short.
        "decision_ms": {side: [round(ms, 2) for ms in times]
                        for side, times in result.decision_ms.items()},
    }


def _set_from_record(record: dict[str, Any]) -> SetResult:
    matches = [MatchResult(**{**match, "seating": tuple(match["seating"])})
               for match in record["matches"]]
    return SetResult(int(record["index"]), matches,
                     {side: [float(ms) for ms in times]
                      for side, times in record["decision_ms"].items()})


def read_journal(path: Path, setup: ArenaSetup) -> tuple[list[SetResult], float]:
    """The sets a journal holds for ``setup`` (one per index) and the seconds the run had
    taken when it wrote its last one; nothing when there is no journal.

    :raises JournalMismatch: if the journal was written for another setup.
    """
    if not path.exists():
        return [], 0.0
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if header is None:  # killed before its first line was whole: nothing was recorded
        return [], 0.0
    if header.get("setup") != _setup_record(setup):
        raise JournalMismatch(
            f"{path} was written by a run of another setup ({header.get('setup')}); "
            "run without --resume to start over, or give another --out"
        )
    sets: dict[int, SetResult] = {}
    elapsed = 0.0
    for line in lines[1:]:
        try:
            record = json.loads(line)
            result = _set_from_record(record)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # a line cut by the kill: its set is played again
        sets[result.index] = result
        elapsed = max(elapsed, float(record.get("elapsed_s", 0.0)))
    return [sets[index] for index in sorted(sets)], elapsed


class JournalWriter:
    """Appends finished sets to a run's journal: a new one, or (``append``) the one
    :func:`read_journal` found sets in."""

    def __init__(self, path: Path, setup: ArenaSetup, *, append: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a" if append else "w", encoding="utf-8")
        if append:
            self._file.write("\n")  # ends a line the kill may have cut; blank lines are skipped
        else:
            self._append({"setup": _setup_record(setup)})

    def record(self, result: SetResult, elapsed_s: float) -> None:
        """Put one finished set on disk before the run goes on."""
        self._append(_set_record(result, elapsed_s))

    def _append(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()
