"""A person who plays its match over one ``GameService.Play`` stream through the faults.

It plays as docs/clients.md "Play stream" asks of every app, and so checks that what it
asks is enough:

- after every (re)open it reads the seat's view once (``GetView``): a stream resumed at the
  log's last seq brings no event, and with it no turn, so without the view a person whose
  turn it was when the stream dropped would wait for an event that never comes;
- a command stays *unanswered* until its outcome arrives; every stream opened again sends
  the unanswered commands again with their own ``command_id`` (one applied before answers
  ``OK, duplicate``);
- an outcome refused with a status worth a retry (``UNAVAILABLE`` while PostgreSQL is away,
  ``RESOURCE_EXHAUSTED`` over a limit) is sent again after its ``RetryInfo`` delay: nothing
  was appended, so no event would ever say "act again";
- a stream that says nothing (no event, outcome or heartbeat) for
  :data:`STREAM_SILENCE_SECONDS`, or holds a command without its outcome for
  :data:`OUTCOME_SECONDS`, is taken for dead: cancelled and opened again.

The run then checks that it saw every event once and in order, that no command of its was
applied twice, and that every command got its outcome.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

import grpc

from dast.v1 import game_pb2, game_pb2_grpc
from services.bot.policies import SeatView, decide
from services.platform.errors import retry_after_in
from tests.reliability.load import CALL_SECONDS, TRANSIENT, CallTally, bearer, retrying

STREAM_SILENCE_SECONDS: Final = 12.0
"""How long a Play stream may say nothing before its client takes it for dead: two of the
server's heartbeats (every 5 s) and some slack (docs/clients.md "Play stream")."""
OUTCOME_SECONDS: Final = 15.0
"""How long a command may wait for its outcome on a stream that otherwise talks (heartbeats)
before the stream is taken for stuck and opened again (the command resent)."""
RETRY_STATUSES: Final = frozenset({grpc.StatusCode.UNAVAILABLE.value[0],
                                   grpc.StatusCode.RESOURCE_EXHAUSTED.value[0],
                                   grpc.StatusCode.DEADLINE_EXCEEDED.value[0]})
"""Refusals after which the same command may succeed later (nothing was appended)."""


class _Stuck(Exception):
    """The stream talks, but a command's outcome is overdue."""


@dataclass
class PlayPerson:
    """A guest who plays its own turns over a Play stream (see the module docstring)."""

    game: game_pb2_grpc.GameServiceStub
    token: str
    player_id: str
    game_id: str
    tally: CallTally
    received: list[int] = field(default_factory=list)
    """The seq of every event the streams sent, in order, across reconnections."""
    unanswered: dict[str, game_pb2.PlayCommand] = field(default_factory=dict)
    """Commands sent whose final outcome has not arrived (resent on every new stream)."""
    sent_at: dict[str, float] = field(default_factory=dict)
    """When each unanswered command was last sent (monotonic), for the outcome deadline."""
    applied: Counter[str] = field(default_factory=Counter)
    """Outcomes OK and not duplicate, per command id: more than one is a double apply."""
    acted_at: set[int] = field(default_factory=set)
    """The seqs this person decided a move from (one move per state)."""
    moves: int = 0
    refused: int = 0
    retried: int = 0
    """Commands sent again on the same stream after a refusal worth a retry."""
    reconnections: int = 0
    stuck: int = 0
    """Streams reopened because an outcome was overdue."""
    silent: int = 0
    """Streams reopened because they said nothing for too long."""

    @property
    def last_seq(self) -> int:
        return self.received[-1] if self.received else 0

    async def play_to_the_end(self) -> None:
        """Play until the stream ends after the match's final event."""
        while True:
            requests: asyncio.Queue[game_pb2.PlayRequest | None] = asyncio.Queue()
            requests.put_nowait(game_pb2.PlayRequest(open=game_pb2.PlayOpen(
                game_id=self.game_id, after_seq=self.last_seq)))
            for command in self.unanswered.values():
                self._send(command, requests)
            call = self.game.Play(_drained(requests), metadata=bearer(self.token))
            retries: set[asyncio.Task[None]] = set()
            try:
                await self._act_on_view(requests)
                while True:
                    response = await asyncio.wait_for(call.read(), self._read_timeout())
                    if response is grpc.aio.EOF:
                        return  # ended by the server after the final event
                    self._take(response, requests, retries)
            except grpc.aio.AioRpcError as error:
                self.tally.record(error)
                if error.code() not in TRANSIENT:
                    raise
            except TimeoutError:
                if self._overdue():
                    self.stuck += 1
                else:
                    self.silent += 1
            finally:
                requests.put_nowait(None)
                call.cancel()
                for task in retries:
                    task.cancel()
            self.reconnections += 1
            await asyncio.sleep(0.2)

    def _read_timeout(self) -> float:
        """Until the stream counts as silent, or the oldest command's outcome as overdue."""
        timeout = STREAM_SILENCE_SECONDS
        if self.sent_at:
            oldest = min(self.sent_at.values())
            timeout = min(timeout, max(0.0, oldest + OUTCOME_SECONDS - time.monotonic()))
        return timeout

    def _overdue(self) -> bool:
        return any(time.monotonic() - sent >= OUTCOME_SECONDS for sent in self.sent_at.values())

    async def _act_on_view(self, requests: asyncio.Queue[game_pb2.PlayRequest | None]
                           ) -> None:
        """Read the seat's view once for this stream and act on it when it is our turn."""
        reply = await retrying(self.tally, lambda: self.game.GetView(
            game_pb2.GetViewRequest(game_id=self.game_id), metadata=bearer(self.token),
            timeout=CALL_SECONDS))
        self._decide(SeatView.of(reply), requests)

    def _send(self, command: game_pb2.PlayCommand,
              requests: asyncio.Queue[game_pb2.PlayRequest | None]) -> None:
        self.unanswered[command.command_id] = command
        self.sent_at[command.command_id] = time.monotonic()
        requests.put_nowait(game_pb2.PlayRequest(command=command))

    def _take(self, response: game_pb2.PlayResponse,
              requests: asyncio.Queue[game_pb2.PlayRequest | None],
              retries: set[asyncio.Task[None]]) -> None:
        kind = response.WhichOneof("kind")
        if kind == "outcome":
            self._outcome(response.outcome, requests, retries)
            return
        if kind != "event":
            return  # a heartbeat: the stream lives
        event = response.event
        self.received.append(event.event.seq)
        if not event.turn.your_turn:
            return
        name = event.WhichOneof("view")
        if name is None:
            return
        reply = game_pb2.GetViewResponse(seq=event.event.seq)
        getattr(reply, name).CopyFrom(getattr(event, name))
        self._decide(SeatView.of(reply), requests)

    def _outcome(self, outcome: game_pb2.PlayOutcome,
                 requests: asyncio.Queue[game_pb2.PlayRequest | None],
                 retries: set[asyncio.Task[None]]) -> None:
        command = self.unanswered.get(outcome.command_id)
        code = outcome.status.code
        if code == 0:
            if not outcome.duplicate:
                self.applied[outcome.command_id] += 1
                self.moves += 1
        elif code in RETRY_STATUSES and command is not None:
            # Nothing was appended, so no event will say "act again": the same command
            # again, after the server's delay, on this stream (a new stream resends it too).
            self.retried += 1
            self.sent_at[outcome.command_id] = time.monotonic()
            task = asyncio.create_task(self._resend_after(
                retry_after_in(outcome.status) or 0.2, command, requests))
            retries.add(task)
            task.add_done_callback(retries.discard)
            return
        else:
            self.refused += 1  # the seat's turn moved on (a bot stood in): act on what comes
        self.unanswered.pop(outcome.command_id, None)
        self.sent_at.pop(outcome.command_id, None)

    async def _resend_after(self, delay: float, command: game_pb2.PlayCommand,
                            requests: asyncio.Queue[game_pb2.PlayRequest | None]) -> None:
        await asyncio.sleep(delay)
        if command.command_id in self.unanswered:
            self._send(command, requests)

    def _decide(self, view: SeatView,
                requests: asyncio.Queue[game_pb2.PlayRequest | None]) -> None:
        if view.is_over or view.turn != view.view.seat or not view.view.legal:
            return
        if view.seq in self.acted_at:
            return
        self.acted_at.add(view.seq)
        command = game_pb2.PlayCommand(command_id=f"{self.player_id}:{view.seq}",
                                       expected_seq=view.seq)
        getattr(command, view.game).CopyFrom(decide(view, "basic", self.game_id))
        self._send(command, requests)

    def problems(self) -> list[str]:
        """Events missed or repeated across the streams, commands applied twice or left
        without an outcome."""
        found = []
        for index, seq in enumerate(self.received):
            if seq != index + 1:
                found.append(f"the Play person of {self.game_id} was sent seq {seq} where "
                             f"{index + 1} was due")
                break
        twice = sorted(command for command, count in self.applied.items() if count > 1)
        if twice:
            found.append(f"the Play person's commands were applied twice: {twice[:5]}")
        if self.unanswered:
            found.append(f"the Play person never got the outcome of {sorted(self.unanswered)}")
        return found


async def _drained(requests: asyncio.Queue[game_pb2.PlayRequest | None]
                   ) -> AsyncIterator[game_pb2.PlayRequest]:
    """The requests put on ``requests``, until None."""
    while (request := await requests.get()) is not None:
        yield request
