"""Revocation that reaches every server: an ended session's access tokens are refused at once
(UNAUTHENTICATED ``session_revoked``) and its open streams end with that status, in one
process and across two servers sharing a NATS deployment (services/platform/revocations.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    stats_pb2,
    stats_pb2_grpc,
)
from services.platform.auth import Role
from services.platform.errors import reason_of
from services.platform.revocations import REVOKED_STATUS, InProcessRevocations, SessionStreams
from tests.conftest import NatsNames
from tests.e2e.helpers import stack
from tests.services.accounts.calls import refused, replica, session_bearer, stream_ending
from tests.support.tokens import bearer

pytestmark = pytest.mark.timeout(120)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest
WAIT_SECONDS = 30.0
"""How long a revocation may take to reach a stream or another server (it takes
milliseconds; the bound only keeps a broken build from hanging)."""


async def _end_of(stream: Any) -> tuple[grpc.StatusCode, str | None]:
    """How ``stream`` ended: its code and reason (within :data:`WAIT_SECONDS`)."""
    ended = await stream_ending(stream, WAIT_SECONDS)
    return ended.code(), reason_of(ended)


async def _game_of(channel: grpc.aio.Channel, player_id: str, game_id: str) -> str:
    """A Hokm match seating ``player_id`` (created with a service token)."""
    reply = await game_pb2_grpc.GameServiceStub(channel).CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, game_id=game_id, hokm=hokm_pb2.HokmRules(),
        players=[common_pb2.Player(player_id=player_id),
                 *(common_pb2.Player(player_id=f"{game_id}-p{seat}") for seat in (1, 2, 3))],
    ), metadata=bearer("lobby", Role.SERVICE))
    return str(reply.game_id)


async def _subscribed(channel: grpc.aio.Channel, game_id: str,
                      tokens: accounts_pb2.SessionTokens) -> Any:
    """A live ``Subscribe`` stream of the seat, its first event read."""
    stream = game_pb2_grpc.GameServiceStub(channel).Subscribe(
        game_pb2.SubscribeRequest(game_id=game_id), metadata=session_bearer(tokens))
    assert await asyncio.wait_for(stream.read(), WAIT_SECONDS) is not grpc.aio.EOF
    return stream


async def test_sign_out_everywhere_ends_live_streams_and_refuses_the_next_call() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        phone = await accounts.SignInGuest(SignIn(device_id="revoke-phone-1"))
        tablet = await accounts.SignInGuest(SignIn(device_id="revoke-phone-1",
                                                   device_secret=phone.device_secret))
        game_id = await _game_of(channel, phone.player_id, "revoke-game-1")
        playing = await _subscribed(channel, game_id, phone.tokens)
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        table = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
            metadata=session_bearer(tablet.tokens))).table
        watching = lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table.table_id),
                                    metadata=session_bearer(tablet.tokens))
        assert await asyncio.wait_for(watching.read(), WAIT_SECONDS) is not grpc.aio.EOF

        # Signing out everywhere from the tablet ends both sessions' streams at once ...
        ended = await accounts.SignOutEverywhere(accounts_pb2.SignOutEverywhereRequest(),
                                                 metadata=session_bearer(tablet.tokens))
        assert ended.sessions_ended == 2
        revoked = (grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
        assert await _end_of(playing) == revoked
        assert await _end_of(watching) == revoked
        # ... and the next call of either, long before the access tokens expire.
        game = game_pb2_grpc.GameServiceStub(channel)
        assert await refused(game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                          metadata=session_bearer(phone.tokens))) == revoked
        assert await refused(lobby.ListTables(lobby_pb2.ListTablesRequest(),
                                               metadata=session_bearer(tablet.tokens))) == revoked
        # A new sign-in is a new session, which works.
        again = await accounts.SignInGuest(SignIn(device_id="revoke-phone-1",
                                                  device_secret=phone.device_secret))
        view = await game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                  metadata=session_bearer(again.tokens))
        assert view.hokm.seat == 0


async def test_a_reused_refresh_token_revokes_its_session_and_sign_out_only_its_own() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        stats = stats_pb2_grpc.StatsServiceStub(channel)
        first = await accounts.SignInGuest(SignIn(device_id="revoke-phone-2"))
        other = await accounts.SignInGuest(SignIn(device_id="revoke-phone-3"))
        spent = accounts_pb2.RefreshRequest(refresh_token=first.tokens.refresh_token)
        renewed = await accounts.Refresh(spent)
        await refused(accounts.Refresh(spent))  # reused: the session ends
        for tokens in (first.tokens, renewed.tokens):
            assert await refused(stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(
                player_id="anyone"), metadata=session_bearer(tokens))) == (
                grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
        await accounts.SignOut(accounts_pb2.SignOutRequest(), metadata=session_bearer(other.tokens))
        assert await refused(stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(
            player_id="anyone"), metadata=session_bearer(other.tokens))) == (
            grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
        # A token without a session (a service's, the lobby's guests') is not concerned.
        assert await refused(stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(
            player_id="anyone"), metadata=bearer("p0"))) == (
            grpc.StatusCode.NOT_FOUND, "player_not_found")


async def test_revocations_expire_with_the_access_tokens_and_tell_listeners_once() -> None:
    now = [1_000_000]
    revocations = InProcessRevocations(keep_ms=60_000, clock=lambda: now[0])
    told: list[str] = []
    revocations.listen(told.append)
    await revocations.revoke(["s1", "s2"])
    await revocations.revoke(["s1"])
    assert told == ["s1", "s2"]
    assert revocations.is_revoked("s1") and not revocations.is_revoked("s3")
    now[0] += 60_000  # the session's access tokens have expired by now
    assert not revocations.is_revoked("s1")


async def test_a_stream_handing_a_message_to_grpc_ends_when_it_resumes() -> None:
    streams = SessionStreams()
    entry = streams.enter(("s1",))
    entry.at_yield = True
    streams.revoked("s1")
    assert entry.ended_with is REVOKED_STATUS and len(streams) == 0
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_signing_out_on_one_server_reaches_the_other_over_nats(
        nats_url: str, nats_names: NatsNames) -> None:
    deployment = nats_names.deployment
    async with replica(nats_url, deployment) as first, \
            replica(nats_url, deployment) as second, \
            grpc.aio.insecure_channel(first.address) as one, \
            grpc.aio.insecure_channel(second.address) as two:
        accounts = accounts_pb2_grpc.AccountsServiceStub(one)
        signed_in = await accounts.SignInGuest(SignIn(device_id="revoke-phone-4"))
        # The second server takes the session's token (its cache holds it from now on) and
        # streams a match to it.
        game_id = await _game_of(two, signed_in.player_id, "revoke-game-2")
        playing = await _subscribed(two, game_id, signed_in.tokens)
        game = game_pb2_grpc.GameServiceStub(two)
        await game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                           metadata=session_bearer(signed_in.tokens))

        await accounts.SignOut(accounts_pb2.SignOutRequest(),
                               metadata=session_bearer(signed_in.tokens))
        revoked = (grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
        assert await _end_of(playing) == revoked
        assert await refused(game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                           metadata=session_bearer(signed_in.tokens))) == revoked
