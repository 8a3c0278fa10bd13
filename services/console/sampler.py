"""The overview's figures over the last hour, sampled in the console's memory."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

HOUR_SECONDS: Final = 3600.0


@dataclass(frozen=True)
class Sample:
    """One reading of a growing total (or of a level) at a time (epoch seconds)."""

    at: float
    value: float


class History:
    """Readings of one figure over the last hour (older ones fall off)."""

    def __init__(self, *, keep_seconds: float = HOUR_SECONDS,
                 now: Callable[[], float] = time.time) -> None:
        self._keep = keep_seconds
        self._now = now
        self._samples: deque[Sample] = deque()

    def add(self, value: float) -> None:
        """Record ``value`` now."""
        now = self._now()
        self._samples.append(Sample(now, value))
        while self._samples and self._samples[0].at < now - self._keep:
            self._samples.popleft()

    def levels(self) -> list[tuple[float, float]]:
        """Every reading as ``(seconds ago, value)``, oldest first (x negative)."""
        now = self._now()
        return [(sample.at - now, sample.value) for sample in self._samples]

    def rates(self) -> list[tuple[float, float]]:
        """The growth per second between consecutive readings of a growing total, as
        ``(seconds ago, per second)`` (a total that fell, a restarted process's, counts
        from 0)."""
        now = self._now()
        pairs = zip(list(self._samples), list(self._samples)[1:], strict=False)
        return [(later.at - now,
                 (later.value - (earlier.value if later.value >= earlier.value else 0))
                 / max(1e-9, later.at - earlier.at))
                for earlier, later in pairs]

    def latest_rate(self) -> float | None:
        """The last rate (None before two readings)."""
        rates = self.rates()
        return rates[-1][1] if rates else None
