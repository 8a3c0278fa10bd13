"""A bot replica's Play streams: one per game it acts in, for all of that game's seats.

A bot, a turn timer or a seat taken over acts through :class:`GameStream`, the replica's
one ``GameService.Play`` stream to the game, opened with the replica's service token and
``seat_to_act_views``: the game's events arrive as spectators see them, each message telling
a turn carries the view of the seat to act (what a bot's policy reads), and every command
names the seat it is for. So a move costs a message each way on an open stream instead of a
GetView and a SubmitCommand call.

The stream outlives what the unary path survived, call by call:

- it ends with an error a call could end with (the game replica died: UNAVAILABLE; the
  client read too slowly: RESOURCE_EXHAUSTED ``stream_backlog``; the token expired; a
  frozen replica that sends no heartbeat for :data:`SILENT_SECONDS`): it is opened again,
  on whichever replica the channel picks, from the last event received, and every command
  without an outcome is sent again with its command id, which gives it its first outcome:
  applied once; the bot then asks GetView for the turn once (:meth:`GameStream.next_turn`),
  as any client does after opening a stream;
- its token is renewed on the stream (``PlayRenewal``) before it expires;
- a game that does not exist, or a caller refused, ends it for good (:attr:`GameStream.
  failure`); so do :data:`OPEN_ATTEMPTS` failed openings in a row (the game service away
  for longer than the unary path's retries waited): the bus or a timer wakes the game again.

Streams are counted by who uses them (:meth:`GameStreams.use`): a bot's worker for as long
as the match has a seat a bot plays, a timer for one firing. The last one to let go closes
the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

import grpc
import structlog
from google.rpc import status_pb2

from dast.v1 import game_pb2, game_pb2_grpc, log_pb2
from engine.core.payload import take
from engine.registry import game_of_message
from services.bot.policies import SeatView
from services.platform.auth import Role, TokenSigner, mint_token

_log = structlog.get_logger(component="bot-streams")

TOKEN_SECONDS: Final = 3600
"""How long a stream's token lives; a renewal is sent at :data:`RENEW_AT` of it (half: a
token's times are whole seconds, so it may expire up to one second early)."""
RENEW_AT: Final = 0.5
SILENT_SECONDS: Final = 12.0
"""With nothing heard for this long (two of the server's 5-second heartbeats and some), the
stream is taken for dead (a frozen replica) and opened again."""
UNTOLD_SECONDS: Final = 1.0
"""How long after an event a bot waits for the stream to tell the turn before asking GetView
(the event ending a batch tells it at once; this is for a feed that could not)."""
OPEN_ATTEMPTS: Final = 20
"""Failed openings in a row after which a stream gives up (about 15 s of backoff)."""
_FINAL_CODES: Final = frozenset({
    grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
})
"""Endings after which opening the stream again cannot help."""


def refusal_error(status: status_pb2.Status) -> grpc.aio.AioRpcError:
    """The error a SubmitCommand call would have raised for a refused command's status."""
    code = next((c for c in grpc.StatusCode if c.value[0] == status.code),
                grpc.StatusCode.UNKNOWN)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                details=status.message)


def _match_over() -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(grpc.StatusCode.FAILED_PRECONDITION, grpc.aio.Metadata(),
                                grpc.aio.Metadata(), details="the match is over")


class Untold(enum.Enum):
    """What :meth:`GameStream.next_turn` returns when the stream may not tell the turn."""

    UNTOLD = "untold"


UNTOLD: Final = Untold.UNTOLD


@dataclass(frozen=True)
class Turn:
    """The newest turn a stream told: at ``seq``, the seat to act and its view."""

    seq: int
    seat: int
    view: SeatView


class GameStream:
    """One game's Play stream of a bot replica (see the module docstring)."""

    def __init__(self, streams: GameStreams, game_id: str, *, after_seq: int,
                 seat_control: tuple[log_pb2.SeatControl, ...]) -> None:
        self._streams = streams
        self.game_id = game_id
        self.seq = after_seq
        """The seq of the last event received."""
        self._seat_control: dict[int, tuple[int, log_pb2.SeatControl]] = {}
        """Per seat, its latest holder and the seq it is known as of."""
        self.know_seat_control(seat_control, after_seq)
        self.turn: Turn | None = None
        self.ended = False
        """The match is over (the stream ended after its final event) or the stream gave up."""
        self.failure: grpc.aio.AioRpcError | None = None
        self.users = 0
        self.opened = 0
        """How many times the stream was opened (tests: a reconnection opens it again)."""
        self._reopened = False
        """Opened again since :meth:`next_turn` last said so."""
        self._pending: dict[str, tuple[game_pb2.PlayCommand, asyncio.Future[
            game_pb2.PlayOutcome]]] = {}
        self._requests: asyncio.Queue[game_pb2.PlayRequest | None] | None = None
        self._changed = asyncio.Event()
        self._call: grpc.aio.StreamStreamCall | None = None
        self._task = asyncio.get_running_loop().create_task(self._run(),
                                                            name=f"play:{game_id}")

    @property
    def seat_control(self) -> tuple[log_pb2.SeatControl, ...]:
        """Who controls each seat, in seat order, as of the newest event received (a seat
        never taken over: not a bot)."""
        if not self._seat_control:
            return ()
        return tuple(
            self._seat_control[seat][1] if seat in self._seat_control
            else log_pb2.SeatControl(seat=seat)
            for seat in range(max(self._seat_control) + 1)
        )

    def know_seat_control(self, holders: tuple[log_pb2.SeatControl, ...], seq: int) -> None:
        """Take who controlled each seat after ``seq`` (a GetView's ``seat_control``), where
        the stream knows nothing newer (it was opened later than ``seq`` by someone else)."""
        for holder in holders:
            known = self._seat_control.get(holder.seat)
            if known is None or known[0] <= seq:
                self._seat_control[holder.seat] = (seq, holder)

    async def next_turn(self, after_seq: int) -> Turn | Untold | None:
        """The newest turn told after ``after_seq``, once there is one; :data:`UNTOLD` when
        the stream may not tell it (it was opened again, or events came and no turn for
        them within :data:`UNTOLD_SECONDS`): ask GetView; None once the stream ended (the
        match is over, or it gave up: :attr:`failure`).

        A stream tells the turn with the event ending a command's batch, but not always
        with events it replays, nor when the replica's feed could not follow the game's
        state (the bus or the store away): so a bot never waits on a turn only the stream
        could tell."""
        while True:
            if self.turn is not None and self.turn.seq > after_seq:
                return self.turn
            if self.ended:
                return None
            if self._reopened:
                self._reopened = False
                return UNTOLD
            untold = self.seq > max(after_seq, self.turn.seq if self.turn else 0)
            self._changed.clear()
            try:
                async with asyncio.timeout(UNTOLD_SECONDS if untold else None):
                    await self._changed.wait()
            except TimeoutError:
                return UNTOLD

    async def submit(self, command: game_pb2.PlayCommand,
                     timeout: float) -> game_pb2.PlayOutcome:
        """Send ``command`` (again, if one of its id is waiting) and wait for its outcome.

        The command stays pending after ``timeout`` (it is sent again on every reopening
        until an outcome comes), so a later submit of the same id waits for that outcome.

        :raises grpc.aio.AioRpcError: DEADLINE_EXCEEDED after ``timeout``; the stream's
            failure once it gave up; the refusal a SubmitCommand call would have raised.
        """
        if self.ended:
            raise self.failure or _match_over()
        waiting = self._pending.get(command.command_id)
        joined = waiting is not None
        if waiting is None:
            waiting = (command, asyncio.get_running_loop().create_future())
            self._pending[command.command_id] = waiting
            self._send(game_pb2.PlayRequest(command=command))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(waiting[1]), timeout)
        except TimeoutError:
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(), grpc.aio.Metadata(),
                details="no outcome on the game's Play stream in time") from None
        if outcome.status.code != 0:
            raise refusal_error(outcome.status)
        if joined and not outcome.duplicate:
            # Another submit of this id sent it, and reports the append: this one is the
            # resend SubmitCommand would have answered as a duplicate.
            duplicate = game_pb2.PlayOutcome()
            duplicate.CopyFrom(outcome)
            duplicate.duplicate = True
            return duplicate
        return outcome

    def _send(self, request: game_pb2.PlayRequest) -> None:
        if self._requests is not None:
            self._requests.put_nowait(request)

    async def close(self) -> None:
        """End the stream (its pending commands fail with CANCELLED)."""
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task

    # ---- the stream's life ---------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        try:
            while True:
                try:
                    done = await self._connect()
                except grpc.aio.AioRpcError as error:
                    if error.code() in _FINAL_CODES:
                        self._end(error)
                        return
                    failures += 1
                    _log.warning("bot_stream_broken", game_id=self.game_id,
                                 code=error.code().name, details=error.details())
                    if failures >= OPEN_ATTEMPTS:
                        self._end(error)
                        return
                    await asyncio.sleep(min(0.05 * failures, 1.0))
                    continue
                if done:
                    self._end(None)
                    return
                failures = 0  # it was open and went silent: not an opening that failed
        except asyncio.CancelledError:
            self._end(grpc.aio.AioRpcError(grpc.StatusCode.CANCELLED, grpc.aio.Metadata(),
                                           grpc.aio.Metadata(), details="stream closed"))
            raise

    def _end(self, failure: grpc.aio.AioRpcError | None) -> None:
        self.ended = True
        self.failure = failure
        error = failure or _match_over()
        for _, future in self._pending.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # whoever waits gets it; nobody waiting is no error
        self._pending.clear()
        self._changed.set()

    async def _connect(self) -> bool:
        """One opening of the stream, read to its end: True when the match is over, False
        when it must be opened again (silent).

        :raises grpc.aio.AioRpcError: as the stream ended.
        """
        requests: asyncio.Queue[game_pb2.PlayRequest | None] = asyncio.Queue()
        # From the event before the last received: the newest one comes again with its turn.
        requests.put_nowait(game_pb2.PlayRequest(open=game_pb2.PlayOpen(
            game_id=self.game_id, after_seq=self.seq, seat_to_act_views=True)))
        for command, _ in self._pending.values():  # no outcome yet: the same id again
            requests.put_nowait(game_pb2.PlayRequest(command=command))
        self._requests = requests
        token_seconds = self._streams.token_seconds
        call = self._streams.stub.Play(
            _drained(requests), metadata=self._streams.metadata(token_seconds))
        self._call = call
        self.opened += 1
        if self.opened > 1:
            self._reopened = True  # what happened meanwhile may come without its turn
            self._changed.set()
        renewal = asyncio.get_running_loop().create_task(
            self._renew(requests, token_seconds), name=f"play-renew:{self.game_id}")
        try:
            while True:
                try:
                    async with asyncio.timeout(SILENT_SECONDS):
                        response = await call.read()
                except TimeoutError:
                    _log.warning("bot_stream_silent", game_id=self.game_id)
                    return False
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # closed by its users
                    # The call itself was cancelled under the stream (its connection cut):
                    # open it again like any broken stream.
                    raise grpc.aio.AioRpcError(
                        grpc.StatusCode.CANCELLED, grpc.aio.Metadata(), grpc.aio.Metadata(),
                        details="the stream's call was cancelled") from None
                if response is grpc.aio.EOF:  # ended OK (read raises any other status)
                    return True
                self._take(response)
        finally:
            renewal.cancel()
            self._requests = None
            requests.put_nowait(None)
            call.cancel()

    async def _renew(self, requests: asyncio.Queue[game_pb2.PlayRequest | None],
                     token_seconds: int) -> None:
        while True:
            await asyncio.sleep(token_seconds * RENEW_AT)
            requests.put_nowait(game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(
                access_token=self._streams.token(token_seconds))))

    def _take(self, response: game_pb2.PlayResponse) -> None:
        kind = response.WhichOneof("kind")
        if kind == "event":
            self._take_event(response.event)
        elif kind == "outcome":
            waiting = self._pending.pop(response.outcome.command_id, None)
            if waiting is not None and not waiting[1].done():
                waiting[1].set_result(response.outcome)

    def _take_event(self, message: game_pb2.SubscribeResponse) -> None:
        event = message.event
        if event.HasField("seat_control"):
            self.know_seat_control((event.seat_control,), event.seq)
        self.seq = max(self.seq, event.seq)
        if message.turn.next_to_act and message.WhichOneof("view") is not None:
            game = game_of_message(message, "view", "view")
            if game is not None:
                view = take(message, "view", game.SCHEMA, game.SCHEMA.view)
                seat_view = SeatView(game.NAME, event.seq, view, game.summarize(view),
                                     self.seat_control)
                self.turn = Turn(event.seq, message.turn.next_to_act[0], seat_view)
        self._changed.set()


async def _drained(
    requests: asyncio.Queue[game_pb2.PlayRequest | None],
) -> AsyncIterator[game_pb2.PlayRequest]:
    while (request := await requests.get()) is not None:
        yield request


class GameStreams:
    """The Play streams of one bot replica, one per game (see the module docstring)."""

    def __init__(self, channel: grpc.aio.Channel, signer: TokenSigner, *, player_id: str,
                 token_seconds: int = TOKEN_SECONDS) -> None:
        self.stub = game_pb2_grpc.GameServiceStub(channel)
        self._signer = signer
        self._player_id = player_id
        self.token_seconds = token_seconds
        self._streams: dict[str, GameStream] = {}

    def token(self, ttl_seconds: int) -> str:
        """A fresh service token of the replica."""
        return mint_token(self._signer, self._player_id, Role.SERVICE, ttl_seconds=ttl_seconds)

    def metadata(self, ttl_seconds: int) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token(ttl_seconds)}"),)

    def get(self, game_id: str) -> GameStream | None:
        """The game's open stream, if any."""
        stream = self._streams.get(game_id)
        return stream if stream is not None and not stream.ended else None

    @contextlib.asynccontextmanager
    async def use(self, game_id: str, *, after_seq: int = 0,
                  seat_control: tuple[log_pb2.SeatControl, ...] = ()
                  ) -> AsyncIterator[GameStream]:
        """The game's stream, opened (after ``after_seq``, with ``seat_control`` as of it)
        unless it is open already, for as long as the block runs."""
        stream = self.get(game_id)
        if stream is None:
            stream = GameStream(self, game_id, after_seq=after_seq, seat_control=seat_control)
            self._streams[game_id] = stream
        else:
            stream.know_seat_control(seat_control, after_seq)
        stream.users += 1
        try:
            yield stream
        finally:
            stream.users -= 1
            if stream.users == 0:
                if self._streams.get(game_id) is stream:
                    del self._streams[game_id]
                await stream.close()

    async def close(self) -> None:
        """Close every stream."""
        streams = list(self._streams.values())
        self._streams.clear()
        for stream in streams:
            await stream.close()

