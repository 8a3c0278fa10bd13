"""Reports (services/chat/reports.py, reports.proto): a player reports a player of a match
they sat in, naming the moment; operators alone read the reports, which expire by the
moved clock."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import lobby_pb2, reports_pb2
from services.platform.auth import Role
from services.platform.errors import reason_of
from tests.services.chat.talkers import DAY_MS, START_MS, MovedClock, Person, talking_stack

pytestmark = pytest.mark.timeout(60)


async def _refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call  # type: ignore[misc]
    return refused.value.code(), reason_of(refused.value)


async def _match(ana: Person, bex: Person) -> lobby_pb2.Table:
    """A two-player match of ana (host) and bex, started."""
    table = await ana.host()
    await bex.join(table)
    started = await ana.lobby.StartGame(lobby_pb2.StartGameRequest(table_id=table.table_id),
                                        metadata=ana.metadata)
    assert started.table.game_id
    match: lobby_pb2.Table = started.table
    return match


def _report(game_id: str, player_id: str, **fields: object) -> reports_pb2.ReportPlayerRequest:
    fields.setdefault("category", reports_pb2.REPORT_CATEGORY_ABUSIVE_CHAT)
    return reports_pb2.ReportPlayerRequest(game_id=game_id, player_id=player_id,
                                           **fields)  # type: ignore[arg-type]


async def test_a_report_is_seen_by_operators_and_refused_to_players() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana, bex = Person("ana", channel), Person("bex", channel)
        operator = Person("op", channel, Role.ADMIN)
        match = await _match(ana, bex)
        # Table talk also finds the table by the match it plays.
        said = await ana.say("", "gl", game_id=match.game_id)
        assert said.table_id == match.table_id
        made = await ana.reports.ReportPlayer(_report(
            match.game_id, "bex", seq=3, note="called me names\u202e"), metadata=ana.metadata)
        expected = reports_pb2.PlayerReport(
            report_id=made.report_id, reporter_id="ana", reported_id="bex",
            game_id=match.game_id, seq=3, category=reports_pb2.REPORT_CATEGORY_ABUSIVE_CHAT,
            note="called me names", created_at_ms=START_MS, table_id=match.table_id)
        listed = await operator.reports.ListReports(reports_pb2.ListReportsRequest(),
                                                    metadata=operator.metadata)
        assert list(listed.reports) == [expected]
        got = await operator.reports.GetReport(
            reports_pb2.GetReportRequest(report_id=made.report_id), metadata=operator.metadata)
        assert got.report == expected
        about_ana = await operator.reports.ListReports(reports_pb2.ListReportsRequest(
            reported_id="ana"), metadata=operator.metadata)
        assert list(about_ana.reports) == []
        for player in (ana, bex):
            assert await _refused(player.reports.ListReports(
                reports_pb2.ListReportsRequest(), metadata=player.metadata)) == (
                grpc.StatusCode.PERMISSION_DENIED, "role_required")
            assert await _refused(player.reports.GetReport(reports_pb2.GetReportRequest(
                report_id=made.report_id), metadata=player.metadata)) == (
                grpc.StatusCode.PERMISSION_DENIED, "role_required")


async def test_a_report_names_players_of_the_match() -> None:
    clock = MovedClock()
    async with talking_stack(clock) as (_, channel):
        ana, bex, cyd = (Person(name, channel) for name in ("ana", "bex", "cyd"))
        match = await _match(ana, bex)
        assert await _refused(cyd.reports.ReportPlayer(_report(match.game_id, "bex"),
                                                       metadata=cyd.metadata)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "not_in_game")
        assert await _refused(ana.reports.ReportPlayer(_report(match.game_id, "cyd"),
                                                       metadata=ana.metadata)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "not_in_game")
        assert await _refused(ana.reports.ReportPlayer(_report(match.game_id, "ana"),
                                                       metadata=ana.metadata)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "cannot_report_self")
        assert await _refused(ana.reports.ReportPlayer(_report("no-such-match", "bex"),
                                                       metadata=ana.metadata)) == (
            grpc.StatusCode.NOT_FOUND, "game_not_found")
        assert await _refused(ana.reports.ReportPlayer(_report(
            match.game_id, "bex", category=reports_pb2.REPORT_CATEGORY_UNSPECIFIED),
            metadata=ana.metadata)) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")


async def test_reports_expire_after_their_age_by_the_moved_clock() -> None:
    clock = MovedClock()
    async with talking_stack(clock, report_retention_days=90) as (run, channel):
        ana, bex = Person("ana", channel), Person("bex", channel)
        operator = Person("op", channel, Role.ADMIN)
        match = await _match(ana, bex)
        old = await ana.reports.ReportPlayer(_report(match.game_id, "bex"),
                                             metadata=ana.metadata)
        clock.move(60 * DAY_MS)
        new = await bex.reports.ReportPlayer(_report(match.game_id, "ana"),
                                             metadata=bex.metadata)

        async def kept() -> list[int]:
            listed = await operator.reports.ListReports(reports_pb2.ListReportsRequest(),
                                                        metadata=operator.metadata)
            return [report.report_id for report in listed.reports]

        assert await kept() == [old.report_id, new.report_id]
        clock.move(30 * DAY_MS)  # the first is 90 days old: kept to the millisecond
        assert await kept() == [old.report_id, new.report_id]
        clock.move(1)
        assert await kept() == [new.report_id]
        assert await _refused(operator.reports.GetReport(reports_pb2.GetReportRequest(
            report_id=old.report_id), metadata=operator.metadata)) == (
            grpc.StatusCode.NOT_FOUND, "report_not_found")
        assert run.stack.table_talk is not None
        assert await run.stack.table_talk.reports.delete_expired() == 1
        clock.move(60 * DAY_MS)
        assert await kept() == []
        assert await run.stack.table_talk.expire() == 1
