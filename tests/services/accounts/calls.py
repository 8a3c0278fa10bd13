"""What the accounts tests share: a session's bearer metadata, and how a call was refused."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import accounts_pb2
from services.platform.errors import reason_of


def session_bearer(tokens: accounts_pb2.SessionTokens) -> tuple[tuple[str, str]]:
    """The ``authorization`` metadata of a session's access token."""
    return (("authorization", f"Bearer {tokens.access_token}"),)


async def refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    """The status code and ``ErrorInfo`` reason ``call`` fails with (it must fail)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code(), reason_of(caught.value)
