"""ListTournaments a page at a time: a real tournament stays reachable under a flood of
others, featured ones come first, filters hold across pages, a tournament created while
paging shifts nothing, and a token the service did not make (edited, invented, or sent with
other filters) is refused. Unknown ids are quoted short in NOT_FOUND."""

from __future__ import annotations

import base64

import grpc
import pytest

from dast.v1 import common_pb2, tournament_pb2
from services.platform.auth import Role
from tests.e2e.helpers import stack
from tests.services.tournament.callers import Caller, metadata_of, refusal

pytestmark = pytest.mark.timeout(120)

REGISTERING = tournament_pb2.TOURNAMENT_STATUS_REGISTERING


def _settings(name: str, game_type: int = common_pb2.GAME_TYPE_HOKM
              ) -> tournament_pb2.TournamentSettings:
    return tournament_pb2.TournamentSettings(name=name, game_type=game_type)  # type: ignore[arg-type]


async def _every_page(caller: Caller, request: tournament_pb2.ListTournamentsRequest
                      ) -> list[list[tournament_pb2.TournamentSummary]]:
    pages = []
    while True:
        reply = await caller("ListTournaments", request)
        pages.append(list(reply.tournaments))
        if not reply.next_page_token:
            return pages
        request.page_token = reply.next_page_token


async def test_a_real_tournament_stays_reachable_under_a_flood_and_featured_come_first(
) -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        real = await Caller(channel, "g-real0000000000")("CreateTournament",
                                                         tournament_pb2.CreateTournamentRequest(
            settings=_settings("Friday Hand night", common_pb2.GAME_TYPE_HAND)))
        admin = Caller(channel, "ops", Role.ADMIN)
        official = await admin("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=_settings("Official cup"), featured=True))
        # 40 guests create as many tournaments as each may: 80 newer than the real one.
        for number in range(40):
            flooder = Caller(channel, f"g-flood{number:09d}")
            for copy in range(2):
                await flooder("CreateTournament", tournament_pb2.CreateTournamentRequest(
                    settings=_settings(f"spam {number}.{copy}")))
        pages = await _every_page(admin, tournament_pb2.ListTournamentsRequest(
            status=REGISTERING, page_size=15))
        listed = [t.tournament_id for page in pages for t in page]
        assert len(pages) == 6 and all(len(page) == 15 for page in pages[:-1])
        assert len(listed) == len(set(listed)) == 82
        assert listed[0] == official.tournament.tournament_id and pages[0][0].featured
        assert listed[-1] == real.tournament.tournament_id  # the oldest, yet reachable
        # The filters find it at once, and keep to themselves on every page.
        by_game = await admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
            game_type=common_pb2.GAME_TYPE_HAND))
        assert [t.tournament_id for t in by_game.tournaments] == [real.tournament.tournament_id]
        assert not by_game.next_page_token
        by_operator = await _every_page(admin, tournament_pb2.ListTournamentsRequest(
            created_by_operator=True, page_size=1))
        assert [[t.tournament_id for t in page] for page in by_operator] == [
            [official.tournament.tournament_id]]
        # The page size's bounds: 0 is 50, more than 200 is 200; `limit` is its old name.
        assert len((await admin("ListTournaments", tournament_pb2.ListTournamentsRequest()
                                )).tournaments) == 50
        assert len((await admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
            page_size=10_000))).tournaments) == 82
        assert len((await admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
            limit=3))).tournaments) == 3


async def test_tournaments_created_while_paging_shift_no_page() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        admin = Caller(channel, "ops", Role.ADMIN)
        before = []
        for number in range(9):
            created = await admin("CreateTournament", tournament_pb2.CreateTournamentRequest(
                settings=_settings(f"cup {number}")))
            before.append(created.tournament.tournament_id)
        request = tournament_pb2.ListTournamentsRequest(page_size=4)
        first = await admin("ListTournaments", request)
        for number in range(6):  # newer ones, one featured, between two pages
            await admin("CreateTournament", tournament_pb2.CreateTournamentRequest(
                settings=_settings(f"late {number}"), featured=number == 0))
        request.page_token = first.next_page_token
        rest = await _every_page(admin, request)
        seen = [t.tournament_id for t in first.tournaments] + [
            t.tournament_id for page in rest for t in page]
        assert seen == before[::-1]


async def test_a_page_token_the_service_did_not_make_for_these_filters_is_refused() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        admin = Caller(channel, "ops", Role.ADMIN)
        for number in range(3):
            await admin("CreateTournament", tournament_pb2.CreateTournamentRequest(
                settings=_settings(f"cup {number}")))
        token = (await admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
            page_size=1))).next_page_token
        body, _, tag = token.partition(".")
        decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        edited = base64.urlsafe_b64encode(decoded.replace(b"[1,false,", b"[1,true,")
                                          ).decode().rstrip("=")
        assert edited != body
        for forged, filters in (
            (f"{edited}.{tag}", {}),  # the position moved, the tag kept
            (f"{body}.{'A' * len(tag)}", {}),  # the tag invented
            (token, {"status": REGISTERING}),  # another listing's token
            (token, {"game_type": common_pb2.GAME_TYPE_HAND}),
            ("not a token", {}), ("%%%.###", {}), (token + "x" * 600, {}),
        ):
            error = await refusal(admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
                page_size=1, page_token=forged, **filters)))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, forged
            assert metadata_of(error)["field"] == "page_token"
            assert forged[:20] not in (error.details() or "")
        # The token as made still works with its own filters.
        page = await admin("ListTournaments", tournament_pb2.ListTournamentsRequest(
            page_size=1, page_token=token))
        assert len(page.tournaments) == 1


async def test_not_found_quotes_a_short_prefix_of_the_id() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        caller = Caller(channel, "p-1")
        path = "../../../etc/passwd/" * 6
        error = await refusal(caller("GetStandings", tournament_pb2.GetStandingsRequest(
            tournament_id=path)))
        assert error.code() == grpc.StatusCode.NOT_FOUND
        assert error.details() == (
            f"no tournament has the id '{path[:24]}…' ({len(path)} characters)")
        # An id of 70 kB never reaches a lookup, and is not echoed either.
        error = await refusal(caller("GetStandings", tournament_pb2.GetStandingsRequest(
            tournament_id="x" * 70_000)))
        assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert len(error.details() or "") < 200
