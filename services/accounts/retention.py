"""Retention of guests: a guest who has not signed in for the idle age is erased as a
deleted account is (:meth:`~services.accounts.moderation.Moderation.erase`).

A guest is a player of this service with no identity linked: nothing but a device secret
leads to them, and a device that has not signed in for so long (``DAST_GUEST_IDLE_DAYS``,
10 by default) has most likely lost the app. A player who linked an identity is an
account, and is kept however long they stay away. A sign-in or a session's refresh counts
as a sign-in (:meth:`~services.accounts.store.AccountsStore.idle_guests`).
"""

from __future__ import annotations

import asyncio
from typing import Final

import structlog

from services.accounts.moderation import Moderation

DAY_MS: Final = 86_400_000
SWEEP_SECONDS: Final = 3600.0
"""How often idle guests are looked for."""
BATCH: Final = 500
"""Guests erased per look (the next look finds the rest)."""
_log = structlog.get_logger(component="retention")


class GuestRetention:
    """Erases idle guests."""

    def __init__(self, moderation: Moderation, *, idle_days: float) -> None:
        self.moderation = moderation
        self.idle_ms = int(idle_days * DAY_MS)

    async def erase_idle_guests(self, limit: int = BATCH) -> list[str]:
        """Erase up to ``limit`` guests idle for longer than the idle age; their ids."""
        now = self.moderation.clock()
        idle = await asyncio.to_thread(self.moderation.sessions.store.idle_guests,
                                       now - self.idle_ms, now, limit)
        for player_id in idle:
            await self.moderation.erase(player_id, actor=None)
            _log.info("idle_guest_erased", player_id=player_id)
        return idle

    async def run(self, period_seconds: float = SWEEP_SECONDS) -> None:
        """:meth:`erase_idle_guests` now and every ``period_seconds``, forever."""
        while True:
            try:
                while len(await self.erase_idle_guests()) == BATCH:
                    pass
            except Exception:
                _log.exception("idle_guests_not_erased")
            await asyncio.sleep(period_seconds)
