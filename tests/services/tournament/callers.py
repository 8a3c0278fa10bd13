"""Callers of the TournamentService in the tests: a token's calls, and refusals read back."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from dast.v1 import tournament_pb2_grpc
from services.platform.auth import Role
from services.platform.errors import error_info_of, reason_of
from tests.support.tokens import token as signed_token


class Caller:
    """One token's calls of the TournamentService (``token``: one a sign-in returned)."""

    def __init__(self, channel: grpc.aio.Channel, player_id: str, role: Role = Role.PLAYER,
                 *, token: str = "") -> None:
        self.player_id = player_id
        self.stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        token = token or signed_token(player_id, role)
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def __call__(self, method: str, request: Any) -> Any:
        return await getattr(self.stub, method)(request, metadata=self.metadata, timeout=10)


async def refused(call: Any, code: grpc.StatusCode) -> str | None:
    """The reason of ``call``'s refusal, which must have ``code``."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == code, caught.value.details()
    return reason_of(caught.value)


async def refusal(call: Any) -> grpc.aio.AioRpcError:
    """The error ``call`` fails with."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


def metadata_of(error: grpc.aio.AioRpcError) -> dict[str, str]:
    """The ``ErrorInfo.metadata`` of a refusal."""
    info = error_info_of(error)
    assert info is not None
    return dict(info.metadata)
