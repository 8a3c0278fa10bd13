"""The work budget of one bot decision: a sample count, and optionally a wall-clock limit.

The engine never reads a clock (docs/architecture.md), so a time limit comes with a clock the
caller injects (``time.perf_counter`` in the bot service, a fake in tests). With no clock
only the sample count bounds the work, which makes a seeded decision reproducible.

>>> ticks = iter([0.0, 0.05, 0.10, 0.16])
>>> stop = Budget(samples=100, time_ms=200, clock=lambda: next(ticks)).stopper()
>>> stop(0), stop(1), stop(2)  # the first sample always runs; then the clock decides
(False, False, False)
>>> stop(3)  # at 160 ms, a fourth 60 ms sample would end past 200 ms
True
>>> Budget(samples=2).stopper()(2)
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

DEFAULT_TIME_MS: Final = 200.0
"""The default time per move (the bot service's budget)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """How much work one decision may take.

    ``samples`` always caps the samples (sampled deals, rollouts). With ``clock`` (a
    function returning seconds), the search also stops once ``time_ms`` have passed since
    :meth:`stopper` was called; at least one sample always runs.
    """

    samples: int
    time_ms: float = DEFAULT_TIME_MS
    clock: Callable[[], float] | None = None

    def stopper(self) -> Callable[[int], bool]:
        """Start the decision's clock; the result tells, from the samples done so far,
        whether to stop. With a clock it stops as soon as another sample as long as the
        last one would end past the deadline, so a decision overruns its time only when a
        sample suddenly takes longer than the one before."""
        samples, clock = self.samples, self.clock
        if clock is None:
            return lambda done: done >= samples
        started = clock()
        deadline = started + self.time_ms / 1000.0
        last = [started]

        def stop(done: int) -> bool:
            if done >= samples:
                return True
            if done == 0:
                return False
            now = clock()
            sample, last[0] = now - last[0], now
            return now + sample >= deadline

        return stop

    def deadline(self) -> Callable[[], bool]:
        """Start the decision's clock; the result tells whether ``time_ms`` have passed (never,
        without a clock). For work that must stop inside a sample, where :meth:`stopper`
        only stops between samples."""
        clock = self.clock
        if clock is None:
            return _never
        ends = clock() + self.time_ms / 1000.0
        return lambda: clock() >= ends


def _never() -> bool:
    return False
