"""The services' one clock: wall-clock milliseconds since the epoch.

The engine reads no clock (docs/architecture.md "Time"); the services stamp commands, deadlines,
table
updates, token expiries and presence with :func:`wall_clock_ms`. The composition root
(``services/compose.py``) hands this one callable to every service it starts, and tests
pass their own (:data:`Clock`) to control time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]
"""A clock: milliseconds since the epoch."""


def wall_clock_ms() -> int:
    """Milliseconds since the epoch."""
    return time.time_ns() // 1_000_000
