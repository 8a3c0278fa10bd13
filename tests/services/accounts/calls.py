"""What the accounts tests share: a session's bearer metadata, how a call was refused, and
the forms docs/accounts.md gives a profile's avatar id and locale (as kept)."""

from __future__ import annotations

import re
from typing import Final

import grpc
import pytest

from dast.v1 import accounts_pb2
from services.platform.errors import reason_of

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
