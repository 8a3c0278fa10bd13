"""The lobby's table changes onto the tables' feed, from its own outbox.

Every table change is recorded with its ``TableUpdate`` rows in the same transaction as the
table (:mod:`services.lobby.store`); those rows are the outbox. :class:`FeedPublisher`
publishes the versions not yet on the feed (:class:`~services.platform.table_feed.
TableFeed`), oldest first per table, and then moves the table's mark
(``lobby_feed_marks``). A lobby killed between the two publishes those versions again when
it restarts; the feed's message ids make that a no-op within its duplicate window. It runs
when a change is saved in this process (:meth:`FeedPublisher.wake`) and every few seconds
(changes saved by another lobby replica, and what a killed one left).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

import structlog

from dast.v1 import lobby_pb2
from services.lobby.store import LobbyStore
from services.lobby.tables import Update
from services.platform.bus import raise_if_cancelling
from services.platform.table_feed import TableFeed

_log = structlog.get_logger(component="lobby-feed")
POLL_SECONDS: Final = 2.0
RETRY_SECONDS: Final = 1.0
MAX_ROUNDS: Final = 100
"""Batches (of up to 100 tables) one pass publishes before it lets the next pass go on."""


class FeedPublisher:
    """Publishes the lobby's recorded table updates to ``feed`` (see the module)."""

    def __init__(self, store: LobbyStore, feed: TableFeed, *,
                 poll_seconds: float = POLL_SECONDS) -> None:
        self.store = store
        self.feed = feed
        self._poll = poll_seconds
        self._wake = asyncio.Event()
        self.published = 0
        """Updates this publisher sent (tests)."""

    def wake(self, _table: lobby_pb2.Table | None = None,
             _updates: list[Update] | None = None) -> None:
        """Publish soon (a :class:`~services.lobby.changes.Tables` listener)."""
        self._wake.set()

    async def publish_pending(self) -> int:
        """Publish every version not yet on the feed; how many updates went out.

        :raises Exception: whatever the feed raises when it is down (nothing is marked).
        """
        sent = 0
        for _ in range(MAX_ROUNDS):
            versions = await asyncio.to_thread(self.store.unpublished)
            if not versions:
                break
            for updates in versions:
                await self.feed.publish(updates)
                last = updates[-1]
                await asyncio.to_thread(self.store.mark_published, last.table.table_id,
                                        last.version)
                sent += len(updates)
        self.published += sent
        return sent

    async def run(self) -> None:
        """Publish whenever woken, and every ``poll_seconds``, forever (cancel to stop)."""
        while True:
            # asyncio.wait_for (3.11) can swallow a cancel landing as the wake-up comes: a
            # stop must still end this loop.
            raise_if_cancelling()
            self._wake.clear()
            try:
                await self.publish_pending()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the feed is down: the outbox keeps everything
                _log.warning("table_feed_unavailable", error=repr(error))
                await asyncio.sleep(RETRY_SECONDS)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)
