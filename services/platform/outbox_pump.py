"""The loop that empties an outbox onto a bus or feed: when woken, and on a sweep.

A service that records what it must publish in the same transaction as its own change (the
lobby's table updates, the tournaments' logs) publishes it afterwards with an
:class:`OutboxPump`: :meth:`~OutboxPump.wake` after a commit in this process, and a sweep
every ``poll_seconds`` for what another replica committed or a killed process left. A bus
or store that is down only delays the outbox (it keeps everything): the pump logs, waits
``retry_seconds`` and tries again. Repeats (two replicas, a crash between publishing and
marking) are the bus's to drop, by message id.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib

import structlog

from services.platform.bus import raise_if_cancelling


class OutboxPump(abc.ABC):
    """Runs :meth:`publish_pending` whenever woken and every ``poll_seconds``, forever."""

    def __init__(self, *, poll_seconds: float, retry_seconds: float, name: str) -> None:
        self._poll = poll_seconds
        self._retry = retry_seconds
        self._log = structlog.get_logger(component=name)
        self._wake = asyncio.Event()
        self.published = 0
        """What this pump sent (updates, events: as :meth:`publish_once` counts them)."""

    def wake(self, *_: object) -> None:
        """Publish soon (a listener of the commits; its arguments are not needed)."""
        self._wake.set()

    @abc.abstractmethod
    async def publish_once(self) -> int:
        """Publish what the outbox holds and mark it; how much went out.

        :raises Exception: whatever the bus or the store raises when down (nothing marked).
        """

    async def publish_pending(self) -> int:
        """:meth:`publish_once`, counted in :attr:`published`."""
        sent = await self.publish_once()
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
            except Exception as error:  # the bus or the store is down: the outbox keeps all
                self._log.warning("outbox_publish_failed", error=repr(error))
                await asyncio.sleep(self._retry)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)
