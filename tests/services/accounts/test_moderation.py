"""Moderation: operators find players, ban them and lift bans (ModerationService); a ban
refuses the player's calls and sign-ins with its end and reason, ends their streams, gives
their seat to a bot while the match goes on and withdraws their tournament entries; every
operator's action is an entry of a hash-chained log that ``dast audit --admin-log`` checks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    log_pb2,
    moderation_pb2,
    moderation_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from services.accounts.admin_log import AdminEntry, chained, verify_chain
from services.accounts.moderation_store import ACTIONS
from services.cli import app as cli
from services.platform.auth import Role
from services.platform.bans import Ban
from services.platform.errors import error_info_of, reason_of
from tests.conftest import NatsNames
from tests.e2e.helpers import stack, wait_for
from tests.services.accounts.calls import refused, replica, session_bearer, stream_ending
from tests.support.tokens import bearer, token

pytestmark = pytest.mark.timeout(180)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest
OPERATOR = bearer("operator-1", Role.ADMIN)
BANNED = (grpc.StatusCode.PERMISSION_DENIED, "player_banned")
WAIT_SECONDS = 30.0


def _moderation(channel: grpc.aio.Channel) -> moderation_pb2_grpc.ModerationServiceStub:
    return moderation_pb2_grpc.ModerationServiceStub(channel)


async def _playing_table(channel: grpc.aio.Channel,
                         tokens: accounts_pb2.SessionTokens) -> lobby_pb2.Table:
    """A lobby table of Hokm: the player in seat 0 and three bots, started."""
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    me = session_bearer(tokens)
    table = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
        metadata=me)).table
    for seat in (1, 2, 3):
        await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id, seat=seat,
                                                   level=lobby_pb2.BOT_LEVEL_RANDOM),
                           metadata=me)
    started: lobby_pb2.Table = (await lobby.StartGame(
        lobby_pb2.StartGameRequest(table_id=table.table_id), metadata=me)).table
    assert started.status == lobby_pb2.TABLE_STATUS_PLAYING
    return started


def test_the_chain_finds_an_entry_changed_removed_or_inserted() -> None:
    entries: list[AdminEntry] = []
    for number in range(5):
        entries.append(chained(entries[-1] if entries else None, at_ms=1000 + number,
                               actor="operator-1", action="ban", subject=f"p{number}",
                               detail={"reason": "cheating", "until_ms": None}))
    assert verify_chain(entries) == []
    assert verify_chain(entries[2:], after=(2, entries[1].hash)) == []

    changed = list(entries)
    changed[2] = AdminEntry(**{**_fields(entries[2]), "detail": {"reason": "nothing"}})
    assert [p.seq for p in verify_chain(changed)] == [3]  # its hash no longer matches
    removed = entries[:2] + entries[3:]
    assert [p.seq for p in verify_chain(removed)] == [4, 4]
    assert verify_chain(entries[1:]) != []  # the first entry is gone
    # A rewritten chain is whole in itself, but not the continuation of a head noted before.
    rewritten = [chained(None, at_ms=1, actor="intruder", action="ban", subject="p9",
                         detail={})]
    assert verify_chain(rewritten) == []
    assert verify_chain(rewritten, after=(1, entries[0].hash)) != []


def _fields(entry: AdminEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in AdminEntry.__slots__}


async def test_operators_find_players_and_only_operators_may() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        shirin = await accounts.SignInGuest(SignIn(device_id="moderation-find-1",
                                                   display_name="Shirin Sabz"))
        await accounts.SignInGuest(SignIn(device_id="moderation-find-2",
                                          display_name="Dara"))
        moderation = _moderation(channel)
        by_name = await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
            query="sHiRiN"), metadata=OPERATOR)
        assert [(p.player_id, p.display_name, p.devices) for p in by_name.players] == [
            (shirin.player_id, "Shirin Sabz", 1)]
        assert not by_name.players[0].HasField("ban")
        by_id = await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
            query=shirin.player_id), metadata=OPERATOR)
        assert [p.player_id for p in by_id.players] == [shirin.player_id]
        # LIKE's wildcards are only characters here.
        assert not (await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
            query="%"), metadata=OPERATOR)).players

        for caller in (session_bearer(shirin.tokens), bearer("lobby", Role.SERVICE)):
            assert await refused(moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
                query="Dara"), metadata=caller)) == (grpc.StatusCode.PERMISSION_DENIED,
                                                      "role_required")
            assert await refused(moderation.BanPlayer(moderation_pb2.BanPlayerRequest(
                player_id=shirin.player_id, reason="x"), metadata=caller)) == (
                grpc.StatusCode.PERMISSION_DENIED, "role_required")
        invalid = (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
        for request in (
            moderation_pb2.BanPlayerRequest(player_id=shirin.player_id, reason=""),
            moderation_pb2.BanPlayerRequest(player_id=shirin.player_id, reason="\u202e\u200b"),
            moderation_pb2.BanPlayerRequest(player_id=shirin.player_id, reason="late",
                                            until_ms=1000),
            moderation_pb2.BanPlayerRequest(player_id=shirin.player_id, reason="negative",
                                            until_ms=-5),
        ):
            assert await refused(moderation.BanPlayer(request, metadata=OPERATOR)) == invalid
        assert await refused(moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
            query="x" * 65), metadata=OPERATOR)) == invalid
        assert await refused(moderation.BanPlayer(moderation_pb2.BanPlayerRequest(
            player_id="g-nobody", reason="spam"), metadata=OPERATOR)) == (
            grpc.StatusCode.NOT_FOUND, "unknown_player")


async def test_a_ban_mid_match_gives_the_seat_to_a_bot_and_the_game_goes_on() -> None:
    async with stack(timers=False, bots=True) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        player = await accounts.SignInGuest(SignIn(device_id="moderation-ban-1"))
        table = await _playing_table(channel, player.tokens)
        game = game_pb2_grpc.GameServiceStub(channel)
        me = session_bearer(player.tokens)
        stream = game.Subscribe(game_pb2.SubscribeRequest(game_id=table.game_id), metadata=me)
        assert await asyncio.wait_for(stream.read(), WAIT_SECONDS) is not grpc.aio.EOF
        until = run.stack.clock() + 3_600_000

        banned = await _moderation(channel).BanPlayer(moderation_pb2.BanPlayerRequest(
            player_id=player.player_id, until_ms=until, reason="colluding at table 7"),
            metadata=OPERATOR)
        assert (banned.ban.until_ms, banned.ban.reason, banned.ban.banned_by) == (
            until, "colluding at table 7", "operator-1")

        # Their stream ends, and every call is refused, saying why and until when.
        ended = await stream_ending(stream, WAIT_SECONDS)
        assert (ended.code(), reason_of(ended)) == BANNED
        info = error_info_of(ended)
        assert info is not None and info.metadata["until_ms"] == str(until)
        assert info.metadata["ban_reason"] == "colluding at table 7"
        assert "colluding at table 7" in (ended.details() or "")
        view = game.GetView(game_pb2.GetViewRequest(game_id=table.game_id), metadata=me)
        assert await refused(view) == BANNED
        # No new tokens: the session ended, and a new sign-in is refused from the database.
        assert await refused(accounts.Refresh(accounts_pb2.RefreshRequest(
            refresh_token=player.tokens.refresh_token))) == (
            grpc.StatusCode.UNAUTHENTICATED, "refresh_token_invalid")
        assert await refused(accounts.SignInGuest(SignIn(
            device_id="moderation-ban-1", device_secret=player.device_secret))) == BANNED

        # The lobby stood them up: a bot plays their seat, recorded in the match's log,
        # and the match goes on to its end.
        assert run.stack.lobby_store is not None

        lobby_store = run.stack.lobby_store

        async def seat_taken() -> bool:
            stored = await asyncio.to_thread(lobby_store.get, table.table_id)
            return bool(stored.seats[0].left and stored.seats[0].taken_over_by_bot)

        await wait_for(seat_taken, seconds=WAIT_SECONDS)
        admin = bearer("auditor", Role.ADMIN)

        async def finished() -> list[log_pb2.Event] | None:
            exported = await game.ExportLog(game_pb2.ExportLogRequest(game_id=table.game_id),
                                            metadata=admin)
            return [e.event for e in exported.entries] if exported.HasField("seal") else None

        log = await wait_for(finished, seconds=120)
        assert (0, True, log_pb2.SEAT_CONTROL_REASON_LEFT) in [
            (e.seat_control.seat, e.seat_control.bot, e.seat_control.reason)
            for e in log if e.HasField("seat_control")]

        # Lifted, the player signs in again and reaches their match's view.
        lifted = await _moderation(channel).LiftBan(moderation_pb2.LiftBanRequest(
            player_id=player.player_id, note="appeal upheld"), metadata=OPERATOR)
        assert lifted.lifted
        again = await accounts.SignInGuest(SignIn(device_id="moderation-ban-1",
                                                  device_secret=player.device_secret))
        reply = await game.GetView(game_pb2.GetViewRequest(game_id=table.game_id),
                                   metadata=session_bearer(again.tokens))
        assert reply.hokm.seat == 0
        assert not (await _moderation(channel).LiftBan(moderation_pb2.LiftBanRequest(
            player_id=player.player_id), metadata=OPERATOR)).lifted


async def test_a_ban_withdraws_the_players_tournament_entries() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        tournaments = tournament_pb2_grpc.TournamentServiceStub(channel)
        created = await tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name="weekend cup", game_type=common_pb2.GAME_TYPE_HOKM, players_per_table=2,
                rounds=2, target_score=1)), metadata=OPERATOR)
        tournament_id = created.tournament.tournament_id
        players = [await accounts.SignInGuest(SignIn(device_id=f"moderation-cup-{n}"))
                   for n in range(3)]
        for player in players:
            await tournaments.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id), metadata=session_bearer(player.tokens))
        cheat = players[1]

        await _moderation(channel).BanPlayer(moderation_pb2.BanPlayerRequest(
            player_id=cheat.player_id, reason="multi-accounting"), metadata=OPERATOR)

        async def withdrawn() -> bool:
            standings = await tournaments.GetStandings(tournament_pb2.GetStandingsRequest(
                tournament_id=tournament_id), metadata=OPERATOR)
            return bool(standings.tournament.entrants == 2)

        await wait_for(withdrawn, seconds=WAIT_SECONDS)
        standings = await tournaments.GetStandings(tournament_pb2.GetStandingsRequest(
            tournament_id=tournament_id), metadata=OPERATOR)
        assert cheat.player_id not in [s.player_id for s in standings.standings]
        # A ban until lifted says so.
        refusal = await _refusal(tournaments.GetStandings(tournament_pb2.GetStandingsRequest(
            tournament_id=tournament_id), metadata=session_bearer(cheat.tokens)))
        assert (refusal.code(), reason_of(refusal)) == BANNED
        info = error_info_of(refusal)
        assert info is not None and info.metadata["until_ms"] == ""
        assert "until it is lifted" in (refusal.details() or "")
        assert run.stack.tournament is not None
        assert await run.stack.tournament.withdraw_player(cheat.player_id) == 0  # done once


async def _refusal(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def test_every_action_is_in_a_chained_log_that_the_audit_checks() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        player = await accounts.SignInGuest(SignIn(device_id="moderation-log-1",
                                                   display_name="Kian"))
        moderation = _moderation(channel)
        await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(query="Kian"),
                                     metadata=OPERATOR)
        await moderation.BanPlayer(moderation_pb2.BanPlayerRequest(
            player_id=player.player_id, reason="abuse in chat"), metadata=OPERATOR)
        await moderation.LiftBan(moderation_pb2.LiftBanRequest(
            player_id=player.player_id, note="first offence"), metadata=OPERATOR)
        listed = await moderation.ListAdminActions(moderation_pb2.ListAdminActionsRequest(),
                                                   metadata=OPERATOR)
        assert [(e.seq, e.actor, e.action, e.subject) for e in listed.entries] == [
            (1, "operator-1", "find_players", ""),
            (2, "operator-1", "ban", player.player_id),
            (3, "operator-1", "lift_ban", player.player_id)]
        # A search's entry says whom it found, not what was typed.
        assert json.loads(listed.entries[0].detail_json) == {"found": [player.player_id]}
        assert await refused(moderation.ListAdminActions(
            moderation_pb2.ListAdminActionsRequest(), metadata=bearer("p-curious"))) == (
            grpc.StatusCode.PERMISSION_DENIED, "role_required")

        admin_token = token("operator-1", Role.ADMIN)
        checked = await _audit(run.address, admin_token)
        assert checked.exit_code == 0, checked.output
        head = next(line.split()[1] for line in checked.output.splitlines()
                    if line.startswith("head:"))
        assert head.startswith("3:")

        # Someone with the database's password softens the ban's reason afterwards.
        store = run.stack.moderation_store
        assert store is not None
        with store._engine.begin() as connection:
            connection.execute(update(ACTIONS).where(ACTIONS.c.seq == 2)
                               .values(detail='{"reason":"nothing","until_ms":null}'))
        tampered = await _audit(run.address, admin_token)
        assert tampered.exit_code == 1
        assert "2" in tampered.output and "changed" in tampered.output
        # A check from the head noted earlier still sees the log go on from there.
        await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(query="Kian"),
                                     metadata=OPERATOR)
        assert (await _audit(run.address, admin_token, "--since", head)).exit_code == 0
        assert (await _audit(run.address, admin_token, "--since", "3:zz")).exit_code == 2


async def _audit(address: str, admin_token: str, *extra: str) -> Any:
    """``dast audit --admin-log`` against ``address`` (in a thread: it runs its own loop)."""
    return await asyncio.to_thread(
        CliRunner().invoke, cli,
        ["audit", "--admin-log", "--server", address, "--token", admin_token, *extra])


async def test_a_ban_reaches_the_other_server_even_when_its_publication_was_lost(
        nats_url: str, nats_names: NatsNames) -> None:
    deployment = nats_names.deployment
    async with replica(nats_url, deployment) as first, \
            replica(nats_url, deployment) as second, \
            grpc.aio.insecure_channel(first.address) as one, \
            grpc.aio.insecure_channel(second.address) as two:
        accounts = accounts_pb2_grpc.AccountsServiceStub(one)
        a = await accounts.SignInGuest(SignIn(device_id="moderation-nats-1"))
        b = await accounts.SignInGuest(SignIn(device_id="moderation-nats-2"))
        lobby = lobby_pb2_grpc.LobbyServiceStub(two)
        for player in (a, b):  # the second server knows both tokens (cached)
            await lobby.ListTables(lobby_pb2.ListTablesRequest(),
                                   metadata=session_bearer(player.tokens))

        await _moderation(one).BanPlayer(moderation_pb2.BanPlayerRequest(
            player_id=a.player_id, reason="botting"), metadata=OPERATOR)

        async def refused_there(player: accounts_pb2.AccountsServiceSignInGuestResponse
                                ) -> bool:
            try:
                await lobby.ListTables(lobby_pb2.ListTablesRequest(),
                                       metadata=session_bearer(player.tokens))
            except grpc.aio.AioRpcError as error:
                return (error.code(), reason_of(error)) == BANNED
            return False

        await wait_for(lambda: refused_there(a), seconds=WAIT_SECONDS)

        # A ban written to the database by a process killed before it published it: the
        # next republication (at start and every minute) puts it on the list.
        assert first.stack.accounts is not None
        moderation = first.stack.accounts.moderation
        assert moderation is not None
        await asyncio.to_thread(moderation.store.ban, b.player_id, Ban(None, "botting"),
                                "operator-1", first.stack.clock())
        assert not await refused_there(b)
        await moderation.publish_bans()
        await wait_for(lambda: refused_there(b), seconds=WAIT_SECONDS)
        # Lifted on the first, the second server lets them in again (a new session: the
        # ban ended the old one).
        await _moderation(one).LiftBan(moderation_pb2.LiftBanRequest(player_id=a.player_id),
                                       metadata=OPERATOR)
        again = await accounts.SignInGuest(SignIn(device_id="moderation-nats-1",
                                                  device_secret=a.device_secret))

        async def admitted_there() -> bool:
            try:
                await lobby.ListTables(lobby_pb2.ListTablesRequest(),
                                       metadata=session_bearer(again.tokens))
            except grpc.aio.AioRpcError:
                return False
            return True

        await wait_for(admitted_there, seconds=WAIT_SECONDS)
