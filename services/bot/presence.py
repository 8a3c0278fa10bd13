"""Takeovers: a seated player gone from every game replica too long gets a bot in the seat.

Game replicas report their players' open streams to a shared presence board
(:mod:`services.platform.presence_kv`: a JetStream key-value bucket, or memory in one
process). :class:`Takeovers` reads every replica's reports and, for a player no replica has
seen for ``grace_ms`` (:func:`~services.platform.presence_kv.away_since`), asks the game
service over gRPC to hand the seat to a bot (``ControlSeat``, reason ``DISCONNECTED``, at the
level of the match's own bots). The game service appends that as an event of the game's log,
which wakes the bot service like any event; the player's next stream, on any replica, gives
the seat back (an event too).

A player who never opened a stream has no report of any replica; the tournament service
publishes on the same board, for every tournament match it creates, a record expecting the
match's players from the moment it exists (:mod:`services.tournament.attendance`), which
reads as streams closed then: a tournament player who does not subscribe within the grace
period is taken over like one whose stream went away, and given the seat back the same way.

Several :class:`Takeovers` (one per bot replica) may run: they see the same board, and the
game service appends one event however many ask at once (a second request changes nothing).
A player who reconnects in the instant a takeover is decided could find their seat taken
while connected; a later sweep sees them present again and gives back any seat it took.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Final, Protocol

import grpc
import structlog

from dast.v1 import log_pb2
from services.bot.policies import SeatView
from services.bot.seats import table_bot_level
from services.platform.clock import wall_clock_ms
from services.platform.presence_kv import PresenceBoard, away_since

_log = structlog.get_logger(component="presence")

_FINAL_CODES = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION,
                          grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED})
"""Answers after which asking again about the same absence is pointless."""
CALL_SECONDS: Final = 2.0
"""The longest a takeover waits for one answer of the game service (see :class:`Takeovers`);
GetView and ControlSeat take milliseconds."""
CONCURRENT_GAMES: Final = 32
"""How many games one sweep calls the game service about at once (see :meth:`Takeovers.sweep`)."""


class SeatControlApi(Protocol):
    """The game-service calls a takeover needs."""

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        """GetView for ``seat`` (None: the public view)."""
        ...

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> bool:
        """ControlSeat; False when nothing changed."""
        ...


class Takeovers:
    """Hands the seats of players away from every replica longer than ``grace_ms`` to bots.

    ``stale_ms``: how old a replica's report may be before its open streams count as gone
    (a replica killed mid-match); a few of the reporters' heartbeats.

    ``call_seconds`` bounds each call to the game service. The calls go to any game
    replica, and the replica that froze (the very reason its players' seats are taken over)
    still accepts connections until keepalive pings give it up: a call sent there would hold
    its game's takeover for the whole freeze. Cut short, it is tried again at the next
    sweep, which the channel sends to another replica. ``concurrent_games``: how many games
    a sweep calls about at once.
    """

    def __init__(self, board: PresenceBoard, api: SeatControlApi, *, grace_ms: int = 15_000,
                 stale_ms: int = 15_000, call_seconds: float = CALL_SECONDS,
                 concurrent_games: int = CONCURRENT_GAMES,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        if concurrent_games <= 0:
            raise ValueError("concurrent_games must be positive")
        self.board = board
        self.api = api
        self.grace_ms = grace_ms
        self.stale_ms = stale_ms
        self.call_seconds = call_seconds
        self.concurrent_games = concurrent_games
        self._clock = clock
        self._handled: dict[tuple[str, str], int] = {}
        """(game, player) → the absence (its start, ms) already acted on."""
        self._taken: dict[tuple[str, str], int] = {}
        """(game, player) → the seat this sweeper handed to a bot."""
        self.taken_over = 0
        """Seats this sweeper handed to bots (for tests)."""

    async def sweep(self) -> int:
        """Act once on the board as it is now; return how many seats were taken over.

        The games that need a call are handled side by side (at most ``concurrent_games``
        at once), each game's players one after the other: a call that waits its whole
        ``call_seconds`` on a frozen replica holds back its own game only, so a sweep with
        thousands of players due lasts about one call, not one call per player.
        """
        records = await self.board.records()
        now = self._clock()
        heard = self.board.last_heard_ms()
        if heard is None or now - heard > self.stale_ms:
            # Cut off from the board (NATS away): every report would look like a dead
            # replica's, and every connected player like one gone. Wait until it is back.
            _log.warning("presence_board_silent", last_heard_ms=heard)
            return 0
        players = {(r.game_id, p) for r in records for p in (*r.open, *r.closed)}
        # game → (player, the absence's start; None: give the seat back), in player order
        due: dict[str, list[tuple[str, int | None]]] = collections.defaultdict(list)
        for key in sorted(players):
            game_id, player_id = key
            since = away_since(records, game_id, player_id, now_ms=now, stale_ms=self.stale_ms)
            if since is None:
                self._handled.pop(key, None)
                if key in self._taken:
                    due[game_id].append((player_id, None))
            elif now - since >= self.grace_ms and self._handled.get(key) != since:
                due[game_id].append((player_id, since))
        slots = asyncio.Semaphore(self.concurrent_games)
        outcomes = await asyncio.gather(
            *(self._act_on_game(game_id, actions, slots) for game_id, actions in due.items()),
            return_exceptions=True,
        )
        taken = 0
        for game_id, outcome in zip(due, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                # One game's surprise must not stop the others' takeovers; it is asked
                # again at the next sweep.
                _log.error("takeover_failed", game_id=game_id, exc_info=outcome)
            else:
                taken += outcome
        for key in set(self._handled) - players:
            del self._handled[key]  # the board forgot them (the game ended long ago)
        for key in set(self._taken) - players:
            del self._taken[key]
        self.taken_over += taken
        return taken

    async def _act_on_game(self, game_id: str, actions: list[tuple[str, int | None]],
                           slots: asyncio.Semaphore) -> int:
        """Take over or give back the seats of one game's players (``actions``, from
        :meth:`sweep`); return how many seats were taken over."""
        taken = 0
        async with slots:
            for player_id, since in actions:
                key = (game_id, player_id)
                if since is None:
                    await self._give_back(key)
                    continue
                try:
                    async with asyncio.timeout(self.call_seconds):
                        if await self._take_over(game_id, player_id):
                            taken += 1
                except TimeoutError:
                    _log.warning("takeover_failed", game_id=game_id, code="TIMEOUT")
                    continue  # a frozen replica took the call: try again next sweep
                except grpc.aio.AioRpcError as error:
                    if error.code() not in _FINAL_CODES:
                        _log.warning("takeover_failed", game_id=game_id, code=error.code().name)
                        continue  # the game service is unreachable: try again next sweep
                self._handled[key] = since
        return taken

    async def _take_over(self, game_id: str, player_id: str) -> bool:
        public = await self.api.view(game_id, None)
        seat = next((s for s, p in enumerate(public.summary.players)
                     if p.player_id == player_id and not p.is_bot), None)
        if seat is None or public.is_over:
            return False
        if seat < len(public.seat_control) and public.seat_control[seat].bot:
            return False  # a bot stands in already (the player left, or another sweeper)
        changed = await self.api.control_seat(
            game_id, seat, bot=True, bot_level=table_bot_level(public),
            reason=log_pb2.SEAT_CONTROL_REASON_DISCONNECTED,
        )
        if changed:
            self._taken[(game_id, player_id)] = seat
            _log.info("seat_taken_over", game_id=game_id, player_id=player_id, seat=seat)
        return changed

    async def _give_back(self, key: tuple[str, str]) -> None:
        """The player is present again though this sweeper took their seat: if no stream of
        theirs gave it back already (the reconnection raced the takeover), give it back."""
        game_id, _ = key
        seat = self._taken.pop(key)
        try:
            async with asyncio.timeout(self.call_seconds):
                public = await self.api.view(game_id, None)
                holder = public.seat_control[seat] if seat < len(public.seat_control) else None
                if public.is_over or holder is None or not holder.bot:
                    return
                if holder.reason != log_pb2.SEAT_CONTROL_REASON_DISCONNECTED:
                    return  # taken for another reason since (the player left the table)
                await self.api.control_seat(game_id, seat, bot=False, bot_level="",
                                            reason=log_pb2.SEAT_CONTROL_REASON_RECONNECTED)
        except TimeoutError:
            self._taken[key] = seat  # a frozen replica took the call: try again next sweep
            _log.warning("seat_return_failed", game_id=game_id, code="TIMEOUT")
        except grpc.aio.AioRpcError as error:
            if error.code() not in _FINAL_CODES:
                self._taken[key] = seat  # try again next sweep
            _log.warning("seat_return_failed", game_id=game_id, code=error.code().name)

    async def sweep_forever(self, period_seconds: float | None = None) -> None:
        """Sweep every ``period_seconds`` (a quarter of the grace by default), forever."""
        period = period_seconds or max(self.grace_ms / 4000, 0.05)
        while True:
            try:
                await self.sweep()
            except Exception:
                _log.exception("presence_sweep_failed")
            await asyncio.sleep(period)
