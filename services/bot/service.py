"""The bot service: plays the bots' seats through the game service, like any client.

It learns that something happened from the event bus (``bus.all_events(durable="bots")``:
replicas share one durable consumer, so each event wakes one of them; a seat taken over by
a bot is such an event too) and from :meth:`BotService.kick`. Per game, one worker re-reads
the public view (whose turn? who controls that seat, from the log's seat-control events),
asks the :class:`~services.bot.seats.SeatDirectory` whether a bot plays that seat, and if so
plays it with :func:`~services.bot.client.play_turn` (the seat's view
in, one command out) until a person is to act or the match is over. The command id
``bot:<game_id>:<seq>`` and ``expected_seq = seq`` make a move append once even if two
replicas (or a replica and the turn timer) try the same position.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import structlog

from engine.registry import GAMES_BY_NAME
from services.bot.client import GameApi, play_turn, play_view
from services.bot.policies import Outcome
from services.bot.seats import SeatDirectory
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
        self._next_bot: dict[str, int] = {}
        """Per game, the bot seat likely to act next (the one after the last bot move)."""
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
                    outcome = await self._step(game_id)
                except grpc.aio.AioRpcError as error:
                    _log.warning("bot_call_failed", game_id=game_id, code=error.code().name,
                                 details=error.details())
                    if error.code() in _TRANSIENT:
                        # A game replica died under the call, or is restarting: no event
                        # may come to wake this game again, so look again after a pause.
                        retries += 1
                        self._dirty.add(game_id)
                        await asyncio.sleep(min(0.1 * retries, 1.0))
                    continue
                except Exception:
                    _log.exception("bot_failed", game_id=game_id)
                    continue
                if outcome is Outcome.PLAYED:
                    retries = 0
                elif outcome is Outcome.NOT_TO_ACT:
                    continue  # a person is to act, or the match is over: wait for an event
                else:
                    retries += 1  # lost a race: look again, a bounded number of times
                self._dirty.add(game_id)
                await asyncio.sleep(0)  # let other games' workers run
        finally:
            del self._workers[game_id]
            # Woken while finishing (no await since the loop's last check): start again.
            if game_id in self._dirty and retries < self._max_retries:
                self.kick(game_id)
            else:
                self._dirty.discard(game_id)

    async def _step(self, game_id: str) -> Outcome:
        """Play one bot move of ``game_id`` if a bot is to act.

        Whose turn it is comes from the public view, or, right after a bot move, from the
        view of the bot seat expected to act next (every view says whose turn it is): when
        the guess is right that view is the one its policy needs, saving a call.
        """
        guess = self._next_bot.pop(game_id, None)
        first = await self.api.view(game_id, guess)
        if first.is_over:
            self._seen.pop(game_id, None)
            return Outcome.NOT_TO_ACT
        self._seen[game_id] = max(self._seen.get(game_id, 0), first.seq)
        seat = first.turn
        if seat is None:
            return Outcome.NOT_TO_ACT
        players = first.summary.players
        control = self.seats.bot_control(first, seat)
        if control is None:
            return Outcome.NOT_TO_ACT
        command_id = f"bot:{game_id}:{first.seq}"
        if seat == guess:
            outcome = await play_view(self.api, game_id, first, control.level,
                                      command_id=command_id, automatic=control.automatic)
        else:
            outcome = await play_turn(
                self.api, game_id, seat, control.level, expected_seq=first.seq,
                command_id=command_id, automatic=control.automatic,
            )
        if outcome is Outcome.PLAYED:
            self.moves += 1
            following = (seat + 1) % len(players)
            if players[following].is_bot:  # only ever look at a bot's own seat
                self._next_bot[game_id] = following
        return outcome
