"""The stats service's feed: the games' events from the bus, in batches acknowledged after
their commit.

:meth:`services.platform.bus.Bus.all_events` acknowledges an event when its consumer asks
for the next one, which suits a consumer that commits every event on its own. The stats
projection commits a whole batch at once (:mod:`services.stats.projector`), so it must
acknowledge only once the batch is stored, or a crash between asking and committing would
lose what was acknowledged:

- with NATS (:class:`NatsBatches`), a durable JetStream pull consumer of the bus's own stream
  fetches up to ``max_batch`` messages; each is acknowledged when the projection says it
  is settled (stored, or a repeat). Unacknowledged ones come back after the ack wait, so a
  process killed mid-batch loses nothing and the stored ``(game_id, seq)`` drops what was
  already counted.
- in one process (:class:`PumpedBatches`, the in-process bus, or any other bus), a task
  reads :meth:`~services.platform.bus.Bus.all_events` into a queue and a batch is whatever
  the queue holds. That bus keeps nothing across a restart anyway; what a restart misses
  the projection repairs from the game service (its gaps).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final, Protocol

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.platform.bus import Bus
from services.platform.bus_nats import NatsBus, pull_batches
from services.stats.projector import Delivery

DEFAULT_MAX_BATCH: Final = 2_000
ACK_WAIT_SECONDS: Final = 5.0
"""How long JetStream waits for an acknowledgement before delivering a message again: how
long a restarted process waits for what the killed one had fetched. Short, because a
repeat costs nothing (the stored seq drops it) while a long wait delays the catch-up."""
_log = structlog.get_logger(component="stats")


class Batches(Protocol):
    """Batches of deliveries from the bus (each acknowledged by its ``ack`` once settled)."""

    def batches(self) -> AsyncIterator[list[Delivery]]:
        """The deliveries, a non-empty batch at a time, until the bus closes."""
        ...


class PumpedBatches:
    """Batches from :meth:`Bus.all_events` through a queue (nothing to acknowledge)."""

    def __init__(self, bus: Bus, durable: str, *, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        self._events = bus.all_events(durable=durable)  # registered now, before any publish
        self._max = max_batch

    async def batches(self) -> AsyncIterator[list[Delivery]]:
        """See :class:`Batches`."""
        # A list and a wake-up rather than a queue: the pump appends, a batch takes the
        # whole list at once (two queue operations per event cost more than projecting it).
        waiting: list[Delivery] = []
        arrived = asyncio.Event()
        ended = False

        async def pump() -> None:
            nonlocal ended
            try:
                async for published in self._events:
                    waiting.append(Delivery(published))
                    if len(waiting) == 1:
                        arrived.set()
            finally:
                ended = True
                arrived.set()

        pumping = asyncio.create_task(pump(), name="stats-feed")
        try:
            while True:
                await arrived.wait()
                arrived.clear()
                while waiting:
                    batch = waiting[:self._max]
                    del waiting[:self._max]
                    yield batch
                if ended:
                    return
        finally:
            pumping.cancel()
            with contextlib.suppress(BaseException):
                await pumping


class NatsBatches:
    """Batches from a durable JetStream consumer of the bus's stream, acknowledged per
    message once settled.

    The consumer allows ``max_batch`` × 4 unacknowledged messages, so the events buffered
    behind a gap do not stall the feed; those come back after ``ack_wait_seconds`` while
    they are unacknowledged (and then replace their buffered copy, or are repeats).
    """

    def __init__(self, bus: NatsBus, durable: str, *, max_batch: int = DEFAULT_MAX_BATCH,
                 ack_wait_seconds: float = ACK_WAIT_SECONDS,
                 fetch_timeout_seconds: float = 1.0) -> None:
        self._bus = bus  # its URL, stream and subjects; the consumer has its own connection
        self._durable = durable
        self._max = max_batch
        self._ack_wait = ack_wait_seconds
        self._fetch_timeout = fetch_timeout_seconds

    async def batches(self) -> AsyncIterator[list[Delivery]]:
        """See :class:`Batches` (re-creates the consumer after errors, like the bus)."""
        connection = await nats.connect(
            self._bus.url, name="stats", allow_reconnect=True, max_reconnect_attempts=-1,
            reconnect_time_wait=0.5, connect_timeout=2, error_cb=_quiet)
        jetstream = connection.jetstream(timeout=5)
        pulls = pull_batches(lambda: self._subscribe(jetstream), self._max,
                             timeout=self._fetch_timeout, name="stats")
        try:
            async with contextlib.aclosing(pulls):
                async for msgs in pulls:
                    batch = []
                    for msg in msgs:
                        try:
                            published = self._bus.published(msg)
                        except Exception:  # not a log entry: nothing to count, never again
                            _log.warning("stats_bad_message", subject=msg.subject)
                            with contextlib.suppress(nats.errors.Error):
                                await msg.term()
                            continue
                        batch.append(Delivery(published, msg.ack))
                    if batch:
                        yield batch
        finally:
            with contextlib.suppress(Exception):
                await connection.close()

    async def _subscribe(self, jetstream: JetStreamContext) -> JetStreamContext.PullSubscription:
        config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                                ack_wait=self._ack_wait, max_ack_pending=self._max * 4)
        try:
            return await jetstream.pull_subscribe(
                f"{self._bus.subject_prefix}.>", durable=self._durable,
                stream=self._bus.stream, config=config)
        except nats.js.errors.NotFoundError as missing:  # no stream yet: no relay ran yet
            raise nats.errors.Error(f"stream {self._bus.stream} not found") from missing


async def _quiet(error: Exception) -> None:
    """nats-py reports every failed reconnect; the bus logs outages already."""
    _log.debug("stats_nats", error=repr(error))


def open_batches(bus: Bus, durable: str, *, max_batch: int = DEFAULT_MAX_BATCH) -> Batches:
    """The feed of ``bus`` for the durable consumer ``durable``."""
    if isinstance(bus, NatsBus):
        return NatsBatches(bus, durable, max_batch=max_batch)
    return PumpedBatches(bus, durable, max_batch=max_batch)
