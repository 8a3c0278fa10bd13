"""How every bench prints its figures: one JSON object (``--json``, what docs/benchmarks.md
records), or one right-aligned line per figure for a person reading a terminal."""

from __future__ import annotations

import json
from collections.abc import Mapping


def print_figures(figures: Mapping[str, object], *, as_json: bool, width: int = 24) -> None:
    """Print ``figures`` as one JSON object, or as ``name: value`` lines with the names
    right-aligned to ``width``."""
    if as_json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>{width}}: {value}")
