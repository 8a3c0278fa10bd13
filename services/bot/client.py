"""The game service as bots and timers use it: gRPC with a service token.

:class:`GameApi` is the interface the bot service, the timers and the presence watcher
depend on; :class:`GrpcGameApi` is its implementation over a channel: views and seat
control by unary calls, commands on the replica's Play stream of the game
(:mod:`services.bot.streams`, which the bot service also reads its seats' turns from).
:func:`play_turn` is the whole of a bot's move: the seat's view in, one command out.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import grpc

from dast.v1 import game_pb2, game_pb2_grpc
from engine.core.payload import put
from engine.registry import game_of_body
from services.bot.policies import Outcome, SeatView, decide
from services.bot.streams import GameStreams
from services.platform.auth import Role, TokenSigner, mint_token
from services.platform.metrics import bot_metrics

_STALE_CODES = (grpc.StatusCode.ABORTED,)
_DECISIONS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bot-decide")
"""Where bot policies run (two: one process's bots seldom have more moves due at once)."""


class GameApi(Protocol):
    """The game-service calls a bot makes."""

    streams: GameStreams
    """The replica's Play streams, one per game (what :meth:`submit` sends on)."""

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        """GetView for ``seat`` (None: the public view)."""
        ...

    async def submit(
        self, game_id: str, seat: int, command: Any, *, command_id: str, expected_seq: int,
        automatic: bool,
    ) -> bool:
        """The command for ``seat``; False when the command id had been applied already.

        :raises grpc.aio.AioRpcError: as the game service answers (a refusal: the error a
            SubmitCommand call would have raised).
        """
        ...


class GrpcGameApi:
    """:class:`GameApi` over gRPC; the token is a service token of ``player_id``."""

    def __init__(self, channel: grpc.aio.Channel, signer: TokenSigner, *,
                 player_id: str = "bots",
                 timeout_seconds: float = 10.0) -> None:
        self.streams = GameStreams(channel, signer, player_id=player_id)
        self._stub = game_pb2_grpc.GameServiceStub(channel)
        self._metadata = (
            ("authorization", f"Bearer {mint_token(signer, player_id, Role.SERVICE)}"),
        )
        self._timeout = timeout_seconds

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        """See :class:`GameApi`."""
        request = game_pb2.GetViewRequest(game_id=game_id)
        if seat is not None:
            request.seat = seat
        reply = await self._stub.GetView(request, metadata=self._metadata, timeout=self._timeout)
        return SeatView.of(reply)

    async def submit(
        self, game_id: str, seat: int, command: Any, *, command_id: str, expected_seq: int,
        automatic: bool,
    ) -> bool:
        """See :class:`GameApi`: on the game's stream (opened for the command when no bot
        of this replica holds one, from ``expected_seq``)."""
        request = game_pb2.PlayCommand(
            command_id=command_id, expected_seq=expected_seq, seat=seat, automatic=automatic,
        )
        game = game_of_body(command, "command")
        if game is None:
            raise TypeError(f"{type(command).__name__} is no served game's command")
        put(request, game.SCHEMA, command)
        async with self.streams.use(game_id, after_seq=expected_seq) as stream:
            outcome = await stream.submit(request, self._timeout)
        return not outcome.duplicate

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> bool:
        """ControlSeat: hand ``seat`` to a bot at ``bot_level`` (``bot``) or back to its
        player; False when it was so controlled already (nothing appended).

        :raises grpc.aio.AioRpcError: as the game service answers.
        """
        request = game_pb2.ControlSeatRequest(
            game_id=game_id, seat=seat, bot=bot, bot_level=bot_level,
            reason=reason,  # type: ignore[arg-type]
        )
        reply = await self._stub.ControlSeat(request, metadata=self._metadata,
                                             timeout=self._timeout)
        return bool(reply.changed)


async def play_turn(
    api: GameApi, game_id: str, seat: int, level: str, *, expected_seq: int,
    command_id: str, automatic: bool,
) -> Outcome:
    """Play ``seat``'s move at ``expected_seq`` with the ``level`` policy over its view.

    A command that lost the race (the log moved past ``expected_seq``: ABORTED) appends
    nothing and reports :attr:`Outcome.STALE`; a command id applied before (a timer firing
    twice) appends nothing and reports :attr:`Outcome.DUPLICATE`.

    :raises grpc.aio.AioRpcError: for failures other than a lost race.
    """
    seat_view = await api.view(game_id, seat)
    if seat_view.seq != expected_seq:
        return Outcome.STALE
    return await play_view(api, game_id, seat_view, level, command_id=command_id,
                           automatic=automatic)


async def play_view(
    api: GameApi, game_id: str, seat_view: SeatView, level: str, *, command_id: str,
    automatic: bool,
) -> Outcome:
    """As :func:`play_turn`, from the seat's view already fetched (at ``seat_view.seq``).

    :raises grpc.aio.AioRpcError: for failures other than a lost race.
    """
    seat = seat_view.seat
    if seat is None or seat_view.turn != seat or not seat_view.summary.can_act:
        return Outcome.NOT_TO_ACT
    # A policy is pure CPU work: the expert searches for its whole budget (200 ms by default).
    # Run on its own thread so that the event loop goes on serving calls and streams meanwhile
    # (the search holds the GIL most of that time, but the server's short switch interval
    # lets the loop in between); a dedicated pool keeps it off the store's executor threads.
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    command = await loop.run_in_executor(_DECISIONS, decide, seat_view, level, game_id)
    bot_metrics().decision_seconds.labels(level).observe(time.perf_counter() - started)
    try:
        appended = await api.submit(game_id, seat, command, command_id=command_id,
                                    expected_seq=seat_view.seq, automatic=automatic)
    except grpc.aio.AioRpcError as error:
        if error.code() in _STALE_CODES:
            return Outcome.STALE
        raise
    return Outcome.PLAYED if appended else Outcome.DUPLICATE
