"""The profile RPCs, sent hostile messages (the rule of tests/services/test_hostile_rpcs.py)
over an accounts server on PostgreSQL with players in it and callers of every kind: every
reply has a documented status, and whatever an accepted update stored keeps the documented
forms, read back whole only by the player, services and operators."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dast.v1 import accounts_pb2, accounts_pb2_grpc
from services.accounts.app import mount_accounts_service
from services.accounts.store import AccountsStore
from services.platform.auth import Role
from services.platform.errors import ServiceError, reason_of
from services.platform.limits import MACHINE_SPEED
from services.platform.server import bind, make_server
from services.platform.validation import clean_display_name
from tests.services.accounts.calls import AVATAR_FORM, LOCALE_FORM
from tests.support.hostile import HOSTILE_TEXT, calls, garbage_payloads, reply_problem, send
from tests.support.tokens import TEST_KEYS, signer, stranger_token, token

pytestmark = pytest.mark.timeout(180)
SERVICE: Final = accounts_pb2.DESCRIPTOR.services_by_name["AccountsService"]
METHODS: Final = [SERVICE.methods_by_name["GetProfile"], SERVICE.methods_by_name["UpdateProfile"]]
T = TypeVar("T")


@dataclass
class Callers:
    """The server under test and who calls it."""

    channel: grpc.aio.Channel
    tokens: dict[str, str | None]
    ids: list[str]
    owners: dict[str, str]
    """The player each session token (by name) belongs to."""


@pytest.fixture
async def callers(pg_url: str) -> AsyncIterator[Callers]:
    store = AccountsStore.open(pg_url)
    server = make_server(TEST_KEYS.ring, limits=MACHINE_SPEED)  # calls back to back
    mount_accounts_service(server, store, signer=signer("accounts"), ring=TEST_KEYS.ring)
    port = bind(server, "127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
            tokens: dict[str, str | None] = {}
            owners: dict[str, str] = {}
            for name in ("account", "other"):
                signed_in = await accounts.SignInGuest(
                    accounts_pb2.AccountsServiceSignInGuestRequest(
                        device_id=f"device-hostile-{name}", display_name=name.title()))
                tokens[name] = signed_in.tokens.access_token
                owners[name] = signed_in.player_id
            tokens |= {
                "stranger": token(owners["account"]),  # the player's id without a session
                "service": token("lobby", Role.SERVICE),
                "admin": token("root", Role.ADMIN),
                "expired": token(owners["account"], ttl_seconds=-60),
                "forged": stranger_token("root", Role.ADMIN),
                "garbage": "not.a.token",
                "none": None,
            }
            yield Callers(channel, tokens, [*owners.values(), "a-0000000000000000", "root"],
                          owners)
    finally:
        await server.stop(None)
        store.close()


def _check_profile(profile: accounts_pb2.Profile) -> None:
    """A profile as the server may send it: every field in its documented form."""
    assert clean_display_name(profile.display_name) == profile.display_name != ""
    assert profile.avatar_id == "" or AVATAR_FORM.fullmatch(profile.avatar_id)
    assert profile.locale == "" or LOCALE_FORM.fullmatch(profile.locale)
    if not profile.full:
        assert (profile.locale, profile.created_at_ms) == ("", 0)


async def _judge(callers: Callers, method: MethodDescriptor, payload: bytes,
                 token_name: str) -> grpc.StatusCode:
    """Send the call and check its reply; its status."""
    code, replies, error = await send(callers.channel, method, payload,
                                      callers.tokens[token_name])
    assert reply_problem(code, payload, error) is None, (method.name, token_name, payload)
    if code == grpc.StatusCode.OK:
        reply_class = (accounts_pb2.GetProfileResponse if method.name == "GetProfile"
                       else accounts_pb2.UpdateProfileResponse)
        profile = reply_class.FromString(replies[0]).profile
        _check_profile(profile)
        if method.name == "UpdateProfile":
            # Only a player in a session changes a profile, and only their own.
            assert token_name in callers.owners
            assert profile.player_id == callers.owners[token_name] and profile.full
    return code


def _drawn(strategy: st.SearchStrategy[T], examples: int) -> list[T]:
    """``examples`` values of ``strategy`` (drawn first, sent after: the calls are async)."""
    drawn: list[T] = []

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(strategy)
    def draw(value: T) -> None:
        drawn.append(value)

    draw()
    return drawn


async def test_hostile_profile_calls_get_documented_statuses_and_store_only_clean_values(
        callers: Callers) -> None:
    for method in METHODS:
        for payload in garbage_payloads(method):
            for name in callers.tokens:
                await _judge(callers, method, payload, name)
    seen: set[grpc.StatusCode] = set()
    for method, payload, name in _drawn(calls(METHODS, callers.ids, list(callers.tokens)),
                                        300):
        seen.add(await _judge(callers, method, payload, name))
    assert {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
            grpc.StatusCode.UNAUTHENTICATED} <= seen, seen
    # Whatever was accepted, the stored profiles read back in their forms, whole by admins.
    admin = (("authorization", f"Bearer {callers.tokens['admin']}"),)
    accounts = accounts_pb2_grpc.AccountsServiceStub(callers.channel)
    for player_id in callers.owners.values():
        profile = (await accounts.GetProfile(accounts_pb2.GetProfileRequest(
            player_id=player_id), metadata=admin)).profile
        _check_profile(profile)
        assert profile.full


def _expected(raw: str, check: Callable[[str], str]) -> str | None:
    """What the server should keep of ``raw`` by ``check``, or None when it should refuse."""
    try:
        return check(raw)
    except ServiceError:
        return None


def _canonical_locale(raw: str) -> str:
    """The locale rule, restated here from docs/accounts.md rather than imported."""
    matched = re.fullmatch(r"([A-Za-z]{2,3})(-[A-Za-z]{4})?(-[A-Za-z]{2}|-[0-9]{3})?", raw)
    if raw and matched is None:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "invalid_locale", raw)
    if not raw or matched is None:
        return ""
    language, script, region = matched.groups()
    return language.lower() + (script or "").title() + (region or "").upper()


def _avatar_id(raw: str) -> str:
    """The avatar id rule, restated from docs/accounts.md."""
    if raw and not AVATAR_FORM.fullmatch(raw):
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "invalid_avatar_id", raw)
    return raw


def _new_name(raw: str) -> str:
    """The display name rule (a NUL is refused by the server's guard, before the rule)."""
    name = clean_display_name(raw)
    if not name or "\x00" in raw:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "invalid_display_name", raw)
    return name


_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE_TEXT))
UPDATES = st.fixed_dictionaries({}, optional={
    "display_name": st.one_of(_TEXT, st.text(st.characters(codec="utf-8"), min_size=1,
                                              max_size=40)),
    "avatar_id": st.one_of(_TEXT, st.from_regex(r"[a-z0-9][a-z0-9_-]{0,70}", fullmatch=True)),
    "locale": st.one_of(_TEXT, st.from_regex(
        r"[A-Za-z]{1,4}(-[A-Za-z]{3,5})?(-([A-Za-z]{2}|[0-9]{3}))?", fullmatch=True)),
})
RULES: Final = {"display_name": _new_name, "avatar_id": _avatar_id, "locale": _canonical_locale}


async def test_an_update_keeps_exactly_what_the_documented_rules_keep(
        callers: Callers) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(callers.channel)
    own = (("authorization", f"Bearer {callers.tokens['account']}"),)
    for fields in _drawn(UPDATES, 150):
        before = (await accounts.GetProfile(accounts_pb2.GetProfileRequest(),
                                            metadata=own)).profile
        expected = {name: _expected(raw, RULES[name]) for name, raw in fields.items()}
        try:
            await accounts.UpdateProfile(accounts_pb2.UpdateProfileRequest(**fields),
                                         metadata=own)
            refusal = None
        except grpc.aio.AioRpcError as error:
            refusal = reason_of(error)
        after = (await accounts.GetProfile(accounts_pb2.GetProfileRequest(),
                                           metadata=own)).profile
        if not fields or None in expected.values():
            assert refusal is not None and after == before, (fields, after)
            continue
        assert refusal is None, (fields, refusal)
        assert (after.display_name, after.avatar_id, after.locale) == (
            expected.get("display_name", before.display_name),
            expected.get("avatar_id", before.avatar_id), expected.get("locale", before.locale))
