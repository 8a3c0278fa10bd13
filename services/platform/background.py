"""Work started from a callback that cannot wait for it.

A ban listener (:data:`services.platform.bans.BanListener`) is called synchronously when the
ban list changes, and each service answers with store work or calls that take time. The
event loop keeps only a weak reference to a task, so a task nobody holds may be collected
before it ends; :class:`BackgroundTasks` holds each one until it has, and logs what it
raised instead of leaving it unretrieved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

from services.platform.bus import cancel_and_wait

_log = structlog.get_logger(component="background")


class BackgroundTasks:
    """The tasks one service started from callbacks, each held until it ends."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        """Run ``work`` as a task of the running loop, named ``name`` (in logs)."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("background_task_failed", task=task.get_name(),
                       exc_info=task.exception())

    async def wait(self) -> None:
        """Wait until every task started so far has ended (what tests wait for)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def cancel(self) -> None:
        """Cancel every task still running and wait until each has ended."""
        await cancel_and_wait(list(self._tasks))
