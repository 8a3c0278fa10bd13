"""``GameService.Play``: one seat's commands and events on one bidirectional stream.

A stream is three tasks around one bounded queue of messages for the client (docs/clients.md
"Play stream" is the client's side of this):

- **the events**: the responses Subscribe would send the stream's seat
  (:meth:`GameService.watch`: the same merge of store and bus, redaction, receipts, turns
  and views), each queued as it comes, already serialised in its ``PlayResponse`` (once
  for every Play stream of the seat: :func:`play_event`);
- **the requests**: the client's messages read one after another, so a stream's commands
  are applied in the order sent. A command goes through the unary path's own code
  (:meth:`GameService.apply`: caller-scoped command ids, ``expected_seq``, the input checks,
  the SubmitCommand call rate of the caller) and its outcome is queued: a refusal at once,
  with the status the call would have ended with; an acceptance once the command's events
  are queued, so the app reads an outcome after the events it reports. A renewal checks a
  fresh token of the same caller; a ping queues a heartbeat;
- **the sender** (the handler itself): hands the queue's messages to gRPC, a heartbeat after
  :data:`HEARTBEAT_SECONDS` with nothing else to send, and ends the stream when the token
  expires unrenewed.

Bounds: gRPC takes a message only as fast as the connection carries it, so a client that
stops reading leaves the messages in the queue; past :data:`QUEUE_LIMIT` the stream ends
with RESOURCE_EXHAUSTED ``stream_backlog`` and the client opens it again from the last seq
it received. Requests are read one at a time, so a client sending faster than its commands
are applied waits on HTTP/2's flow control, not on the server's memory; pings asked while a
heartbeat is already queued are answered by that one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final

import grpc
from google.rpc import code_pb2, status_pb2

from dast.v1 import game_pb2
from services.game.streams import Encoded
from services.platform.auth import AuthError, Identity
from services.platform.errors import (
    Reason,
    ServiceError,
    abort_with,
    known_error,
    status_message_for,
)
from services.platform.stream_caller import StreamCaller

if TYPE_CHECKING:
    from services.game.service import GameService

HEARTBEAT_SECONDS: Final = 5.0
"""A stream with nothing else to send sends a heartbeat this often: an app that hears
nothing for two of them (10 s) takes the stream for dead and opens another."""
QUEUE_LIMIT: Final = 256
"""Messages a stream queues for a client that does not read them (beyond what the connection
itself buffers) before it ends with ``stream_backlog``: a match's whole hand of events in a
busy moment, a few hundred kilobytes at most."""
SUBMIT_METHOD: Final = "/dast.v1.GameService/SubmitCommand"
"""The method whose call rate a stream's commands count against (the caller's one bucket)."""
_OK: Final = status_pb2.Status(code=code_pb2.OK)


def play_event(response: game_pb2.SubscribeResponse) -> game_pb2.PlayResponse:
    """An event's response as a Play stream sends it (the envelope of
    :meth:`~services.game.streams.GameFeeds.encoded_after`)."""
    return game_pb2.PlayResponse(event=response)


Sent = game_pb2.PlayResponse | bytes
"""A message for the client: made for this stream, or an event serialised for every stream
of the seat (the server's serializer passes bytes through)."""


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


class Backlog(ServiceError):
    """The client left more than the queue's limit unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.STREAM_BACKLOG,
            f"the stream ended: more than {limit} messages waited for the client to read "
            "them; open Play again from the last seq received",
        )


class PlayStats:
    """What the Play streams of a process have queued (the bound a test checks)."""

    def __init__(self) -> None:
        self.most_queued = 0
        """The longest any stream's queue has been."""


class EndedWith(Exception):
    """Ends a stream with a status made elsewhere (a ban's, with its ``until_ms``)."""

    def __init__(self, status: grpc.Status) -> None:
        super().__init__(status.details)
        self.status = status


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Outbox:
    """The messages waiting for the client, and the outcomes waiting for their events."""

    def __init__(self, limit: int, stats: PlayStats, *, events_through: int = 0) -> None:
        self._limit = limit
        self._stats = stats
        self._queue: deque[Sent] = deque()
        self._held: deque[tuple[int, Sent]] = deque()
        """Accepted outcomes, each until the events up to its seq are queued."""
        self._waiter: asyncio.Future[None] | None = None
        """The sender's wait for something to send, while it waits."""
        self.events_through = events_through
        """The seq of the last event queued, or the client holds (the opening's
        ``after_seq``): a resent command's outcome whose events the client had before it
        reconnected is not held for events that will not come again."""
        self.failure: BaseException | None = None
        """Why the stream must end (a task's failure, a backlog); the sender raises it."""
        self.events_ended = False

    def __len__(self) -> int:
        return len(self._queue)

    def put(self, message: Sent) -> None:
        """Queue ``message``.

        :raises Backlog: the queue holds its limit already.
        """
        if len(self._queue) >= self._limit:
            raise Backlog(self._limit)
        self._queue.append(message)
        if len(self._queue) > self._stats.most_queued:
            self._stats.most_queued = len(self._queue)
        self._wake()

    def put_event(self, event: Encoded) -> None:
        """Queue an event, then the outcomes it was the last one missing for."""
        self.put(event.data)
        self.events_through = event.seq
        while self._held and self._held[0][0] <= self.events_through:
            self.put(self._held.popleft()[1])

    def put_after(self, seq: int, message: Sent) -> None:
        """Queue ``message`` once the events up to ``seq`` are queued (now if they are)."""
        if seq <= self.events_through:
            self.put(message)
        elif len(self._held) >= self._limit:
            raise Backlog(self._limit)
        else:
            self._held.append((seq, message))

    def has_heartbeat(self) -> bool:
        return any(isinstance(message, game_pb2.PlayResponse) and message.HasField("heartbeat")
                   for message in self._queue)

    def fail(self, failure: BaseException) -> None:
        if self.failure is None:
            self.failure = failure
        self._wake()

    def end_events(self) -> None:
        self.events_ended = True
        self._wake()

    async def take(self, timeout: float) -> Sent | None:
        """The next message, waiting at most ``timeout`` seconds (None: nothing came)."""
        if not self._queue:
            # A future and a timer, not asyncio.wait_for: that wraps the wait in a task of
            # its own each time, a cost paid for nearly every message a stream sends.
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self._queue.popleft() if self._queue else None

    def _wake(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)


class PlayStream:
    """One open Play stream (see the module docstring)."""

    def __init__(
        self, service: GameService, caller: StreamCaller, context: grpc.aio.ServicerContext,
        opening: game_pb2.PlayOpen, *, queue_limit: int, heartbeat_seconds: float,
        clock: Callable[[], int],
    ) -> None:
        self._service = service
        self._caller = caller
        self._context = context
        self._opening = opening
        self._heartbeat_seconds = heartbeat_seconds
        self._clock = clock
        self.outbox = Outbox(queue_limit, service.play_streams,
                             events_through=opening.after_seq)
        self._at_yield = False
        """The sender is handing gRPC a message (stuck there while the client does not read)."""
        self._ended = False
        """The call was ended from another task than the sender's (a backlog)."""
        self._applying = False
        """A command is being applied (its outcome is yet to be queued)."""
        self._seat = opening.seat if opening.HasField("seat") else None

    @property
    def identity(self) -> Identity:
        return self._caller.identity

    async def messages(
        self, requests: AsyncIterator[game_pb2.PlayRequest]
    ) -> AsyncGenerator[Sent, None]:
        """What the stream sends, until the match's final event or a failure (raised)."""
        loop = asyncio.get_running_loop()
        events = loop.create_task(self._follow_events(), name="play:events")
        reader = loop.create_task(self._read(requests), name="play:requests")
        try:
            while True:
                if self.outbox.failure is not None:
                    if self._ended:
                        return  # the client has its status already
                    raise self.outbox.failure
                left = self._caller.expires_at - time.time()
                if left <= 0:
                    raise ServiceError(
                        grpc.StatusCode.UNAUTHENTICATED, Reason.TOKEN_EXPIRED,
                        "the stream's access token expired: send a PlayRenewal with a fresh "
                        "token before it expires, or open Play again with one",
                    )
                if self.outbox.events_ended and not len(self.outbox) and not self._applying:
                    # The final event is sent, and the outcome of the command that made it
                    # (if this stream's): the match has nothing more to say.
                    return
                message = await self.outbox.take(min(left, self._heartbeat_seconds))
                if message is None:
                    if self.outbox.events_ended or self.outbox.failure is not None:
                        continue
                    message = self._heartbeat(0)
                self._at_yield = True
                yield message
                self._at_yield = False
        finally:
            for task in (reader, events):
                task.cancel()
            for task in (reader, events):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _heartbeat(self, ping_id: int) -> game_pb2.PlayResponse:
        return game_pb2.PlayResponse(heartbeat=game_pb2.PlayHeartbeat(
            ping_id=ping_id, server_time_ms=self._clock()))

    async def _queued(self, message: Any, put: Callable[[Any], None] | None = None) -> None:
        """Queue ``message`` (by ``put``, or at the queue's end); past the queue's limit, end
        the stream now (the sender may be stuck handing gRPC a message nobody reads)."""
        try:
            (put or self.outbox.put)(message)
        except Backlog as backlog:
            self.outbox.fail(backlog)
            if self._at_yield:  # the sender cannot tell the client: end the call from here
                self._ended = True
                with contextlib.suppress(grpc.aio.AbortError):
                    await abort_with(self._context, backlog)
            raise

    async def _follow_events(self) -> None:
        opening = self._opening
        try:
            async for event in self._service.watch(
                self.identity, opening.game_id, opening.after_seq, self._seat, play_event,
                seat_to_act_views=opening.seat_to_act_views,
            ):
                await self._queued(event, self.outbox.put_event)
        except Exception as failure:
            self.outbox.fail(failure)
            return
        self.outbox.end_events()

    async def _read(self, requests: AsyncIterator[game_pb2.PlayRequest]) -> None:
        try:
            async for request in requests:
                kind = request.WhichOneof("kind")
                if kind == "command":
                    self._applying = True
                    try:
                        await self._command(request.command)
                    finally:
                        self._applying = False
                elif kind == "renewal":
                    self._renew(request.renewal.access_token)
                    await self._queued(game_pb2.PlayResponse(renewed=game_pb2.PlayRenewed(
                        expires_ms=round(self._caller.expires_at * 1000))))
                elif kind == "ping":
                    if not self.outbox.has_heartbeat():
                        await self._queued(self._heartbeat(request.ping.ping_id))
                elif kind == "open":
                    raise _invalid("a Play stream is opened once: open another stream to play "
                                   "another game")
                else:
                    raise _invalid("a Play message carries an open, a command, a renewal "
                                   "or a ping")
        except Exception as failure:
            self.outbox.fail(failure)

    def _renew(self, token: str) -> None:
        try:
            self._caller.renew(token)
        except AuthError as refused:
            if refused.status is not None:  # a ban's own status says why and until when
                raise EndedWith(refused.status) from refused
            raise ServiceError(grpc.StatusCode.UNAUTHENTICATED, refused.reason,
                               f"renewal refused: {refused.message}") from refused

    async def _command(self, command: game_pb2.PlayCommand) -> None:
        """Apply ``command`` and queue its outcome; a refusal is an outcome too."""
        service, game_id = self._service, self._opening.game_id
        label = command.WhichOneof("command") or "none"
        try:
            self._caller.admit(SUBMIT_METHOD)
            # A command may name its seat (a bot's stream acts for all its seats): checked
            # as SubmitCommandRequest.seat is, so a player still acts for their own only.
            seat = command.seat if command.HasField("seat") else self._seat
            submission = service.submission_of(game_id, command, seat)
            outcome = await service.apply(self.identity, submission)
        except Exception as refused:
            known = known_error(refused)
            if known is None:
                raise  # not a refusal: the stream ends INTERNAL, as the call would
            service.count_refusal(label, game_id, command.expected_seq, known.code,
                                  known.reason)
            await self._queued(game_pb2.PlayResponse(outcome=game_pb2.PlayOutcome(
                command_id=command.command_id, status=status_message_for(known),
                server_time_ms=self._clock())))
            return
        accepted = game_pb2.PlayOutcome(command_id=command.command_id, status=_OK,
                                        duplicate=outcome.duplicate,
                                        server_time_ms=self._clock())
        if outcome.entries:
            accepted.first_seq = outcome.entries[0].event.seq
            accepted.last_seq = outcome.entries[-1].event.seq
        # After its events: the app reads the outcome with the state it reports.
        await self._queued(game_pb2.PlayResponse(outcome=accepted),
                           functools.partial(self.outbox.put_after, accepted.last_seq))
