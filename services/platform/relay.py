"""The relay: moves appended events from the store's outbox to the bus.

DESIGN.md "Event store and bus": commands only write the store, so games go on while NATS
is down; the relay publishes what was appended and catches up after an outage. Each pass
claims games with unrelayed events (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so replicas split
the backlog and one game's events leave in seq order from one relay), publishes them, and
marks them relayed. A relay that dies between publishing and marking makes the next one
resend; the bus drops the resend by its ``Nats-Msg-Id``.
"""

from __future__ import annotations

import asyncio
import logging

from services.platform.bus import Bus, game_type_name, raise_if_cancelling
from services.platform.store import OutboxStore, Unrelayed

log = logging.getLogger(__name__)


class Relay:
    """Publishes the store's unrelayed events on the bus, forever, with backoff on errors.

    Call :meth:`notify` after each append so that live streams see the events at once; a
    periodic poll (``poll_seconds``) picks up what other replicas appended or gave up on.
    """

    def __init__(
        self,
        store: OutboxStore,
        bus: Bus,
        *,
        poll_seconds: float = 1.0,
        max_games: int = 100,
        max_events: int = 500,
        lease_ms: int = 30_000,
        min_backoff_seconds: float = 0.05,
        max_backoff_seconds: float = 5.0,
    ) -> None:
        self._store = store
        self._bus = bus
        self._poll = poll_seconds
        self._max_games = max_games
        self._max_events = max_events
        self._lease_ms = lease_ms
        self._min_backoff = min_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._wake = asyncio.Event()
        self.published_events = 0
        """How many events this relay has published (resends included)."""
        self.failures = 0
        """How many passes failed to publish (the bus was down)."""

    def notify(self) -> None:
        """Wake the relay now: something was appended."""
        self._wake.set()

    async def run(self) -> None:
        """Relay until cancelled."""
        backoff = self._min_backoff
        while True:
            raise_if_cancelling()  # a cancel swallowed inside the bus still stops the relay
            self._wake.clear()
            try:
                relayed = await self.relay_once()
            except Exception as error:  # the bus (or the store) is down: retry later
                self.failures += 1
                log.warning("relay pass failed, retrying in %.2fs: %r", backoff, error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            backoff = self._min_backoff
            if relayed:
                continue  # there may be more behind what one pass claims
            await self._wait_for_wake()

    async def _wait_for_wake(self) -> None:
        """Sleep until :meth:`notify` or ``poll_seconds`` (asyncio.wait never eats a cancel)."""
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=self._poll)
        finally:
            waiter.cancel()

    async def relay_once(self) -> int:
        """Claim, publish and mark one batch; return the number of events published.

        :raises Exception: what the bus raised; the claims it could not finish are released.
        """
        claimed = await asyncio.to_thread(
            self._store.claim_unrelayed,
            max_games=self._max_games,
            max_events=self._max_events,
            lease_ms=self._lease_ms,
        )
        published = 0
        marks: list[tuple[str, int]] = []  # marked together: one store transaction per pass
        for index, game in enumerate(claimed):
            try:
                await self._publish(game)
            except BaseException:
                unfinished = [other.game_id for other in claimed[index:]]
                await asyncio.shield(self._finish(marks, unfinished))
                raise
            if game.entries:
                marks.append((game.game_id, game.entries[-1].event.seq))
            published += len(game.entries)
        await self._finish(marks, [])
        return published

    async def _finish(self, marks: list[tuple[str, int]], unfinished: list[str]) -> None:
        """Mark what reached the bus as relayed and release the claims not published."""
        if marks:
            await asyncio.to_thread(self._store.mark_relayed_many, marks)
        if unfinished:
            await asyncio.to_thread(self._store.release, unfinished)

    async def _publish(self, game: Unrelayed) -> None:
        if game.entries:
            await self._bus.publish(game_type_name(game.game_type), game.game_id, game.entries)
            self.published_events += len(game.entries)
