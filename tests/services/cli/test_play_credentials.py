"""``dast play``'s session with the accounts service (services/cli/play/credentials.py),
against a running stack whose access tokens live 2 seconds: the guest's device secret kept
per server and used again, the access token refreshed before it expires, a call refused as
expired refreshed and sent again, and a session that ended refused with its reason."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import pytest

from dast.v1 import accounts_pb2, lobby_pb2
from services.accounts.reasons import AccountsReason
from services.cli.play import sign_in
from services.cli.play.credentials import DeviceSecrets
from services.cli.play.session import Session
from services.platform.errors import reason_of
from tests.e2e.helpers import stack

pytestmark = pytest.mark.timeout(60)
ACCESS_SECONDS = 2


def _list_tables(session: Session) -> lobby_pb2.ListTablesResponse:
    reply: lobby_pb2.ListTablesResponse = session.call("ListTables",
                                                      lobby_pb2.ListTablesRequest())
    return reply


def _guest_again(address: str, secrets: DeviceSecrets, device: str) -> str:
    """A new session of the same machine's guest (as `dast play` run again)."""
    session = Session(address)
    try:
        sign_in(session, secrets, device_id=device, name="Again")
        return session.player_id
    finally:
        session.close()


async def test_the_device_secret_is_kept_per_server_and_signs_the_guest_in_again(
    tmp_path: Path,
) -> None:
    secrets = DeviceSecrets(tmp_path / "device-secrets.json")
    async with stack(timers=False, bots=False) as run:
        first = await asyncio.to_thread(_guest_again, run.address, secrets, "cli-device-0001")
        assert len(secrets.get(run.address)) == 43 and secrets.get("elsewhere:1") == ""
        again = await asyncio.to_thread(_guest_again, run.address, secrets, "cli-device-0001")
        assert again == first
        # Without the secret (another machine's file) the device id alone is refused.
        with pytest.raises(grpc.RpcError) as refused:
            await asyncio.to_thread(_guest_again, run.address,
                                    DeviceSecrets(tmp_path / "other.json"), "cli-device-0001")
        assert reason_of(refused.value) == AccountsReason.DEVICE_SECRET_INVALID


def _refreshing_play(address: str) -> dict[str, int]:
    session = Session(address)
    try:
        session.sign_in("cli-device-0002", "Refresher")
        credentials = session.credentials
        for _ in range(4):  # calls over twice the token's lifetime
            _list_tables(session)
            time.sleep(ACCESS_SECONDS / 2)
        refreshed_ahead = credentials.refreshes
        # This machine's clock stops agreeing with the server's (it slept, or was set back):
        # the client believes its token good, the server refuses it as expired.
        credentials.clock = lambda: time.monotonic() - 3600
        time.sleep(ACCESS_SECONDS + 0.2)
        before = credentials.refreshes
        _list_tables(session)
        return {"refreshed_ahead": refreshed_ahead, "refused_as_expired":
                credentials.refused_as_expired, "refreshes_after": credentials.refreshes - before}
    finally:
        session.close()


async def test_the_access_token_is_refreshed_ahead_and_after_a_refusal_as_expired() -> None:
    async with stack(timers=False, bots=False, access_token_seconds=ACCESS_SECONDS) as run:
        counts = await asyncio.to_thread(_refreshing_play, run.address)
    assert counts["refreshed_ahead"] >= 1
    assert counts["refused_as_expired"] == 1 and counts["refreshes_after"] == 1


def _after_sign_out(address: str) -> grpc.RpcError:
    session = Session(address)
    try:
        session.sign_in("cli-device-0003", "Leaver")
        accounts = session.credentials.accounts
        bearer = (("authorization", f"Bearer {session.credentials.access_token()}"),)
        accounts.SignOut(accounts_pb2.SignOutRequest(), metadata=bearer)
        session.credentials.clock = lambda: time.monotonic() + 3600  # the token is due
        with pytest.raises(grpc.RpcError) as refused:
            _list_tables(session)
        return refused.value
    finally:
        session.close()


async def test_a_session_that_ended_is_refused_with_its_reason() -> None:
    async with stack(timers=False, bots=False) as run:
        error = await asyncio.to_thread(_after_sign_out, run.address)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert reason_of(error) == AccountsReason.REFRESH_TOKEN_INVALID
