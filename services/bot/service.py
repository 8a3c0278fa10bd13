"""The bot service: plays the bots' seats through the game service, like any client.

It learns that something happened from the event bus (``bus.all_events(durable="bots")``:
replicas share one durable consumer, so each event wakes one of them; a seat taken over by
a bot is such an event too) and from :meth:`BotService.kick`. Woken for a game where a bot
plays a seat (one GetView: the public view, who controls each seat), one worker holds the
replica's Play stream of the game (:mod:`services.bot.streams`): the stream tells each turn
with the view of the seat to act, the :class:`~services.bot.seats.SeatDirectory` says
whether a bot plays that seat, and if so its command goes on the same stream
(:func:`~services.bot.client.play_view`: the seat's view in, one command out), until the
match is over or no seat is a bot's any more. A move costs no call. The command id
``bot:<game_id>:<seq>`` and ``expected_seq = seq`` make a move append once even if two
replicas (or a replica and the turn timer) try the same position, or the stream sends it
again after a reconnection.

Several replicas may each be woken for the same game and each hold a stream of it; they then
decide the same moves, and the command ids keep each move to one append (as the workers of
the unary path raced).
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import structlog

from engine.registry import GAMES_BY_NAME
from services.bot.client import GameApi, play_view
from services.bot.policies import Outcome, SeatView
from services.bot.seats import SeatDirectory
from services.bot.streams import UNTOLD, GameStream, Turn, Untold
from services.platform.bus import Bus, KnowsLastEvents, Published

_log = structlog.get_logger(component="bots")
_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
              grpc.StatusCode.RESOURCE_EXHAUSTED)


def is_final(published: Published) -> bool:
    """Whether ``published`` ends its match (its event reveals the server seed)."""
    game = GAMES_BY_NAME.get(published.game_type)
    return game is not None and game.revealed_seed(published.entry.event) is not None


class BotService:
    """Plays bot seats; :meth:`run` follows the bus, :meth:`kick` wakes one game."""

    def __init__(self, api: GameApi, seats: SeatDirectory, *, max_retries: int = 20) -> None:
        self.api = api
        self.seats = seats
        self._max_retries = max_retries
        """Lost races in a row after which a worker waits for the next event."""
        self._dirty: set[str] = set()
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._seen: dict[str, int] = {}
        """The latest seq a worker looked at, per game: older bus events wake nobody."""
        self.moves = 0
        """Commands this service appended (for tests and benchmarks)."""

    async def run(self, bus: Bus, *, durable: str = "bots") -> None:
        """Wake every unfinished game among ``bus``'s last events (when it keeps them: a bot
        may be waiting since before a restart, its event acknowledged but not acted on),
        then the game of every event on ``bus``, forever (cancel to stop)."""
        try:
            events = bus.all_events(durable=durable)  # registered before the look back
            if isinstance(bus, KnowsLastEvents):
                for last in await bus.last_events():
                    if not is_final(last):
                        self.kick(last.game_id)
            async for published in events:
                if published.entry.event.seq > self._seen.get(published.game_id, 0):
                    self.kick(published.game_id)
        finally:
            await self.stop()

    def kick(self, game_id: str) -> None:
        """Look at ``game_id`` again soon (its worker starts if it is not running)."""
        self._dirty.add(game_id)
        if game_id not in self._workers:
            self._workers[game_id] = asyncio.create_task(self._work(game_id),
                                                         name=f"bot:{game_id}")

    async def stop(self) -> None:
        """Cancel every worker."""
        workers = list(self._workers.values())
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with contextlib.suppress(BaseException):
                await worker

    async def idle(self) -> None:
        """Return once no worker runs (tests)."""
        while self._workers:
            await asyncio.gather(*self._workers.values(), return_exceptions=True)

    async def _work(self, game_id: str) -> None:
        retries = 0
        try:
            while game_id in self._dirty and retries < self._max_retries:
                self._dirty.discard(game_id)
                try:
                    transient = await self._play(game_id)
                except grpc.aio.AioRpcError as error:
                    _log.warning("bot_call_failed", game_id=game_id, code=error.code().name,
                                 details=error.details())
                    transient = error.code() in _TRANSIENT
                except Exception:
                    _log.exception("bot_failed", game_id=game_id)
                    continue
                if transient:
                    # A game replica died under the call, or the game service is away for
                    # longer than the stream waited: no event may come to wake this game
                    # again, so look again after a pause.
                    retries += 1
                    self._dirty.add(game_id)
                    await asyncio.sleep(min(0.1 * retries, 1.0))
                else:
                    retries = 0
        finally:
            del self._workers[game_id]
            # Woken while finishing (no await since the loop's last check): start again.
            if game_id in self._dirty and retries < self._max_retries:
                self.kick(game_id)
            else:
                self._dirty.discard(game_id)

    async def _play(self, game_id: str) -> bool:
        """Play ``game_id``'s bot seats on the replica's stream of the game for as long as
        the match has a seat a bot plays; True when the stream gave up on an error worth
        trying again (the game service away).

        The public view (a GetView) says whether a bot plays any seat and who controls each
        seat as of its seq; when a bot is to act, a GetView of its seat is the first turn.
        From then on the stream tells each turn with the view of the seat to act, and the
        seat's bot, if a bot plays it, sends its command on it. When the
        stream may not tell a turn (:data:`~services.bot.streams.UNTOLD`: it was opened
        again, or a feed lost track), GetView tells it once more.

        :raises grpc.aio.AioRpcError: as GetView fails.
        """
        public = await self.api.view(game_id, None)
        if public.is_over or not _has_bot(public):
            self._seen.pop(game_id, None)
            return False
        async with self.api.streams.use(game_id, after_seq=public.seq,
                                        seat_control=public.seat_control) as stream:
            turn: Turn | Untold | None = UNTOLD  # the first from GetView: the view held
            held_view: SeatView | None = public
            handled = 0
            refused = 0  # transient refusals of the same turn in a row
            while True:
                if turn is UNTOLD:
                    turn, handled = await self._fetched_turn(game_id, stream, held_view)
                    held_view = None
                if turn is None:
                    turn = await stream.next_turn(handled)
                    if turn is None:
                        break  # the match is over, or the stream gave up
                    if turn is UNTOLD:
                        continue
                handled = max(handled, turn.seq)
                self._seen[game_id] = max(self._seen.get(game_id, 0), turn.seq)
                if not _has_bot(turn.view):
                    return False  # the players are all back: a takeover event wakes it
                control = self.seats.bot_control(turn.view, turn.seat)
                if control is None:
                    turn = None
                    continue  # a person is to act: wait for the next turn
                try:
                    outcome = await play_view(
                        self.api, game_id, turn.view, control.level,
                        command_id=f"bot:{game_id}:{turn.seq}", automatic=control.automatic,
                    )
                except grpc.aio.AioRpcError as error:
                    _log.warning("bot_command_failed", game_id=game_id,
                                 code=error.code().name, details=error.details())
                    if error.code() not in _TRANSIENT:
                        turn = None
                        continue  # not to be played as it is: wait for the next turn
                    # The store away for a moment, the caller's rate, or no outcome in
                    # time: nothing may be appended to tell a next turn, so play this one
                    # again after a pause (the same command id: applied once at most),
                    # unless the stream tells a newer one meanwhile.
                    refused += 1
                    if refused > self._max_retries:
                        return True
                    await asyncio.sleep(min(0.1 * refused, 1.0))
                    if stream.turn is not None and stream.turn.seq > turn.seq:
                        turn = stream.turn
                    continue
                refused = 0
                turn = None
                if outcome is Outcome.PLAYED:
                    self.moves += 1
            failure = stream.failure
        if failure is None:
            self._seen.pop(game_id, None)  # the match is over
            return False
        _log.warning("bot_stream_ended", game_id=game_id, code=failure.code().name,
                     details=failure.details())
        return failure.code() in _TRANSIENT

    async def _fetched_turn(self, game_id: str, stream: GameStream,
                            public: SeatView | None) -> tuple[Turn | None, int]:
        """The turn as GetView tells it (from ``public``, the public view, when in hand):
        the bot seat to act and its view, or None when no bot is to act; and the seq it is
        as of (a turn the stream tells later is newer).

        :raises grpc.aio.AioRpcError: as GetView fails.
        """
        if public is None:
            public = await self.api.view(game_id, None)
        stream.know_seat_control(public.seat_control, public.seq)
        self._seen[game_id] = max(self._seen.get(game_id, 0), public.seq)
        seat = public.turn
        if public.is_over or seat is None or self.seats.bot_control(public, seat) is None:
            return None, public.seq
        own = await self.api.view(game_id, seat)
        return Turn(own.seq, seat, own), own.seq


def _has_bot(view: SeatView) -> bool:
    """Whether a bot plays any seat of the match (from the start, or standing in)."""
    return any(player.is_bot for player in view.summary.players) or any(
        holder.bot for holder in view.seat_control)
