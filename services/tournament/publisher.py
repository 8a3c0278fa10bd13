"""The tournaments' events on the bus: an outbox relay over the tournament store.

Every tournament's log reaches the bus (its own stream: NATS ``<events stream>_TOURNAMENTS``,
or a second in-process bus) as ``dast.v1.LogEntry`` messages whose event carries the
tournament's event packed in ``Event.other`` (``google.protobuf.Any``), with its seq, time
and chain hash, on subject token ``tournament`` and the tournament id. The store's head row
remembers how far each log got (``published_seq``); :class:`LogPublisher` sends what lies
beyond, after each step (:meth:`LogPublisher.wake`) and on a slow sweep, so a replica that
died between committing and publishing is made good by any other. Replicas may send the same
event twice; the bus drops the repeat by its message id ``<tournament_id>:<seq>``.
"""

from __future__ import annotations

import asyncio
from typing import Final

from google.protobuf import any_pb2

from dast.v1 import log_pb2
from services.platform.bus import Bus
from services.platform.outbox_pump import OutboxPump
from services.tournament.store import StoredEvent, TournamentStore

BUS_TYPE: Final = "tournament"
"""The subject token the tournaments' events travel under."""
_SWEEP_SECONDS: Final = 2.0


def log_entry(stored: StoredEvent, type_url: str) -> log_pb2.LogEntry:
    """A stored tournament event as the bus carries it."""
    event = log_pb2.Event(seq=stored.seq, at_ms=stored.at_ms)
    event.other.CopyFrom(any_pb2.Any(type_url=type_url, value=stored.body))
    return log_pb2.LogEntry(event=event, hash=stored.hash)


class LogPublisher(OutboxPump):
    """Sends every tournament's unpublished events to ``bus`` (see the module docstring)."""

    def __init__(self, store: TournamentStore, bus: Bus, type_url: str) -> None:
        super().__init__(poll_seconds=_SWEEP_SECONDS, retry_seconds=_SWEEP_SECONDS,
                         name="tournament-publisher")
        self.store = store
        self.bus = bus
        self.type_url = type_url

    async def publish_once(self) -> int:
        """Send what the bus lacks of every tournament's log; how many events were sent."""
        sent = 0
        for head in await asyncio.to_thread(self.store.unpublished):
            events = await asyncio.to_thread(
                self.store.load, head.tournament_id, head.published_seq)
            if not events:
                continue
            await self.bus.publish(BUS_TYPE, head.tournament_id,
                                   [log_entry(stored, self.type_url) for stored in events])
            await asyncio.to_thread(self.store.mark_published, head.tournament_id,
                                    events[-1].seq)
            sent += len(events)
        return sent
