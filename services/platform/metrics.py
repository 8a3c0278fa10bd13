"""Prometheus metrics of the game service, served on ``DAST_METRICS_PORT``.

- ``dast_commands_total{game,outcome}``: commands by outcome (accepted, duplicate, and the
  status code name of every refusal);
- ``dast_command_seconds{game}``: latency of SubmitCommand, from request to reply;
- ``dast_appended_events_total{game}``: events appended to the store;
- ``dast_relay_lag_seconds``: time from an append to its arrival on the live bus, as seen
  by this process's subscribers;
- ``dast_open_streams``: ``Subscribe`` streams this process holds open now;
- ``dast_store_batch_writes``: writes (commands' appends, creations) the event store's writer
  committed per transaction: how well group commit gathers what arrives during a commit;
- ``dast_relay_batch_events``: events the relay published per pass (one claim, one mark);
- ``dast_bot_decision_seconds{level}``: how long a bot policy took to choose a move (the bot
  service's, :class:`BotMetrics`).
"""

from __future__ import annotations

import threading
from typing import Any, Final

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

_LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)
_BATCH_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class GameMetrics:
    """The game service's metrics, registered once per registry."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.commands = Counter(
            "dast_commands", "Commands handled, by outcome.", ["game", "outcome"],
            registry=registry,
        )
        self.command_seconds = Histogram(
            "dast_command_seconds", "SubmitCommand latency.", ["game"],
            buckets=_LATENCY_BUCKETS, registry=registry,
        )
        self.appended = Counter(
            "dast_appended_events", "Events appended to the store.", ["game"],
            registry=registry,
        )
        self.relay_lag = Histogram(
            "dast_relay_lag_seconds", "Delay from append to live delivery.",
            buckets=_LATENCY_BUCKETS, registry=registry,
        )
        self.open_streams = Gauge(
            "dast_open_streams", "Subscribe streams open on this process.", registry=registry,
        )
        self.store_batch_writes = Histogram(
            "dast_store_batch_writes", "Writes the event store committed per transaction.",
            buckets=_BATCH_BUCKETS, registry=registry,
        )
        self.relay_batch_events = Histogram(
            "dast_relay_batch_events", "Events the relay published per pass.",
            buckets=_BATCH_BUCKETS, registry=registry,
        )
        self._children: dict[tuple[object, tuple[str, ...]], Any] = {}

    def child(self, metric: Counter | Histogram, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once (``labels`` takes a lock and builds a
        key on every call; the commands path calls it three times per command)."""
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found


_DEFAULT: GameMetrics | None = None
_DEFAULT_LOCK = threading.Lock()


def game_metrics() -> GameMetrics:
    """The process-wide metrics (created on first use, by whichever thread comes first: the
    relay's thread and the store's users may ask at once, and a registry refuses a metric
    registered twice)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = GameMetrics()
    return _DEFAULT


_DECISION_BUCKETS: Final = (
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.5,
)


class BotMetrics:
    """The bot service's metrics, registered once per registry."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.decision_seconds = Histogram(
            "dast_bot_decision_seconds", "Time a bot policy took to choose a move.", ["level"],
            buckets=_DECISION_BUCKETS, registry=registry,
        )


_DEFAULT_BOTS: BotMetrics | None = None


def bot_metrics() -> BotMetrics:
    """The process-wide bot metrics (created on first use)."""
    global _DEFAULT_BOTS
    if _DEFAULT_BOTS is None:
        _DEFAULT_BOTS = BotMetrics()
    return _DEFAULT_BOTS


def serve_metrics(port: int, host: str = "127.0.0.1") -> None:
    """Expose ``/metrics`` over HTTP on ``host:port`` (a daemon thread)."""
    start_http_server(port, addr=host)
