"""What the accounts tests share: a session's bearer metadata, how a call was refused, one
of several servers of a deployment, and the forms docs/accounts.md gives a profile's avatar id
and locale (as kept)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any, Final

import grpc
import pytest

from dast.v1 import accounts_pb2
from services.compose import Running, StackOptions, running_stack
from services.platform.errors import reason_of
from services.platform.limits import MACHINE_SPEED
from tests.support.tokens import TEST_KEYS

AVATAR_FORM: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
LOCALE_FORM: Final = re.compile(r"[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?")


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


async def stream_ending(stream: object, seconds: float = 30.0) -> grpc.aio.AioRpcError:
    """How a server stream ended, as an error to read its code and ``ErrorInfo`` from: it is
    read to its end, which must come within ``seconds``."""
    async def drain() -> None:
        while await stream.read() is not grpc.aio.EOF:  # type: ignore[attr-defined]
            pass

    with contextlib.suppress(grpc.aio.AioRpcError):
        await asyncio.wait_for(drain(), seconds)
    call: Any = stream
    return grpc.aio.AioRpcError(await call.code(), await call.initial_metadata(),
                                await call.trailing_metadata(), await call.details())
