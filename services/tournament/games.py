"""The game service as the tournament service uses it: gRPC with a service token.

A tournament's match is created with a game id that names its place (tournament, round,
table), so creating it again (a retry, another replica, a restart) is harmless:
``ALREADY_EXISTS`` counts as created. A match's result is read from its log, which the game
service exports to a service once the match is over (sealed); before that the export is
refused, and :meth:`GrpcTournamentGames.finished_log` answers None.
"""

from __future__ import annotations

from typing import Protocol

import grpc

from dast.v1 import game_pb2, game_pb2_grpc, log_pb2
from services.platform.auth import Role, TokenSigner, mint_token
from services.platform.channels import service_channel

TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
             grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED)
"""Codes after which a call is worth repeating (the game service restarting, a lost race)."""


class TournamentGames(Protocol):
    """The calls the tournament service makes to the game service."""

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """Create the match (an existing game id counts as created).

        :raises grpc.aio.AioRpcError: when the game service cannot answer or refuses.
        """
        ...

    async def finished_log(self, game_id: str) -> list[log_pb2.Event] | None:
        """The events of the match once it is over (None while it runs or is unknown).

        :raises grpc.aio.AioRpcError: when the game service cannot answer.
        """
        ...

    async def current_log(self, game_id: str) -> list[log_pb2.Event] | None:
        """The events of the match so far, finished or not (None for an unknown game):
        what the time-limit rule reads of a match still running.

        :raises grpc.aio.AioRpcError: when the game service cannot answer.
        """
        ...

    async def stand_in(self, game_id: str, seat: int, bot_level: str) -> None:
        """Record in the match's log that a bot of ``bot_level`` plays ``seat`` for its
        absent player (a seat already so controlled, or a match over: nothing to do).

        :raises grpc.aio.AioRpcError: when the game service cannot answer or refuses.
        """
        ...


class GrpcTournamentGames:
    """:class:`TournamentGames` over gRPC.

    Matches are created and finished logs read with a service token; the log of a match
    still running is read with a referee token, which the game service requires for it
    (the time-limit rule needs the score so far). The tournament service's key signs
    referee tokens, never admin ones (docs/security.md "Token keys").
    """

    def __init__(self, target: str, signer: TokenSigner, *, player_id: str = "tournaments",
                 timeout_seconds: float = 10.0) -> None:
        self._target = target
        self._service = (
            ("authorization", f"Bearer {mint_token(signer, player_id, Role.SERVICE)}"),)
        self._referee = (
            ("authorization", f"Bearer {mint_token(signer, player_id, Role.REFEREE)}"),)
        self._timeout = timeout_seconds
        self._channel: grpc.aio.Channel | None = None

    def _stub(self) -> game_pb2_grpc.GameServiceStub:
        if self._channel is None:
            self._channel = service_channel(self._target)
        return game_pb2_grpc.GameServiceStub(self._channel)

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """See :class:`TournamentGames`."""
        try:
            await self._stub().CreateGame(request, metadata=self._service,
                                          timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise

    async def finished_log(self, game_id: str) -> list[log_pb2.Event] | None:
        """See :class:`TournamentGames`."""
        return await self._export(game_id, self._service, finished_only=True)

    async def current_log(self, game_id: str) -> list[log_pb2.Event] | None:
        """See :class:`TournamentGames`."""
        return await self._export(game_id, self._referee, finished_only=False)

    async def stand_in(self, game_id: str, seat: int, bot_level: str) -> None:
        """See :class:`TournamentGames`."""
        request = game_pb2.ControlSeatRequest(
            game_id=game_id, seat=seat, bot=True, bot_level=bot_level,
            reason=log_pb2.SEAT_CONTROL_REASON_LEFT)
        try:
            await self._stub().ControlSeat(request, metadata=self._service,
                                           timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise

    async def _export(self, game_id: str, metadata: tuple[tuple[str, str], ...], *,
                      finished_only: bool) -> list[log_pb2.Event] | None:
        try:
            reply = await self._stub().ExportLog(
                game_pb2.ExportLogRequest(game_id=game_id), metadata=metadata,
                timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return None
            raise
        if finished_only and not reply.HasField("seal"):
            return None
        return [entry.event for entry in reply.entries]

    async def close(self) -> None:
        """Close the channel."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
