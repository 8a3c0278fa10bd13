"""What the accounts tests share: a session's bearer metadata, how a call was refused, and
one of several servers of a deployment."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
import pytest

from dast.v1 import accounts_pb2
from services.compose import Running, StackOptions, running_stack
from services.platform.errors import reason_of
from services.platform.limits import MACHINE_SPEED
from tests.support.tokens import TEST_KEYS


def session_bearer(tokens: accounts_pb2.SessionTokens) -> tuple[tuple[str, str]]:
    """The ``authorization`` metadata of a session's access token."""
    return (("authorization", f"Bearer {tokens.access_token}"),)


async def refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    """The status code and ``ErrorInfo`` reason ``call`` fails with (it must fail)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code(), reason_of(caught.value)


@contextlib.asynccontextmanager
async def replica(nats_url: str, deployment: str) -> AsyncIterator[Running]:
    """A whole server of ``deployment`` with its own store and caches (what it shares with
    the others goes over NATS)."""
    async with running_stack(TEST_KEYS, nats_url=nats_url, deployment=deployment,
                             limits=MACHINE_SPEED,
                             options=StackOptions(timers=False, bots=False,
                                                  durable_prefix=f"{deployment}-")) as run:
        yield run
