"""Prometheus metrics of the stats service (served with the others on ``DAST_METRICS_PORT``).

- ``dast_stats_events_total{outcome}``: deliveries by outcome (``applied`` for the first
  time, ``repeated``: already counted, recognized by the stored seq);
- ``dast_stats_batch_seconds``: time to project and commit one batch;
- ``dast_stats_buffered_events``: events waiting behind a gap in a game's seqs;
- ``dast_stats_repairs_total{outcome}``: games whose log was fetched to fill a gap.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

_BATCH_BUCKETS: Final = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class StatsMetrics:
    """The stats service's metrics, registered once per registry."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.events = Counter("dast_stats_events", "Deliveries projected, by outcome.",
                              ["outcome"], registry=registry)
        self.applied = self.events.labels("applied")
        self.repeated = self.events.labels("repeated")
        self.batch_seconds = Histogram("dast_stats_batch_seconds",
                                       "Time to project and commit a batch of events.",
                                       buckets=_BATCH_BUCKETS, registry=registry)
        self.buffered = Gauge("dast_stats_buffered_events",
                              "Events waiting behind a gap in a game's seqs.", registry=registry)
        self.repairs = Counter("dast_stats_repairs", "Games repaired from their whole log.",
                               ["outcome"], registry=registry)


_DEFAULT: StatsMetrics | None = None


def stats_metrics() -> StatsMetrics:
    """The process-wide stats metrics (created on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = StatsMetrics()
    return _DEFAULT
