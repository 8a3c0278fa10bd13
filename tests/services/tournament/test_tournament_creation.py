"""Who may create tournaments and how many a player may host (operator settings), names
cleaned as display names are, cancelling before the start, and featuring."""

from __future__ import annotations

import asyncio
import re
import threading
import unicodedata

import grpc
import pytest

from dast.v1 import common_pb2, tournament_pb2
from services.cli.play.session import Session
from services.cli.play.tournament import play_tournament, tournament_channel
from services.platform.auth import Role
from services.platform.validation import clean_display_name
from tests.e2e.helpers import Guest, stack
from tests.services.tournament.callers import Caller, metadata_of, refusal, refused

pytestmark = pytest.mark.timeout(90)

HOKM_2 = tournament_pb2.TournamentSettings(game_type=common_pb2.GAME_TYPE_HOKM,
                                           players_per_table=2)


def _create(name: str = "", featured: bool = False) -> tournament_pb2.CreateTournamentRequest:
    settings = tournament_pb2.TournamentSettings()
    settings.CopyFrom(HOKM_2)
    settings.name = name
    return tournament_pb2.CreateTournamentRequest(settings=settings, featured=featured)


async def _guest(channel: grpc.aio.Channel, device: str) -> Caller:
    """A guest as the lobby signs one in (a ``g-`` player id)."""
    guest = await Guest.sign_in(channel, device)
    assert guest.player_id.startswith("g-")
    return Caller(channel, guest.player_id, token=guest.token)


async def test_a_flood_of_creations_is_refused_past_the_open_limit_with_its_reason() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        flooder = await _guest(channel, "device-flooder-1")
        first = await flooder("CreateTournament", _create("first"))
        await flooder("CreateTournament", _create("second"))
        # 40 more at once, as a script would send them: every one refused, none slips in.
        results = await asyncio.gather(
            *(flooder("CreateTournament", _create(f"flood {n}")) for n in range(40)),
            return_exceptions=True)
        assert all(isinstance(result, grpc.aio.AioRpcError) for result in results)
        error = results[0]
        assert isinstance(error, grpc.aio.AioRpcError)
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert await refused(flooder("CreateTournament", _create()),
                             grpc.StatusCode.RESOURCE_EXHAUSTED) == "too_many_open_tournaments"
        assert metadata_of(error) == {"open": "2", "limit": "2"}
        assert "2 open tournaments" in (error.details() or "")
        listed = await flooder("ListTournaments", tournament_pb2.ListTournamentsRequest())
        assert [t.host_id for t in listed.tournaments] == [flooder.player_id] * 2
        # Cancelling one that has not started frees its place.
        cancelled = await flooder("CancelTournament", tournament_pb2.CancelTournamentRequest(
            tournament_id=first.tournament.tournament_id))
        assert cancelled.tournament.status == tournament_pb2.TOURNAMENT_STATUS_CANCELLED
        await flooder("CreateTournament", _create("third"))
        await refused(flooder("CreateTournament", _create()),
                      grpc.StatusCode.RESOURCE_EXHAUSTED)
        # Operators host as many as they like; another player has places of their own.
        admin = Caller(channel, "ops", Role.ADMIN)
        for number in range(4):
            created = await admin("CreateTournament", _create(f"official {number}"))
            assert created.tournament.created_by_operator
        other = await _guest(channel, "device-other-1")
        assert not (await other("CreateTournament", _create())).tournament.created_by_operator


async def test_the_open_limit_is_a_setting() -> None:
    async with stack(bots=False, timers=False, presence=False,
                     tournament_open_per_player=3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = await _guest(channel, "device-host-3")
        for number in range(3):
            await host("CreateTournament", _create(f"cup {number}"))
        error = await refusal(host("CreateTournament", _create()))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert metadata_of(error) == {"open": "3", "limit": "3"}


@pytest.mark.parametrize(("creators", "guest_may", "account_may"), [
    ("anyone", True, True), ("accounts", False, True), ("operators", False, False),
])
async def test_who_may_create_tournaments_is_the_operators_setting(
        creators: str, guest_may: bool, account_may: bool) -> None:
    async with stack(bots=False, timers=False, presence=False,
                     tournament_creators=creators) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await _guest(channel, f"device-{creators}-1")
        account = Caller(channel, "acct-7f3a")  # a player signed in with an account
        for caller, may in ((guest, guest_may), (account, account_may)):
            if may:
                await caller("CreateTournament", _create())
                continue
            error = await refusal(caller("CreateTournament", _create()))
            assert error.code() == grpc.StatusCode.PERMISSION_DENIED
            assert metadata_of(error)["creators"] == creators
            assert (error.details() or "") in (
                "guests cannot create tournaments on this server: sign in with an account",
                "only operators create tournaments on this server")
        # Operators always may, whatever the setting.
        for role in (Role.ADMIN, Role.SERVICE):
            created = await Caller(channel, f"ops-{role}", role)("CreateTournament", _create())
            assert created.tournament.created_by_operator
        # Players registering is not creating: a guest enters an operator's tournament.
        official = await Caller(channel, "ops", Role.ADMIN)("CreateTournament", _create())
        await guest("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=official.tournament.tournament_id))


async def test_tournament_names_are_cleaned_and_refused_as_display_names_are() -> None:
    async with stack(bots=False, timers=False, presence=False,
                     tournament_open_per_player=20) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Caller(channel, "acct-names")
        stacked = "Cup" + "\u0301" * 40 + " of\u202e evil\u202c  night\u200b"
        persian = "جام\u200cها"  # the non-joiner is part of the spelling
        for raw, shown in ((stacked, clean_display_name(stacked, max_chars=64)),
                           (persian, persian), ("  Evening   Cup \n", "Evening Cup")):
            created = await host("CreateTournament", _create(raw))
            assert created.tournament.settings.name == shown
        name = clean_display_name(stacked, max_chars=64)
        assert name.endswith(" of evil night")
        assert not any(unicodedata.category(char) == "Cf" for char in name)
        assert max(len(run) for run in re.findall(r"[\u0300-\u036f]*", name)) <= 3
        for raw in ("\u0301" * 10, "\u202e\u200b\u2066", "x" * 65, "\x1b\x07"):
            error = await refusal(host("CreateTournament", _create(raw)))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, raw
            assert metadata_of(error)["field"] == "settings.name"
        # The same rules as the display name a player registers under.
        created = await host("CreateTournament", _create("cup"))
        registered = await host("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=created.tournament.tournament_id, display_name=stacked[:30]))
        assert registered.entrant.display_name == clean_display_name(stacked[:30])


async def test_only_the_host_or_an_operator_cancels_and_only_before_the_start() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host, stranger = Caller(channel, "host-1"), Caller(channel, "stranger-1")
        admin = Caller(channel, "ops", Role.ADMIN)
        first = (await host("CreateTournament", _create())).tournament.tournament_id
        cancel = tournament_pb2.CancelTournamentRequest(tournament_id=first)
        assert await refused(stranger("CancelTournament", cancel),
                             grpc.StatusCode.PERMISSION_DENIED) == "role_required"
        assert (await admin("CancelTournament", cancel)).tournament.status == (
            tournament_pb2.TOURNAMENT_STATUS_CANCELLED)
        assert await refused(host("CancelTournament", cancel),
                             grpc.StatusCode.FAILED_PRECONDITION) == "tournament_finished"
        assert await refused(stranger("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=first)), grpc.StatusCode.FAILED_PRECONDITION) == "tournament_finished"
        second = (await host("CreateTournament", _create())).tournament.tournament_id
        for player in ("p-1", "p-2"):
            await Caller(channel, player)("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=second))
        await host("StartTournament", tournament_pb2.StartTournamentRequest(tournament_id=second))
        assert await refused(host("CancelTournament", tournament_pb2.CancelTournamentRequest(
            tournament_id=second)), grpc.StatusCode.FAILED_PRECONDITION
        ) == "tournament_already_started"
        listed = await host("ListTournaments", tournament_pb2.ListTournamentsRequest(
            status=tournament_pb2.TOURNAMENT_STATUS_CANCELLED))
        assert [t.tournament_id for t in listed.tournaments] == [first]


async def test_only_operators_feature_and_featured_open_tournaments_are_listed_first() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        player, admin = Caller(channel, "host-1"), Caller(channel, "ops", Role.ADMIN)
        assert await refused(player("CreateTournament", _create(featured=True)),
                             grpc.StatusCode.PERMISSION_DENIED) == "role_required"
        players = (await player("CreateTournament", _create("players' cup"))).tournament
        official = (await admin("CreateTournament", _create("official", featured=True))
                    ).tournament
        assert official.featured and official.created_by_operator
        newest = (await player("CreateTournament", _create("newest"))).tournament

        async def order() -> list[str]:
            listed = await player("ListTournaments", tournament_pb2.ListTournamentsRequest())
            return [t.tournament_id for t in listed.tournaments]

        assert await order() == [official.tournament_id, newest.tournament_id,
                                 players.tournament_id]
        feature = tournament_pb2.FeatureTournamentRequest(tournament_id=players.tournament_id,
                                                          featured=True)
        assert await refused(player("FeatureTournament", feature),
                             grpc.StatusCode.PERMISSION_DENIED) == "role_required"
        assert (await admin("FeatureTournament", feature)).tournament.featured
        assert await order() == [official.tournament_id, players.tournament_id,
                                 newest.tournament_id]
        standings = await player("GetStandings", tournament_pb2.GetStandingsRequest(
            tournament_id=players.tournament_id))
        assert standings.tournament.featured
        await admin("FeatureTournament", tournament_pb2.FeatureTournamentRequest(
            tournament_id=official.tournament_id, featured=False))
        assert await order() == [players.tournament_id, newest.tournament_id,
                                 official.tournament_id]


async def test_dast_play_stops_waiting_when_the_tournament_is_called_off() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Caller(channel, "host-1")
        tournament_id = (await host("CreateTournament", _create("called off"))
                         ).tournament.tournament_id
        said: list[str] = []
        finished: list[tournament_pb2.GetStandingsResponse] = []
        failures: list[BaseException] = []
        session = Session(run.address)

        class NoMatches:
            def play_match(self, game_id: str) -> None:
                raise AssertionError("a called-off tournament seats nobody")

        def person() -> None:
            try:
                session.sign_in("device-called-off-1", "Person")
                with tournament_channel(run.address) as tournaments:
                    finished.append(play_tournament(
                        session.authorized(tournaments), session.player_id, tournament_id,
                        NoMatches(), said.append, poll_seconds=0.05))
            except BaseException as error:  # reported below
                failures.append(error)
            finally:
                session.close()

        thread = threading.Thread(target=person, daemon=True)
        thread.start()
        async with asyncio.timeout(30):
            while "Waiting for the start…" not in said and not failures:
                await asyncio.sleep(0.05)
        await host("CancelTournament", tournament_pb2.CancelTournamentRequest(
            tournament_id=tournament_id))
        await asyncio.to_thread(thread.join, 30)
    assert not failures, failures
    assert said[-1] == "The tournament was called off before its start."
    assert finished and finished[0].tournament.status == (
        tournament_pb2.TOURNAMENT_STATUS_CANCELLED)
