"""The TournamentService's refusals: who may do what, and what the engine refuses."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, tournament_pb2
from services.platform.errors import error_info_of
from tests.e2e.helpers import stack
from tests.services.tournament.callers import Caller
from tests.services.tournament.callers import refused as _refused

pytestmark = pytest.mark.timeout(60)


async def test_only_the_host_starts_and_registers_bots_and_registration_closes_at_the_start(
) -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host, guest = Caller(channel, "host-1"), Caller(channel, "guest-1")
        created = await host("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                                       players_per_table=2)))
        tournament_id = created.tournament.tournament_id
        assert created.tournament.host_id == "host-1"
        assert created.tournament.status == tournament_pb2.TOURNAMENT_STATUS_REGISTERING
        registered = await guest("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id, display_name="Guest One"))
        assert registered.entrant.player_id == "guest-1" and not registered.entrant.is_bot
        assert await _refused(guest("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id)), grpc.StatusCode.FAILED_PRECONDITION
        ) == "tournament_already_registered"
        await _refused(guest("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id, bot_level="random")), grpc.StatusCode.PERMISSION_DENIED)
        await _refused(guest("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id, rating=2000)), grpc.StatusCode.PERMISSION_DENIED)
        bot = await host("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id, bot_level="random"))
        assert bot.entrant.is_bot
        await _refused(guest("StartTournament", tournament_pb2.StartTournamentRequest(
            tournament_id=tournament_id)), grpc.StatusCode.PERMISSION_DENIED)
        started = await host("StartTournament", tournament_pb2.StartTournamentRequest(
            tournament_id=tournament_id))
        assert started.tournament.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING
        late = Caller(channel, "late-1")
        assert await _refused(late("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id)), grpc.StatusCode.FAILED_PRECONDITION
        ) == "tournament_registration_closed"
        await _refused(host("StartTournament", tournament_pb2.StartTournamentRequest(
            tournament_id=tournament_id)), grpc.StatusCode.FAILED_PRECONDITION)
        table = await guest("GetCurrentTable", tournament_pb2.GetCurrentTableRequest(
            tournament_id=tournament_id))
        assert table.game_id == f"{tournament_id}-r1-t0" and table.seat in (0, 1)
        await _refused(guest("GetCurrentTable", tournament_pb2.GetCurrentTableRequest(
            tournament_id=tournament_id, player_id="host-1")), grpc.StatusCode.PERMISSION_DENIED)
        listed = await guest("ListTournaments", tournament_pb2.ListTournamentsRequest(
            status=tournament_pb2.TOURNAMENT_STATUS_RUNNING))
        assert [t.tournament_id for t in listed.tournaments] == [tournament_id]


async def test_unknown_tournaments_and_settings_out_of_range_are_refused() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        caller = Caller(channel, "p-1")
        await _refused(caller("GetStandings", tournament_pb2.GetStandingsRequest(
            tournament_id="t-none")), grpc.StatusCode.NOT_FOUND)
        await _refused(caller("GetStandings", tournament_pb2.GetStandingsRequest(
            tournament_id="bad id\x00")), grpc.StatusCode.INVALID_ARGUMENT)
        for settings in (
            tournament_pb2.TournamentSettings(game_type=99),  # type: ignore[arg-type]
            tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                              players_per_table=5),
            tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                              bot_level="genius"),
            tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                              rounds=10_000),
            tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                              name="x" * 500),
        ):
            await _refused(caller("CreateTournament", tournament_pb2.CreateTournamentRequest(
                settings=settings)), grpc.StatusCode.INVALID_ARGUMENT)


async def test_partnerships_are_offered_only_where_the_game_and_seats_have_the_choice(
) -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        caller = Caller(channel, "p-1")
        for game_type, seats in ((common_pb2.GAME_TYPE_HOKM, 3), (common_pb2.GAME_TYPE_HOKM, 4),
                                 (common_pb2.GAME_TYPE_HAND, 3), (common_pb2.GAME_TYPE_HAND, 2)):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await caller("CreateTournament", tournament_pb2.CreateTournamentRequest(
                    settings=tournament_pb2.TournamentSettings(
                        game_type=game_type, players_per_table=seats, partnerships=True)))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (game_type, seats)
            info = error_info_of(caught.value)
            assert info is not None and info.metadata["field"] == "settings.partnerships"
        created = await caller("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                game_type=common_pb2.GAME_TYPE_HAND, players_per_table=4, partnerships=True)))
        assert created.tournament.settings.partnerships
