"""Deleting an account (AccountsService.DeleteAccount, ModerationService.ErasePlayer): the
identities, devices, name and sessions go from every table of the accounts' store; the
signed logs the player played in (a match's, a tournament's) still verify and never held
their name; the views and standings show them as a deleted player, as the figures do;
the player id is nobody's again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import grpc
import pytest
from sqlalchemy import select

from dast.v1 import (
    accounts_pb2,
    accounts_pb2_grpc,
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    moderation_pb2,
    moderation_pb2_grpc,
    stats_pb2,
    stats_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from engine import tournament as engine
from engine.core.verification import verify_export
from engine.tournament.audit import verify as audit_tournament
from services.accounts.moderation_store import ModerationModel
from services.accounts.store import AccountsModel
from services.compose import Running
from services.platform.auth import Role
from services.tournament import chain
from tests.e2e.helpers import stack, wait_for
from tests.services.accounts.calls import refused, session_bearer
from tests.support.idp import LocalIdp, rsa_key
from tests.support.tokens import bearer

pytestmark = pytest.mark.timeout(180)

SignIn = accounts_pb2.AccountsServiceSignInGuestRequest
OPERATOR = bearer("operator-1", Role.ADMIN)
NAME = "Parisa Forgetme"
DEVICE = "erasure-device-1"
SUBJECT = "parisa-at-the-provider"
EMAIL = "parisa@example.test"


@pytest.fixture(scope="module")
def idp() -> Iterator[LocalIdp]:
    with LocalIdp([rsa_key("erase-r1")]) as provider:
        yield provider


async def _finished_match(channel: grpc.aio.Channel,
                          tokens: accounts_pb2.SessionTokens) -> str:
    """A Hokm match the player starts with three bots and leaves at once (a bot plays their
    seat to the end); its game id once it is over."""
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    me = session_bearer(tokens)
    table = (await lobby.CreateTable(lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)),
        metadata=me)).table
    for seat in (1, 2, 3):
        await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table.table_id, seat=seat,
                                                   level=lobby_pb2.BOT_LEVEL_RANDOM),
                           metadata=me)
    started = (await lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                                     metadata=me)).table
    await lobby.LeaveTable(lobby_pb2.LeaveTableRequest(table_id=table.table_id), metadata=me)
    game = game_pb2_grpc.GameServiceStub(channel)

    async def sealed() -> bool:
        exported = await game.ExportLog(game_pb2.ExportLogRequest(game_id=started.game_id),
                                        metadata=OPERATOR)
        return bool(exported.HasField("seal"))

    await wait_for(sealed, seconds=120)
    return str(started.game_id)


async def _running_tournament(channel: grpc.aio.Channel,
                              tokens: accounts_pb2.SessionTokens) -> str:
    """A one-round Hokm tournament the player hosts and enters with three bots, started
    (the player never opens their table: a bot stands in for them); its id."""
    tournaments = tournament_pb2_grpc.TournamentServiceStub(channel)
    me = session_bearer(tokens)
    created = await tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(
        settings=tournament_pb2.TournamentSettings(
            name="erasure cup", game_type=common_pb2.GAME_TYPE_HOKM,
            format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=1, target_score=1,
            bot_level="random")), metadata=me)
    tournament_id = str(created.tournament.tournament_id)
    await tournaments.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
        tournament_id=tournament_id), metadata=me)
    for _ in range(3):
        await tournaments.RegisterPlayer(tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id, bot_level="random"), metadata=me)
    await tournaments.StartTournament(tournament_pb2.StartTournamentRequest(
        tournament_id=tournament_id), metadata=me)
    return tournament_id


async def _standing_of(channel: grpc.aio.Channel, tournament_id: str, player_id: str
                       ) -> tournament_pb2.Standing:
    standings: tournament_pb2.GetStandingsResponse = await (
        tournament_pb2_grpc.TournamentServiceStub(channel).GetStandings(
            tournament_pb2.GetStandingsRequest(tournament_id=tournament_id),
            metadata=OPERATOR))
    return next(line for line in standings.standings if line.player_id == player_id)


async def _seat_shown(channel: grpc.aio.Channel, game_id: str, player_id: str
                      ) -> common_pb2.Player:
    """The player's seat as the spectators' view of ``game_id`` shows it."""
    view: game_pb2.GetViewResponse = await game_pb2_grpc.GameServiceStub(channel).GetView(
        game_pb2.GetViewRequest(game_id=game_id), metadata=OPERATOR)
    return next(player for player in view.hokm.players if player.player_id == player_id)


async def _check_nameless_and_verified(channel: grpc.aio.Channel, game_id: str,
                                       player_id: str) -> None:
    """The match's exported log holds the player's opaque id and no name, and verifies."""
    exported = await game_pb2_grpc.GameServiceStub(channel).ExportLog(
        game_pb2.ExportLogRequest(game_id=game_id), metadata=OPERATOR)
    assert NAME.encode() not in exported.SerializeToString()
    assert verify_export(list(exported.entries), exported.seal).ok
    started = exported.entries[0].event.hokm.match_started
    assert player_id in [player.player_id for player in started.players]
    assert all(not player.display_name for player in started.players)


def _rows_holding(run: Running, *needles: str) -> list[str]:
    """Every ``table.column`` of the accounts' store holding one of ``needles``."""
    found: list[str] = []
    stores = [(run.stack.accounts_store, AccountsModel.metadata),
              (run.stack.moderation_store, ModerationModel.metadata)]
    for store, metadata in stores:
        assert store is not None
        with store._engine.connect() as connection:  # the whole store, as an auditor reads it
            for table in metadata.sorted_tables:
                for row in connection.execute(select(table)).all():
                    for column, value in zip(table.columns, row, strict=True):
                        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                        found += [f"{table.name}.{column.name}" for needle in needles
                                  if needle in text]
    return found


async def test_deleting_an_account_leaves_no_trace_but_the_opaque_id(idp: LocalIdp) -> None:
    providers = json.dumps([idp.provider("main").model_dump(mode="json")])
    async with stack(timers=False, bots=True, oidc_providers=providers) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        guest = await accounts.SignInGuest(SignIn(device_id=DEVICE, display_name=NAME))
        me = session_bearer(guest.tokens)
        await accounts.LinkIdentity(accounts_pb2.LinkIdentityRequest(
            provider="main", id_token=idp.mint("erase-r1", sub=SUBJECT, email=EMAIL)),
            metadata=me)
        game_id = await _finished_match(channel, guest.tokens)
        tournament_id = await _running_tournament(channel, guest.tokens)
        table_game = f"{tournament_id}-r1-t0"
        # Before the deletion the views and the standings show the player's name.
        assert (await _seat_shown(channel, game_id, guest.player_id)).display_name == NAME
        mine = await _standing_of(channel, tournament_id, guest.player_id)
        assert (mine.display_name, mine.deleted) == (NAME, False)

        async def table_created() -> bool:
            try:
                seat = await _seat_shown(channel, table_game, guest.player_id)
            except grpc.aio.AioRpcError:
                return False
            return seat.display_name == NAME

        await wait_for(table_created, seconds=60)
        stats = stats_pb2_grpc.StatsServiceStub(channel)

        async def projected() -> bool:
            try:
                await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(
                    player_id=guest.player_id), metadata=OPERATOR)
            except grpc.aio.AioRpcError:
                return False
            return True

        await wait_for(projected, seconds=60)
        assert _rows_holding(run, NAME, DEVICE, SUBJECT, EMAIL)  # the test would see them

        # Refused without the player id typed again; then deleted.
        assert await refused(accounts.DeleteAccount(accounts_pb2.DeleteAccountRequest(),
                                                    metadata=me)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
        await accounts.DeleteAccount(accounts_pb2.DeleteAccountRequest(
            confirm_player_id=guest.player_id), metadata=me)

        # Nothing of the person is left in any table of the accounts' store.
        assert _rows_holding(run, NAME, DEVICE, SUBJECT, EMAIL) == []
        # Their tokens are refused, saying why; their device and identity are nobody's.
        assert await refused(accounts.ListIdentities(accounts_pb2.ListIdentitiesRequest(),
                                                     metadata=me)) == (
            grpc.StatusCode.UNAUTHENTICATED, "account_deleted")
        again = await accounts.SignInGuest(SignIn(device_id=DEVICE,
                                                  device_secret=guest.device_secret))
        assert again.player_id != guest.player_id and again.device_secret
        by_identity = await accounts.SignInWithIdToken(accounts_pb2.SignInWithIdTokenRequest(
            provider="main", id_token=idp.mint("erase-r1", sub=SUBJECT)))
        assert by_identity.created and by_identity.player_id != guest.player_id

        # The signed log of their match still verifies, with their opaque id in it and no
        # name; the views show them as a deleted player.
        await _check_nameless_and_verified(channel, game_id, guest.player_id)

        async def seat_deleted() -> bool:
            seat = await _seat_shown(channel, game_id, guest.player_id)
            return seat.deleted and not seat.display_name

        await wait_for(seat_deleted, seconds=30)

        # The tournament ends (a bot played their table; they were withdrawn): its log
        # never held the name and verifies, chain and all; the standings show them deleted.
        async def tournament_over() -> bool:
            standings = await tournament_pb2_grpc.TournamentServiceStub(channel).GetStandings(
                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id),
                metadata=OPERATOR)
            return bool(standings.tournament.status
                        == tournament_pb2.TOURNAMENT_STATUS_FINISHED)

        await wait_for(tournament_over, seconds=120)
        assert run.stack.tournament_store is not None
        stored = run.stack.tournament_store.load(tournament_id)
        assert not any(NAME.encode() in item.body for item in stored)
        assert chain.broken_links(tournament_id, [(item.body, item.hash)
                                                  for item in stored]) == []
        assert audit_tournament([engine.decode_event(item.body) for item in stored]) == []

        async def standing_deleted() -> bool:
            line = await _standing_of(channel, tournament_id, guest.player_id)
            return line.deleted and not line.display_name

        await wait_for(standing_deleted, seconds=30)
        await _check_nameless_and_verified(channel, table_game, guest.player_id)
        assert (await _seat_shown(channel, table_game, guest.player_id)).deleted

        # Their figures stay, shown as a deleted player's.
        async def shown_deleted() -> bool:
            figures = await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(
                player_id=guest.player_id), metadata=OPERATOR)
            return bool(figures.deleted)

        await wait_for(shown_deleted, seconds=30)
        board = await stats.GetLeaderboard(stats_pb2.GetLeaderboardRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, variant="4p"), metadata=OPERATOR)
        entries = {entry.player_id: entry.deleted for entry in board.entries}
        assert entries.get(guest.player_id) is True
        assert not any(deleted for player, deleted in entries.items()
                       if player != guest.player_id)


async def test_an_operator_erases_an_account_on_the_record() -> None:
    async with stack(timers=False, bots=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        accounts = accounts_pb2_grpc.AccountsServiceStub(channel)
        moderation = moderation_pb2_grpc.ModerationServiceStub(channel)
        guest = await accounts.SignInGuest(SignIn(device_id="erasure-device-2",
                                                  display_name="Arash Erased"))
        assert await refused(accounts.DeleteAccount(accounts_pb2.DeleteAccountRequest(
            confirm_player_id=guest.player_id), metadata=OPERATOR)) == (
            grpc.StatusCode.PERMISSION_DENIED, "role_required")
        assert await refused(moderation.ErasePlayer(moderation_pb2.ErasePlayerRequest(
            player_id=guest.player_id), metadata=session_bearer(guest.tokens))) == (
            grpc.StatusCode.PERMISSION_DENIED, "role_required")
        erased = await moderation.ErasePlayer(moderation_pb2.ErasePlayerRequest(
            player_id=guest.player_id), metadata=OPERATOR)
        log = await moderation.ListAdminActions(moderation_pb2.ListAdminActionsRequest(),
                                                metadata=OPERATOR)
        assert [(e.seq, e.action, e.subject) for e in log.entries] == [
            (erased.action_seq, "erase", guest.player_id)]
        assert _rows_holding(run, "Arash Erased", "erasure-device-2") == []
        # Gone: not found by a search, nor erasable twice.
        found = await moderation.FindPlayers(moderation_pb2.FindPlayersRequest(
            query=guest.player_id), metadata=OPERATOR)
        assert not found.players
        assert await refused(moderation.ErasePlayer(moderation_pb2.ErasePlayerRequest(
            player_id=guest.player_id), metadata=OPERATOR)) == (
            grpc.StatusCode.NOT_FOUND, "unknown_player")
        # The list every server reads holds the deletion; the republication keeps it there.
        assert run.stack.bans.ban_of(guest.player_id) is not None
        assert run.stack.accounts is not None and run.stack.accounts.moderation is not None
        await run.stack.accounts.moderation.publish_bans()
        banned = run.stack.bans.ban_of(guest.player_id)
        assert banned is not None and banned.erased
        await asyncio.sleep(0)
