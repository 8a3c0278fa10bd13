"""Where the projection fetches a game's whole log to fill a gap: the game service.

The stats service reads no other service's tables; the log of a finished match comes over
gRPC (``GameService.ExportLog``, which answers a service token once the match is over). A
running game's gap fills when its events come again or, at the latest, once it is over.
"""

from __future__ import annotations

from typing import Final, Protocol

import grpc

from dast.v1 import game_pb2, game_pb2_grpc
from services.platform.auth import Role, TokenSigner, mint_token
from services.platform.bus import Published, game_type_name
from services.platform.channels import service_channel

_NOT_YET: Final = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND)


class LogSource(Protocol):
    """Whole logs of finished matches."""

    async def finished_log(self, game_id: str) -> list[Published] | None:
        """The log of ``game_id`` if its match is over (None while it runs, or unknown).

        :raises Exception: when the source cannot answer now (retry later).
        """
        ...


class GameServiceLogs:
    """:class:`LogSource` over the game service's ``ExportLog`` with a service token."""

    def __init__(self, target: str, signer: TokenSigner, *, player_id: str = "stats") -> None:
        self._target = target
        self._metadata = (
            ("authorization", f"Bearer {mint_token(signer, player_id, Role.SERVICE)}"),)
        self._channel: grpc.aio.Channel | None = None

    async def finished_log(self, game_id: str) -> list[Published] | None:
        """See :class:`LogSource`."""
        if self._channel is None:
            self._channel = service_channel(self._target)
        stub = game_pb2_grpc.GameServiceStub(self._channel)
        try:
            reply = await stub.ExportLog(game_pb2.ExportLogRequest(game_id=game_id),
                                         metadata=self._metadata, timeout=30)
        except grpc.aio.AioRpcError as error:
            if error.code() in _NOT_YET:
                return None
            raise
        if not reply.HasField("seal"):
            return None
        name = game_type_name(reply.game_type)
        return [Published(name, game_id, entry) for entry in reply.entries]

    async def close(self) -> None:
        """Close the channel."""
        if self._channel is not None:
            await self._channel.close()
