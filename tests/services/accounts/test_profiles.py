"""Profiles over gRPC, on the whole embedded stack with the accounts tables in SQLite and in
PostgreSQL: a player reads and changes their own, everyone signed in reads the public part of
anyone's, and hostile values are refused with stable reasons."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from dast.v1 import accounts_pb2, accounts_pb2_grpc, lobby_pb2, lobby_pb2_grpc
from services.platform.auth import Role
from services.platform.errors import error_info_of, wire_name
from tests.e2e.helpers import stack
from tests.services.accounts.calls import refused, session_bearer
from tests.support.tokens import bearer, stranger_token

pytestmark = pytest.mark.timeout(120)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest
Get = accounts_pb2.GetProfileRequest
Update = accounts_pb2.UpdateProfileRequest
Metadata = tuple[tuple[str, str], ...]


@pytest.fixture(params=["sqlite", "postgresql"])
async def channel(request: pytest.FixtureRequest) -> AsyncIterator[grpc.aio.Channel]:
    store_url = None if request.param == "sqlite" else request.getfixturevalue("pg_url")
    async with stack(timers=False, bots=False, store_url=store_url) as run, \
            grpc.aio.insecure_channel(run.address) as opened:
        yield opened


@pytest.fixture
def accounts(channel: grpc.aio.Channel) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(channel)


async def _player(accounts: accounts_pb2_grpc.AccountsServiceStub, device_id: str,
                  name: str = "") -> tuple[str, Metadata]:
    """A new guest's player id and the bearer metadata of its session."""
    signed_in = await accounts.SignInGuest(SignIn(device_id=device_id, display_name=name))
    return signed_in.player_id, session_bearer(signed_in.tokens)


def _bearer(raw_token: str) -> Metadata:
    return (("authorization", f"Bearer {raw_token}"),)


async def test_a_player_reads_their_whole_profile_and_changes_one_field_at_a_time(
        accounts: accounts_pb2_grpc.AccountsServiceStub) -> None:
    player_id, signed_in = await _player(accounts, "profile-device-1", "Shirin")
    own = (await accounts.GetProfile(Get(), metadata=signed_in)).profile
    assert (own.player_id, own.display_name, own.avatar_id, own.locale, own.full) == (
        player_id, "Shirin", "", "", True)
    assert own.created_at_ms > 0
    assert (await accounts.GetProfile(Get(player_id=player_id), metadata=signed_in)).profile == own

    changed = (await accounts.UpdateProfile(Update(locale="FA-ir"), metadata=signed_in)).profile
    assert (changed.display_name, changed.avatar_id, changed.locale) == ("Shirin", "", "fa-IR")
    changed = (await accounts.UpdateProfile(Update(avatar_id="cat-03"),
                                            metadata=signed_in)).profile
    assert (changed.display_name, changed.avatar_id, changed.locale) == (
        "Shirin", "cat-03", "fa-IR")
    # The name is cleaned as at sign-in: the override and the zero-width space go.
    changed = (await accounts.UpdateProfile(Update(display_name="  شیرین\u202e\u200b "),
                                            metadata=signed_in)).profile
    assert (changed.display_name, changed.avatar_id, changed.locale) == (
        "شیرین", "cat-03", "fa-IR")
    assert changed.created_at_ms == own.created_at_ms and changed.full
    # An empty avatar id and locale are values: none chosen.
    changed = (await accounts.UpdateProfile(Update(avatar_id="", locale=""),
                                            metadata=signed_in)).profile
    assert (changed.display_name, changed.avatar_id, changed.locale) == ("شیرین", "", "")
    assert (await accounts.GetProfile(Get(), metadata=signed_in)).profile == changed


async def test_others_read_the_public_part_and_services_and_operators_the_whole(
        accounts: accounts_pb2_grpc.AccountsServiceStub, channel: grpc.aio.Channel) -> None:
    player_id, signed_in = await _player(accounts, "profile-device-2", "Dara")
    await accounts.UpdateProfile(Update(avatar_id="fox", locale="ar-SA"), metadata=signed_in)
    _, other = await _player(accounts, "profile-device-3")
    lobby_guest = await lobby_pb2_grpc.LobbyServiceStub(channel).SignInGuest(
        lobby_pb2.SignInGuestRequest(device_id="profile-lobby-1"))
    for reader in (other, _bearer(lobby_guest.token), bearer("g-00000000000000ff")):
        seen = (await accounts.GetProfile(Get(player_id=player_id), metadata=reader)).profile
        assert seen == accounts_pb2.Profile(player_id=player_id, display_name="Dara",
                                            avatar_id="fox", full=False)
    for role, caller in ((Role.SERVICE, "lobby"), (Role.ADMIN, "root")):
        seen = (await accounts.GetProfile(Get(player_id=player_id),
                                          metadata=bearer(caller, role))).profile
        assert (seen.locale, seen.full, seen.created_at_ms > 0) == ("ar-SA", True, True)
        # They name the player: they have no profile of their own.
        assert await refused(accounts.GetProfile(
            Get(), metadata=bearer(caller, role))) == (
            grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")


async def test_a_player_id_with_no_account_is_not_found(
        accounts: accounts_pb2_grpc.AccountsServiceStub, channel: grpc.aio.Channel) -> None:
    _, signed_in = await _player(accounts, "profile-device-4")
    lobby_guest = await lobby_pb2_grpc.LobbyServiceStub(channel).SignInGuest(
        lobby_pb2.SignInGuestRequest(device_id="profile-lobby-2"))
    for player_id in ("a-0000000000000000", lobby_guest.player_id, "x" * 128, "g-';--"):
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await accounts.GetProfile(Get(player_id=player_id), metadata=signed_in)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert (missing.value.details() or "").endswith("has signed in to the accounts service")
    # A lobby guest that has not moved over has no profile of its own either.
    assert await refused(accounts.GetProfile(Get(), metadata=_bearer(lobby_guest.token))) == (
        grpc.StatusCode.NOT_FOUND, "account_not_found")


async def test_only_the_player_in_a_session_changes_a_profile(
        accounts: accounts_pb2_grpc.AccountsServiceStub, channel: grpc.aio.Channel) -> None:
    player_id, signed_in = await _player(accounts, "profile-device-5", "Nima")
    for role, caller in ((Role.SERVICE, "lobby"), (Role.ADMIN, "root")):
        assert await refused(accounts.UpdateProfile(
            Update(display_name="Renamed"), metadata=bearer(caller, role))) == (
            grpc.StatusCode.PERMISSION_DENIED, "role_required")
    # A token without a session (the lobby's guest sign-in) proves less than the device
    # secret: it changes nothing, even naming the same player.
    assert await refused(accounts.UpdateProfile(
        Update(display_name="Renamed"), metadata=bearer(player_id))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "no_session")
    for metadata, reason in (((), "unauthenticated"),
                             (_bearer(stranger_token(player_id)), "token_invalid"),
                             (bearer(player_id, ttl_seconds=-60), "token_expired")):
        assert await refused(accounts.UpdateProfile(
            Update(display_name="Renamed"), metadata=metadata)) == (
            grpc.StatusCode.UNAUTHENTICATED, reason)
    # A signed-out session changes nothing either.
    await accounts.SignOut(accounts_pb2.SignOutRequest(), metadata=signed_in)
    assert await refused(accounts.UpdateProfile(Update(display_name="Renamed"),
                                                metadata=signed_in)) == (
        grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
    admin = bearer("root", Role.ADMIN)
    assert (await accounts.GetProfile(Get(player_id=player_id),
                                      metadata=admin)).profile.display_name == "Nima"


HOSTILE_UPDATES = [
    (Update(), "invalid_request", ""),
    (Update(display_name=""), "invalid_display_name", "display_name"),
    (Update(display_name="\u202e\u200b\u2066 \n"), "invalid_display_name", "display_name"),
    (Update(display_name="x" * 33), "invalid_display_name", "display_name"),
    # Past any text field's limit, or a NUL: the server's guard refuses it first.
    (Update(display_name="x" * 300), "invalid_request", "display_name"),
    (Update(display_name="Nima\x00"), "invalid_request", "display_name"),
    (Update(avatar_id="Cat"), "invalid_avatar_id", "avatar_id"),
    (Update(avatar_id="../../etc/passwd"), "invalid_avatar_id", "avatar_id"),
    (Update(avatar_id="a" * 65), "invalid_avatar_id", "avatar_id"),
    # No id field holds a space or a format character (the guard again).
    (Update(avatar_id="cat\u202e"), "invalid_request", "avatar_id"),
    (Update(avatar_id="cat 03"), "invalid_request", "avatar_id"),
    (Update(locale="fa_IR"), "invalid_locale", "locale"),
    (Update(locale="english"), "invalid_locale", "locale"),
    (Update(locale="fa-IR-x-private"), "invalid_locale", "locale"),
    (Update(locale="fa\u202e"), "invalid_locale", "locale"),
    (Update(locale="fa\x00"), "invalid_request", "locale"),
    # One bad field refuses the whole update: nothing is changed.
    (Update(display_name="Fine", avatar_id="ok", locale="nope-nope"), "invalid_locale",
     "locale"),
]


@pytest.mark.parametrize(("request_", "reason", "field"), HOSTILE_UPDATES)
async def test_hostile_updates_are_refused_and_change_nothing(
        accounts: accounts_pb2_grpc.AccountsServiceStub,
        request_: accounts_pb2.UpdateProfileRequest, reason: str, field: str) -> None:
    _, signed_in = await _player(accounts, "profile-device-6", "Before")
    before = (await accounts.GetProfile(Get(), metadata=signed_in)).profile
    with pytest.raises(grpc.aio.AioRpcError) as refusal:
        await accounts.UpdateProfile(request_, metadata=signed_in)
    info = error_info_of(refusal.value)
    assert info is not None
    assert (refusal.value.code(), info.reason, info.metadata.get("field", "")) == (
        grpc.StatusCode.INVALID_ARGUMENT, wire_name(reason), field)
    # The message names the field and quotes what was sent only short and escaped.
    message = refusal.value.details() or ""
    assert message.startswith(field) and message.isprintable() and len(message) < 200, message
    assert (await accounts.GetProfile(Get(), metadata=signed_in)).profile == before
