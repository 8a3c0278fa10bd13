"""AccountsService over gRPC, on the whole embedded stack: guests who keep their progress
with a device secret, the lobby's guests moving over, sessions of short access tokens and
rotating refresh tokens, sign-out."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    stats_pb2,
    stats_pb2_grpc,
)
from services.accounts.sessions import Sessions, TokenPolicy
from services.accounts.store import AccountsStore, RefreshRefused
from services.compose import StackOptions
from services.platform.auth import AuthError, Role, verify_token
from services.platform.config import load_settings
from services.platform.errors import Reason, reason_of
from tests.e2e.helpers import stack
from tests.support.tokens import TEST_KEYS, signer, stranger_token, token

pytestmark = pytest.mark.timeout(120)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as opened:
        yield opened


def _bearer(tokens: accounts_pb2.SessionTokens) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {tokens.access_token}"),)


async def _refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call  # type: ignore[misc]
    return refused.value.code(), reason_of(refused.value)


async def test_a_guest_keeps_its_player_with_the_device_secret(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    first = await accounts.SignInGuest(SignIn(device_id="phone-0001", display_name="Shirin"))
    assert first.player_id.startswith("g-") and first.display_name == "Shirin"
    assert len(first.device_secret) == 43  # 32 bytes, URL-safe base64 without padding
    # Without the secret, or with another, the device's player stays out of reach.
    for wrong in ("", "x" * 43):
        assert await _refused(accounts.SignInGuest(SignIn(
            device_id="phone-0001", device_secret=wrong))) == (
            grpc.StatusCode.UNAUTHENTICATED, "device_secret_invalid")
    again = await accounts.SignInGuest(SignIn(device_id="phone-0001",
                                              device_secret=first.device_secret))
    assert (again.player_id, again.display_name, again.device_secret) == (
        first.player_id, "Shirin", "")
    assert again.tokens.session_id != first.tokens.session_id  # a sign-in, a session


async def test_an_access_token_is_short_names_its_session_and_opens_other_services(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    signed_in = await accounts.SignInGuest(SignIn(device_id="phone-0002"))
    tokens = signed_in.tokens
    identity = verify_token(TEST_KEYS.ring, tokens.access_token)
    assert (identity.player_id, identity.session_id) == (signed_in.player_id, tokens.session_id)
    assert tokens.access_expires_at_ms - tokens.server_time_ms <= 15 * 60_000
    assert tokens.access_expires_at_ms - tokens.server_time_ms > 14 * 60_000
    assert tokens.refresh_expires_at_ms - tokens.server_time_ms == 30 * 86_400_000
    assert abs(tokens.server_time_ms - time.time() * 1000) < 60_000
    stats = stats_pb2_grpc.StatsServiceStub(channel)
    assert await _refused(stats.GetPlayerStats(
        stats_pb2.GetPlayerStatsRequest(player_id=signed_in.player_id),
        metadata=_bearer(tokens))) == (grpc.StatusCode.NOT_FOUND, "player_not_found")


async def test_refresh_rotates_and_a_reused_token_ends_the_session(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    signed_in = await accounts.SignInGuest(SignIn(device_id="phone-0003"))
    first = signed_in.tokens
    renewed = await accounts.Refresh(accounts_pb2.RefreshRequest(
        refresh_token=first.refresh_token))
    assert renewed.player_id == signed_in.player_id
    assert renewed.tokens.session_id == first.session_id
    assert renewed.tokens.refresh_token != first.refresh_token
    assert verify_token(TEST_KEYS.ring, renewed.tokens.access_token).session_id == first.session_id
    # The first refresh token was spent: presenting it again ends the whole session, so
    # the token the rotation handed out stops working too.
    assert await _refused(accounts.Refresh(accounts_pb2.RefreshRequest(
        refresh_token=first.refresh_token))) == (
        grpc.StatusCode.UNAUTHENTICATED, "refresh_token_reused")
    assert await _refused(accounts.Refresh(accounts_pb2.RefreshRequest(
        refresh_token=renewed.tokens.refresh_token))) == (
        grpc.StatusCode.UNAUTHENTICATED, "refresh_token_invalid")
    assert await _refused(accounts.Refresh(accounts_pb2.RefreshRequest())) == (
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")


async def test_sign_out_ends_this_session_and_everywhere_ends_them_all(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    first = await accounts.SignInGuest(SignIn(device_id="phone-0004"))
    sessions = [first.tokens]
    for _ in range(2):
        sessions.append((await accounts.SignInGuest(SignIn(
            device_id="phone-0004", device_secret=first.device_secret))).tokens)
    await accounts.SignOut(accounts_pb2.SignOutRequest(), metadata=_bearer(sessions[0]))
    assert await _refused(accounts.Refresh(accounts_pb2.RefreshRequest(
        refresh_token=sessions[0].refresh_token))) == (
        grpc.StatusCode.UNAUTHENTICATED, "refresh_token_invalid")
    ended = await accounts.SignOutEverywhere(accounts_pb2.SignOutEverywhereRequest(),
                                             metadata=_bearer(sessions[1]))
    assert ended.sessions_ended == 2
    for tokens in sessions[1:]:
        assert await _refused(accounts.Refresh(accounts_pb2.RefreshRequest(
            refresh_token=tokens.refresh_token))) == (
            grpc.StatusCode.UNAUTHENTICATED, "refresh_token_invalid")


async def test_a_lobby_guest_moves_over_with_its_player_id_once(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    guest = await lobby.SignInGuest(lobby_pb2.SignInGuestRequest(device_id="old-phone-0001"))
    bearer = (("authorization", f"Bearer {guest.token}"),)
    moved = await accounts.SignInGuest(SignIn(device_id="old-phone-0001", display_name="Dara"),
                                       metadata=bearer)
    assert (moved.player_id, len(moved.device_secret)) == (guest.player_id, 43)
    assert verify_token(TEST_KEYS.ring, moved.tokens.access_token).player_id == guest.player_id
    # From now on the device secret guards the guest here, lobby token or not.
    assert await _refused(accounts.SignInGuest(SignIn(device_id="old-phone-0001"),
                                               metadata=bearer)) == (
        grpc.StatusCode.UNAUTHENTICATED, "device_secret_invalid")
    assert await _refused(accounts.SignInGuest(SignIn(device_id="other-phone-0001"),
                                               metadata=bearer)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "guest_already_moved")
    # Only a lobby guest's token moves a player: not a session's, a service's or a forged one.
    for other in (moved.tokens.access_token, token("lobby", Role.SERVICE),
                  stranger_token(guest.player_id),
                  "not.a.token"):
        assert await _refused(accounts.SignInGuest(
            SignIn(device_id="third-phone-0001"),
            metadata=(("authorization", f"Bearer {other}"),))) == (
            grpc.StatusCode.UNAUTHENTICATED, "token_invalid")


async def test_sign_out_needs_a_token_of_a_session(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    lobby_guest = (("authorization", f"Bearer {token('g-00000000000000aa')}"),)
    assert await _refused(accounts.SignOut(accounts_pb2.SignOutRequest(),
                                           metadata=lobby_guest)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "no_session")
    assert await _refused(accounts.SignOut(accounts_pb2.SignOutRequest())) == (
        grpc.StatusCode.UNAUTHENTICATED, "unauthenticated")


async def test_sign_in_checks_its_fields(
        channel: grpc.aio.Channel) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
    for request, reason in (
        (SignIn(device_id="short"), "invalid_request"),
        (SignIn(device_id="phone 0005\t"), "invalid_request"),
        (SignIn(device_id="phone-0005", display_name="\u202e" * 3), "invalid_display_name"),
    ):
        assert await _refused(accounts.SignInGuest(request)) == (
            grpc.StatusCode.INVALID_ARGUMENT, reason)


@contextlib.contextmanager
def _sessions(policy: TokenPolicy, now: list[int]) -> Iterator[Sessions]:
    """Sessions over a store in memory, on the clock ``now[0]`` (which the test moves)."""
    store = AccountsStore.open(None)
    try:
        yield Sessions(store, signer("accounts"), TEST_KEYS.ring, policy=policy,
                       clock=lambda: now[0])
    finally:
        store.close()


async def test_a_refresh_token_expires_after_its_days_on_the_services_clock() -> None:
    now = [int(time.time() * 1000)]
    with _sessions(TokenPolicy(access_minutes=5, refresh_days=2), now) as sessions:
        tokens = await sessions.open("g-00000000000000bb")
        assert verify_token(TEST_KEYS.ring, tokens.access_token).session_id == tokens.session_id
        now[0] += 2 * 86_400_000 - 1
        _, tokens = await sessions.refresh(tokens.refresh_token)  # just in time
        now[0] += 2 * 86_400_000
        with pytest.raises(RefreshRefused):
            await sessions.refresh(tokens.refresh_token)
        # The access token minted on the moved clock carries that clock's expiry.
        with pytest.raises(AuthError):
            verify_token(TEST_KEYS.ring, sessions.mint_access("g-00000000000000bb", "sid",
                                                              now[0] - 86_400_000))


def test_token_lifetimes_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAST_ACCESS_TOKEN_MINUTES", "5")
    monkeypatch.setenv("DAST_REFRESH_TOKEN_DAYS", "7")
    settings = load_settings()
    assert (settings.access_token_minutes, settings.refresh_token_days) == (5, 7)
    monkeypatch.delenv("DAST_ACCESS_TOKEN_MINUTES")
    monkeypatch.delenv("DAST_REFRESH_TOKEN_DAYS")
    defaults = load_settings()
    assert (defaults.access_token_minutes, defaults.refresh_token_days) == (15, 30)


async def test_access_tokens_may_live_seconds_for_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    # DAST_ACCESS_TOKEN_SECONDS, when set, replaces the minutes (a token expiring mid-match).
    monkeypatch.setenv("DAST_ACCESS_TOKEN_SECONDS", "3")
    assert load_settings().access_token_seconds == 3
    monkeypatch.delenv("DAST_ACCESS_TOKEN_SECONDS")
    assert load_settings().access_token_seconds == 0
    options = StackOptions(access_token_minutes=15, access_token_seconds=3)
    assert options.revocation_minutes == 1  # revoked sessions are kept while tokens live
    assert StackOptions(access_token_minutes=15).revocation_minutes == 15
    now = [int(time.time() * 1000)]
    with _sessions(TokenPolicy(access_minutes=15, access_seconds=3), now) as sessions:
        tokens = await sessions.open("g-00000000000000cc")
        assert tokens.access_expires_at_ms - tokens.server_time_ms <= 3_000
        assert verify_token(TEST_KEYS.ring, tokens.access_token).session_id == tokens.session_id
        now[0] -= 4_000  # a token minted 4 s ago has expired
        with pytest.raises(AuthError) as expired:
            verify_token(TEST_KEYS.ring, sessions.mint_access("g-00000000000000cc", "sid",
                                                              now[0]))
        assert expired.value.reason == Reason.TOKEN_EXPIRED
