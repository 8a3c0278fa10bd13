"""Turn timers: when a seat's deadline passes, its bot moves for it, marked automatic.

DESIGN.md "Time": the engine writes ``deadline_ms`` on the last event of a batch that
leaves a seat to act. :class:`TurnTimers` keeps, per game, the latest such deadline
(``pending``) from the events it consumes (``bus.all_events(durable="timers")``: replicas
split the games' events); any later event of the game replaces or clears it. When a
deadline passes, the seat's bot plays through the game service with ``automatic = true``,
``expected_seq`` = the deadline's seq and command id ``timeout:<game_id>:<seq>``: a timer
that fires twice, or two replicas firing, append one command.

Pending deadlines live in memory, so on start :meth:`TurnTimers.restore` rebuilds them from
the event store (:func:`store_deadlines`: the last event of every game that carries a
deadline); a timer pending when its process was killed fires after the restart.

``shift_ms`` moves every firing time (tests use a negative shift so that a 15-second turn
runs out in a fraction of a second without changing the rules' ``turn_seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import grpc
import structlog

from dast.v1 import log_pb2
from engine.registry import GAMES_BY_NAME
from services.bot.client import GameApi, play_turn
from services.bot.heads import sqlite_or_postgres, store_heads
from services.bot.policies import Outcome
from services.bot.seats import SeatDirectory
from services.platform.bus import Bus

_log = structlog.get_logger(component="timers")

_MAX_TURN_STEPS = 20
"""Decisions a timed-out Hand turn may take after the first (lay-offs included)."""


def wall_clock_ms() -> int:
    """Milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, order=True)
class Deadline:
    """The seat to act after ``seq`` of ``game_id`` must act by ``deadline_ms``."""

    deadline_ms: int
    game_id: str
    seq: int


def store_deadlines(url: str) -> list[Deadline]:
    """The deadlines pending in the event store at ``url``: each game's last event's (a
    finished match's last event carries none)."""
    return [
        Deadline(head.event.deadline_ms, head.game_id, head.event.seq)
        for head in store_heads(url) if head.event.deadline_ms > 0
    ]


class TurnTimers:
    """Fires the seats' deadlines (see the module docstring)."""

    def __init__(
        self, api: GameApi, seats: SeatDirectory, *, clock: Callable[[], int] = wall_clock_ms,
        shift_ms: int = 0,
    ) -> None:
        self.api = api
        self.seats = seats
        self._clock = clock
        self._shift_ms = shift_ms
        self.pending: dict[str, Deadline] = {}
        self._last_seq: dict[str, int] = {}
        self._heap: list[tuple[int, Deadline]] = []
        self._wake = asyncio.Event()
        self.fired = 0
        """Automatic moves this timer appended."""

    def restore(self, deadlines: Iterable[Deadline]) -> None:
        """Add deadlines found in the store (after a restart)."""
        for deadline in deadlines:
            self._set(deadline)

    def observe(self, game_id: str, game_type: str, event: log_pb2.Event) -> None:
        """Track ``event`` of ``game_id``: its deadline replaces the game's pending one."""
        if event.seq <= self._last_seq.get(game_id, 0):
            return  # a redelivery
        self._last_seq[game_id] = event.seq
        game = GAMES_BY_NAME.get(game_type)
        if game is not None and game.revealed_seed(event) is not None:
            self.pending.pop(game_id, None)
            self._last_seq.pop(game_id, None)
            return
        if event.deadline_ms > 0:
            self._set(Deadline(event.deadline_ms, game_id, event.seq))
        else:
            self.pending.pop(game_id, None)

    def _set(self, deadline: Deadline) -> None:
        current = self.pending.get(deadline.game_id)
        if current is not None and current.seq >= deadline.seq:
            return
        self.pending[deadline.game_id] = deadline
        heapq.heappush(self._heap, (deadline.deadline_ms + self._shift_ms, deadline))
        self._wake.set()

    async def run(self, bus: Bus, *, durable: str = "timers",
                  restore_from: str | None = None) -> None:
        """Rebuild from the store at ``restore_from`` (if given), then follow ``bus`` and fire
        deadlines, forever (cancel to stop)."""
        if restore_from and sqlite_or_postgres(restore_from):
            self.restore(await asyncio.to_thread(store_deadlines, restore_from))
        firing = asyncio.create_task(self.fire_forever(), name="timers-fire")
        try:
            async for published in bus.all_events(durable=durable):
                self.observe(published.game_id, published.game_type, published.entry.event)
        finally:
            firing.cancel()
            with contextlib.suppress(BaseException):
                await firing

    async def fire_forever(self) -> None:
        """Fire each deadline when its time (plus the shift) comes."""
        while True:
            self._wake.clear()
            now = self._clock()
            while self._heap and self._heap[0][0] <= now:
                _, deadline = heapq.heappop(self._heap)
                if self.pending.get(deadline.game_id) == deadline:
                    await self.fire(deadline)
            delay = (self._heap[0][0] - now) / 1000 if self._heap else 3600.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(delay, 0.001))

    async def fire(self, deadline: Deadline) -> None:
        """Play the bot move of ``deadline`` unless the game moved on (errors are logged).

        In Hand a turn is several decisions (draw, lay melds, discard), each with its own
        deadline; a seat whose time ran out has its whole turn played at once.
        """
        game_id = deadline.game_id
        try:
            public = await self.api.view(game_id, None)
            seat = public.turn
            if public.seq != deadline.seq or seat is None or public.is_over:
                return  # somebody acted meanwhile
            level = await self.seats.timeout_level(game_id, seat, public.view.players[seat])
            outcome = await play_turn(
                self.api, game_id, seat, level, expected_seq=deadline.seq,
                command_id=f"timeout:{game_id}:{deadline.seq}", automatic=True,
            )
            if outcome is not Outcome.PLAYED:
                return
            self.fired += 1
            _log.info("turn_timed_out", game_id=game_id, seq=deadline.seq, seat=seat,
                      level=level)
            for _ in range(_MAX_TURN_STEPS if public.game == "hand" else 0):
                public = await self.api.view(game_id, None)
                if public.turn != seat or public.is_over:
                    break
                outcome = await play_turn(
                    self.api, game_id, seat, level, expected_seq=public.seq,
                    command_id=f"timeout:{game_id}:{public.seq}", automatic=True,
                )
                if outcome is not Outcome.PLAYED:
                    break
        except grpc.aio.AioRpcError as error:
            _log.warning("timer_call_failed", game_id=deadline.game_id,
                         code=error.code().name, details=error.details())
        except Exception:
            _log.exception("timer_failed", game_id=deadline.game_id)
