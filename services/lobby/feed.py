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
from typing import Final

from services.lobby.store import LobbyStore
from services.platform.outbox_pump import OutboxPump
from services.platform.table_feed import TableFeed

POLL_SECONDS: Final = 2.0
RETRY_SECONDS: Final = 1.0
MAX_ROUNDS: Final = 100
"""Batches (of up to 100 tables) one pass publishes before it lets the next pass go on."""


class FeedPublisher(OutboxPump):
    """Publishes the lobby's recorded table updates to ``feed`` (see the module)."""

    def __init__(self, store: LobbyStore, feed: TableFeed, *,
                 poll_seconds: float = POLL_SECONDS) -> None:
        super().__init__(poll_seconds=poll_seconds, retry_seconds=RETRY_SECONDS,
                         name="lobby-feed")
        self.store = store
        self.feed = feed

    async def publish_once(self) -> int:
        """Publish every version not yet on the feed; how many updates went out."""
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
        return sent
