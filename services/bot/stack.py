"""The bot service's process part: the bots and the turn timers following the bus.

:class:`BotWorkers` is what a process running the bot service starts (the composition root,
:mod:`services.compose`, builds it): the :class:`~services.bot.service.BotService` and the
:class:`~services.bot.timers.TurnTimers`, each on its own durable consumer of the games'
events (replicas share them), both calling the game service through a
:class:`~services.bot.client.GameApi`. They hold nothing but memory, rebuilt from the bus's
last events when they start, so a bot process may be killed at any line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from services.bot.client import GameApi
from services.bot.seats import SeatDirectory
from services.bot.service import BotService
from services.bot.timers import TurnTimers
from services.platform.bus import Bus
from services.platform.clock import Clock, wall_clock_ms


@dataclass
class BotWorkers:
    """The bots and timers of one process (``bots``/``timers`` choose which run)."""

    api: GameApi
    seats: SeatDirectory
    bus: Bus
    bots_on: bool = field(default=True, kw_only=True)
    timers_on: bool = field(default=True, kw_only=True)
    timer_shift_ms: int = field(default=0, kw_only=True)
    """Added to every deadline before it fires (tests: negative, so turns run out fast)."""
    durable_prefix: str = field(default="", kw_only=True)
    """Prefix of the durable consumer names (``<prefix>bots``, ``<prefix>timers``)."""
    clock: Clock = field(default=wall_clock_ms, kw_only=True)
    """The clock the timers compare deadlines with."""
    bots: BotService | None = field(init=False, default=None)
    timers: TurnTimers | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.bots_on:
            self.bots = BotService(self.api, self.seats)
        if self.timers_on:
            self.timers = TurnTimers(self.api, self.seats, shift_ms=self.timer_shift_ms,
                                     clock=self.clock)

    def start(self) -> list[asyncio.Task[None]]:
        """Start following the bus; the tasks to cancel on shutdown."""
        tasks = []
        if self.bots is not None:
            tasks.append(asyncio.create_task(
                self.bots.run(self.bus, durable=f"{self.durable_prefix}bots"), name="bots"))
        if self.timers is not None:
            tasks.append(asyncio.create_task(
                self.timers.run(self.bus, durable=f"{self.durable_prefix}timers"),
                name="timers"))
        return tasks
