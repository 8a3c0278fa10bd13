"""The lobby over gRPC: guests, tables, seats, bots, start, quick match, rematch, watch.

docs/rules/hokm.md "What the app adds": table settings (target_score 3/5/7/10, turn_seconds
15/30/45/60), bots fill empty seats when the host starts.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, lobby_pb2, lobby_pb2_grpc
from services.compose import StackOptions
from services.lobby.reasons import LobbyReason
from services.platform.config import Settings
from services.platform.errors import reason_of
from tests.e2e.helpers import Guest, stack, wait_for

pytestmark = pytest.mark.timeout(120)
HOKM = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)


async def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code()


async def test_the_device_sign_in_is_off_unless_asked_for_and_points_to_accounts() -> None:
    # A device id alone is no credential: a server on its defaults refuses the lobby's
    # SignInGuest, whatever the request, and names the way in that replaced it.
    assert Settings().lobby_device_sign_in is False
    assert StackOptions().lobby_device_sign_in is False
    async with stack(timers=False, bots=False, lobby_device_sign_in=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        for request in (lobby_pb2.SignInGuestRequest(device_id="device-retired-1"),
                        lobby_pb2.SignInGuestRequest(device_id="short")):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await lobby.SignInGuest(request)
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert reason_of(caught.value) == LobbyReason.DEVICE_SIGN_IN_RETIRED
            assert "AccountsService.SignInGuest" in (caught.value.details() or "")
        # The accounts service's guests play on: their tokens open tables.
        guest = await Guest.sign_in_with_accounts(channel, "device-retired-2")
        table = (await guest.call("CreateTable", lobby_pb2.CreateTableRequest(settings=HOKM))).table
        assert table.seats[0].player_id == guest.player_id


async def test_a_device_signs_in_as_the_same_guest_and_may_rename() -> None:
    # (The test stack keeps the lobby's retired device sign-in on: tests/e2e/helpers.py.)
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        first = await Guest.sign_in(channel, "device-same-guest")
        again = await Guest.sign_in(channel, "device-same-guest", "Nima")
        assert first.player_id == again.player_id
        table = (await again.call("CreateTable", lobby_pb2.CreateTableRequest(settings=HOKM))).table
        assert table.seats[0].display_name == "Nima"
        assert await _code(first.lobby.SignInGuest(
            lobby_pb2.SignInGuestRequest(device_id="short"))) == grpc.StatusCode.INVALID_ARGUMENT


async def test_table_settings_outside_the_allowed_values_are_refused() -> None:
    # docs/rules/hokm.md "What the app adds": target_score 3/5/7/10, turn_seconds 15/30/45/60.
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, "device-settings")
        for bad in (lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=4),
                    lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                            turn_seconds=20)):
            call = host.call("CreateTable", lobby_pb2.CreateTableRequest(settings=bad))
            assert await _code(call) == grpc.StatusCode.INVALID_ARGUMENT


async def test_seats_bots_and_start_follow_the_host() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, "device-host-1", "Host")
        friend = await Guest.sign_in(channel, "device-friend-1", "Friend")
        settings = lobby_pb2.TableSettings()
        settings.CopyFrom(HOKM)
        settings.turn_seconds = 30
        table = (await host.call("CreateTable",
                                 lobby_pb2.CreateTableRequest(settings=settings))).table
        listed = await friend.call("ListTables", lobby_pb2.ListTablesRequest())
        assert table.table_id in [t.table_id for t in listed.tables]
        joined = (await friend.call("JoinTable", lobby_pb2.JoinTableRequest(
            table_id=table.table_id, seat=2))).table
        assert joined.seats[2].player_id == friend.player_id
        taken = friend.call("ChooseSeat", lobby_pb2.ChooseSeatRequest(
            table_id=table.table_id, seat=0))
        assert await _code(taken) == grpc.StatusCode.FAILED_PRECONDITION
        moved = (await friend.call("ChooseSeat", lobby_pb2.ChooseSeatRequest(
            table_id=table.table_id, seat=1))).table
        assert moved.seats[1].player_id == friend.player_id and not moved.seats[2].player_id
        not_host = friend.call("StartGame", lobby_pb2.StartGameRequest(table_id=table.table_id))
        assert await _code(not_host) == grpc.StatusCode.PERMISSION_DENIED
        with_bot = (await host.call("AddBot", lobby_pb2.AddBotRequest(
            table_id=table.table_id, seat=3, level=lobby_pb2.BOT_LEVEL_GREEDY))).table
        assert with_bot.seats[3].is_bot and with_bot.seats[3].bot_level == 2
        started = (await host.call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))).table
        assert started.status == lobby_pb2.TABLE_STATUS_PLAYING
        assert [s.is_bot for s in started.seats] == [False, False, True, True]
        # The game exists with the table's seats and settings.
        view = await host.call("GetView", game_pb2.GetViewRequest(game_id=started.game_id))
        assert [p.player_id for p in view.hokm.players] == [s.player_id for s in started.seats]
        assert view.hokm.rules.turn_seconds == 30 and view.hokm.rules.target_score == 3
        again = host.call("StartGame", lobby_pb2.StartGameRequest(table_id=table.table_id))
        assert await _code(again) == grpc.StatusCode.FAILED_PRECONDITION


async def test_private_tables_are_unlisted_and_joined_by_invite_code() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, "device-host-2")
        friend = await Guest.sign_in(channel, "device-friend-2")
        settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True)
        table = (await host.call("CreateTable",
                                 lobby_pb2.CreateTableRequest(settings=settings))).table
        assert table.invite_code
        listed = await friend.call("ListTables", lobby_pb2.ListTablesRequest())
        assert table.table_id not in [t.table_id for t in listed.tables]
        seen = (await friend.call("GetTable",
                                  lobby_pb2.GetTableRequest(table_id=table.table_id))).table
        assert seen.invite_code == ""
        by_id = friend.call("JoinTable", lobby_pb2.JoinTableRequest(table_id=table.table_id))
        assert await _code(by_id) == grpc.StatusCode.PERMISSION_DENIED
        joined = (await friend.call("JoinTable", lobby_pb2.JoinTableRequest(
            invite_code=table.invite_code))).table
        assert joined.seats[1].player_id == friend.player_id
        assert joined.invite_code == table.invite_code


async def test_quick_match_seats_players_at_one_public_table_and_leaving_hands_over_host(
) -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        first = await Guest.sign_in(channel, "device-quick-1")
        second = await Guest.sign_in(channel, "device-quick-2")
        request = lobby_pb2.QuickMatchRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm_variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS)
        opened = (await first.call("QuickMatch", request)).table
        joined = (await second.call("QuickMatch", request)).table
        assert joined.table_id == opened.table_id and len(joined.seats) == 2
        left = (await first.call("LeaveTable", lobby_pb2.LeaveTableRequest(
            table_id=opened.table_id))).table
        assert left.host_id == second.player_id and not left.seats[0].player_id


async def test_watch_streams_changes_and_rematch_starts_a_new_match() -> None:
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, "device-host-3")
        table = (await host.call("CreateTable",
                                 lobby_pb2.CreateTableRequest(settings=HOKM))).table
        updates: list[lobby_pb2.TableUpdate] = []

        async def watch() -> None:
            async for message in host.lobby.WatchTable(
                lobby_pb2.WatchTableRequest(table_id=table.table_id), metadata=host.metadata
            ):
                updates.append(message.update)

        watcher = asyncio.create_task(watch())
        started = (await host.call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))).table
        await host.play_to_the_end(started.game_id)

        async def finished() -> bool:
            return any(u.kind == lobby_pb2.TABLE_UPDATE_KIND_GAME_FINISHED for u in updates)

        await wait_for(finished)
        rematch = (await host.call("Rematch",
                                   lobby_pb2.RematchRequest(table_id=table.table_id))).table
        assert rematch.status == lobby_pb2.TABLE_STATUS_PLAYING
        assert rematch.game_id != started.game_id and rematch.matches == 2
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher
        kinds = [u.kind for u in updates]
        assert kinds[0] == lobby_pb2.TABLE_UPDATE_KIND_SNAPSHOT
        assert kinds.count(lobby_pb2.TABLE_UPDATE_KIND_BOT_ADDED) == 3
        assert lobby_pb2.TABLE_UPDATE_KIND_GAME_STARTED in kinds
        versions = [u.version for u in updates]
        assert versions == sorted(versions)


@pytest.mark.parametrize("allowed", [True, False])
async def test_spectators_watch_only_tables_that_allow_them(allowed: bool) -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, f"device-host-spectators-{allowed}")
        stranger = await Guest.sign_in(channel, f"device-stranger-{allowed}")
        settings = lobby_pb2.TableSettings()
        settings.CopyFrom(HOKM)
        settings.spectators_allowed = allowed
        table = await host.table_with_bots(settings)
        request = game_pb2.GetViewRequest(game_id=table.game_id)
        assert (await host.call("GetView", request)).hokm.seat == 0
        if allowed:
            assert (await stranger.call("GetView", request)).hokm.is_spectator
        else:
            assert await _code(stranger.call("GetView", request)) == (
                grpc.StatusCode.PERMISSION_DENIED
            )
            stream = stranger.game.Subscribe(
                game_pb2.SubscribeRequest(game_id=table.game_id), metadata=stranger.metadata)
            assert await _code(anext(aiter(stream))) == grpc.StatusCode.PERMISSION_DENIED
