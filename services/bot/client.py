"""The game service as bots and timers use it: gRPC with a service token.

:class:`GameApi` is the one-method-per-call interface the bot service, the timers and the
presence watcher depend on; :class:`GrpcGameApi` is its implementation over a channel.
:func:`play_turn` is the whole of a bot's move: the seat's view in, one command out.
"""

from __future__ import annotations

from typing import Any, Protocol

import grpc

from dast.v1 import game_pb2, game_pb2_grpc
from services.bot.policies import Outcome, SeatView, decide
from services.platform.auth import Role, mint_token

_STALE_CODES = (grpc.StatusCode.ABORTED,)


class GameApi(Protocol):
    """The game-service calls a bot makes."""

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        """GetView for ``seat`` (None: the public view)."""
        ...

    async def submit(
        self, game_id: str, seat: int, command: Any, *, command_id: str, expected_seq: int,
        automatic: bool,
    ) -> bool:
        """SubmitCommand for ``seat``; False when the command id had been applied already.

        :raises grpc.aio.AioRpcError: as the game service answers.
        """
        ...


class GrpcGameApi:
    """:class:`GameApi` over gRPC; the token is a service token of ``player_id``."""

    def __init__(self, channel: grpc.aio.Channel, secret: str, *, player_id: str = "bots",
                 timeout_seconds: float = 10.0) -> None:
        self._stub = game_pb2_grpc.GameServiceStub(channel)
        self._metadata = (
            ("authorization", f"Bearer {mint_token(secret, player_id, Role.SERVICE)}"),
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
        """See :class:`GameApi`."""
        request = game_pb2.SubmitCommandRequest(
            game_id=game_id, command_id=command_id, expected_seq=expected_seq, seat=seat,
            automatic=automatic,
        )
        field = "hokm" if command.DESCRIPTOR.name == "HokmCommand" else "hand"
        getattr(request, field).CopyFrom(command)
        reply = await self._stub.SubmitCommand(
            request, metadata=self._metadata, timeout=self._timeout
        )
        return not reply.duplicate


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
    seat = seat_view.view.seat
    if seat_view.turn != seat or not seat_view.view.legal or seat_view.view.is_spectator:
        return Outcome.NOT_TO_ACT
    command = decide(seat_view, level, game_id)
    try:
        appended = await api.submit(game_id, seat, command, command_id=command_id,
                                    expected_seq=seat_view.seq, automatic=automatic)
    except grpc.aio.AioRpcError as error:
        if error.code() in _STALE_CODES:
            return Outcome.STALE
        raise
    return Outcome.PLAYED if appended else Outcome.DUPLICATE
