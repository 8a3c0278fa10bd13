"""Turn timers: when a seat's deadline passes, its bot moves for it, marked automatic.

docs/architecture.md "Time": the engine writes ``deadline_ms`` on the last event of a batch that
leaves a seat to act. :class:`TurnTimers` keeps, per game, the latest such deadline
(``pending``) from the events it consumes (``bus.all_events(durable="timers")``: replicas
split the games' events); any later event of the game replaces or clears it. When a
deadline passes, the seat's bot plays through the game service with ``automatic = true``,
``expected_seq`` = the deadline's seq and command id ``timeout:<game_id>:<seq>``: a timer
that fires twice, or two replicas firing, append one command.

Pending deadlines live in memory, so on start :meth:`TurnTimers.restore` rebuilds them from
the bus (:func:`pending_deadlines` over :meth:`~services.platform.bus.KnowsLastEvents.
last_events`: the last event of every game, where it carries a deadline); a timer pending
when its process was killed fires after the restart. The timers never read the event
store's tables: NATS keeps each game's last message, and the in-process bus asks the store
of its own process.

``shift_ms`` moves every firing time (tests use a negative shift so that a 15-second turn
runs out in a fraction of a second without changing the rules' ``turn_seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import grpc
import structlog

from dast.v1 import log_pb2
from engine.registry import GAMES_BY_NAME
from services.bot.client import GameApi, play_turn
from services.bot.policies import Outcome
from services.bot.seats import SeatDirectory
from services.platform.bus import Bus, KnowsLastEvents, Published, raise_if_cancelling
from services.platform.clock import wall_clock_ms

_log = structlog.get_logger(component="timers")
_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
              grpc.StatusCode.RESOURCE_EXHAUSTED)
_RETRY_MS = 500
"""How soon a deadline whose firing met an unavailable game service fires again."""



@dataclass(frozen=True, order=True)
class Deadline:
    """The seat to act after ``seq`` of ``game_id`` must act by ``deadline_ms``."""

    deadline_ms: int
    game_id: str
    seq: int


def pending_deadlines(last_events: Iterable[Published]) -> list[Deadline]:
    """The deadlines pending after each game's last event (a finished match's last event
    carries none)."""
    return [
        Deadline(last.entry.event.deadline_ms, last.game_id, last.entry.event.seq)
        for last in last_events if last.entry.event.deadline_ms > 0
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

    async def run(self, bus: Bus, *, durable: str = "timers") -> None:
        """Rebuild the pending deadlines from ``bus``'s last events (when it keeps them), then
        follow ``bus`` and fire deadlines, forever (cancel to stop)."""
        events = bus.all_events(durable=durable)  # registered before the look back
        if isinstance(bus, KnowsLastEvents):
            self.restore(pending_deadlines(await bus.last_events()))
        firing = asyncio.create_task(self.fire_forever(), name="timers-fire")
        try:
            async for published in events:
                self.observe(published.game_id, published.game_type, published.entry.event)
        finally:
            firing.cancel()
            with contextlib.suppress(BaseException):
                await firing

    async def fire_forever(self) -> None:
        """Fire each deadline when its time (plus the shift) comes."""
        while True:
            raise_if_cancelling()  # a cancel swallowed by wait_for below must still stop it
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

        A turn may be several decisions (Hand's draw, melds, discard), each with its own
        deadline: a seat whose time ran out has its whole turn (up to the game's
        ``TURN_STEPS`` decisions) played at once.
        """
        game_id = deadline.game_id
        try:
            public = await self.api.view(game_id, None)
            seat = public.turn
            if public.seq != deadline.seq or seat is None or public.is_over:
                return  # somebody acted meanwhile
            level = self.seats.timeout_level(public, seat)
            outcome = await play_turn(
                self.api, game_id, seat, level, expected_seq=deadline.seq,
                command_id=f"timeout:{game_id}:{deadline.seq}", automatic=True,
            )
            if outcome is not Outcome.PLAYED:
                return
            self.fired += 1
            _log.info("turn_timed_out", game_id=game_id, seq=deadline.seq, seat=seat,
                      level=level)
            game = GAMES_BY_NAME.get(public.game)
            for _ in range(game.TURN_STEPS - 1 if game is not None else 0):
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
            if error.code() in _TRANSIENT:
                # The game service is (partly) down: the turn is still due, try again soon
                # (the command id keeps a firing that did land from appending twice).
                heapq.heappush(self._heap, (self._clock() + _RETRY_MS, deadline))
                self._wake.set()
        except Exception:
            _log.exception("timer_failed", game_id=deadline.game_id)
