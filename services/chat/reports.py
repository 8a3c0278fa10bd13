"""The gRPC ``dast.v1.ReportService`` (reports.proto): players report players of a match
they sat in; operators read the reports.

A report names the match (``game_id``) and the moment (the ``seq`` of the game's event the
reporter means), so that support replays the hand from the game's record (the replay
service, ``dast audit``). Whether both players sat in the match is checked against the
seats of its table as the match started (the lobby keeps them for every match, so a report
may come after a rematch).

Reports are kept for ``retention_ms`` (``DAST_REPORT_RETENTION_DAYS``): an older one is
never shown, and :meth:`ReportService.delete_expired` deletes them.
"""

from __future__ import annotations

import asyncio
from typing import Final

import grpc

from dast.v1 import reports_pb2, reports_pb2_grpc
from services.chat.reasons import ReportReason
from services.chat.store import (
    LARGEST_NUMBER,
    NOTE_CHARS,
    PLAYER_ID_CHARS,
    ChatStore,
    NewReport,
    Report,
)
from services.chat.tables import TableDirectory
from services.platform.auth import Role, current_identity
from services.platform.clock import Clock, wall_clock_ms
from services.platform.errors import Reason, ServiceError
from services.platform.validation import check_id, clean_display_name, quoted_input

DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500


def _invalid(field: str, problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                        f"{field} {problem}", metadata={"field": field})


def _require_operator() -> None:
    if current_identity().role is not Role.ADMIN:
        raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, Reason.ROLE_REQUIRED,
                           "reports are read with an operator's (admin) token only")


def report_message(report: Report) -> reports_pb2.PlayerReport:
    """A stored report as the API shows it."""
    return reports_pb2.PlayerReport(
        report_id=report.report_id, reporter_id=report.reporter_id,
        reported_id=report.reported_id, game_id=report.game_id, seq=report.seq,
        category=report.category,  # type: ignore[arg-type]
        note=report.note, created_at_ms=report.created_ms, table_id=report.table_id)


class ReportService(reports_pb2_grpc.ReportServiceServicer):
    """The servicer, and the reports' expiry."""

    def __init__(self, directory: TableDirectory, store: ChatStore, *, retention_ms: int,
                 clock: Clock = wall_clock_ms) -> None:
        self.directory = directory
        self.store = store
        self.retention_ms = retention_ms
        self.clock = clock

    def oldest_kept_ms(self) -> int:
        """When the oldest report still kept was made, at the earliest."""
        return self.clock() - self.retention_ms

    async def delete_expired(self) -> int:
        """Delete the reports older than the retention age; how many went."""
        return await asyncio.to_thread(self.store.delete_reports_before, self.oldest_kept_ms())

    async def ReportPlayer(
        self, request: reports_pb2.ReportPlayerRequest, context: grpc.aio.ServicerContext
    ) -> reports_pb2.ReportPlayerResponse:
        reporter = current_identity().player_id
        game_id = check_id(request.game_id, "game_id")
        reported = check_id(request.player_id, "player_id", max_chars=PLAYER_ID_CHARS)
        if reported == reporter:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, ReportReason.CANNOT_REPORT_SELF,
                               "you cannot report yourself", metadata={"field": "player_id"})
        if request.category == reports_pb2.REPORT_CATEGORY_UNSPECIFIED:
            raise _invalid("category", "is required")
        if request.seq > LARGEST_NUMBER:
            raise _invalid("seq", f"must be at most {LARGEST_NUMBER}")
        note = self._note(request.note)
        facts = await self.directory.match(game_id)
        if facts is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, ReportReason.GAME_NOT_FOUND,
                               f"no table plays the match {quoted_input(game_id)}",
                               metadata={"field": "game_id"})
        for field, player in (("game_id", reporter), ("player_id", reported)):
            if player not in facts.players:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                   ReportReason.NOT_IN_GAME,
                                   f"{quoted_input(player)} did not sit in the match "
                                   f"{quoted_input(game_id)}", metadata={"field": field})
        report = await asyncio.to_thread(self.store.add_report, NewReport(
            reporter, reported, game_id, facts.table_id, request.seq, request.category, note),
            self.clock())
        return reports_pb2.ReportPlayerResponse(report_id=report.report_id)

    @staticmethod
    def _note(raw: str) -> str:
        try:
            return clean_display_name(raw, max_chars=NOTE_CHARS, field="note")
        except ServiceError as refused:
            raise _invalid("note", refused.message.removeprefix("note ")) from None

    async def ListReports(
        self, request: reports_pb2.ListReportsRequest, context: grpc.aio.ServicerContext
    ) -> reports_pb2.ListReportsResponse:
        _require_operator()
        if request.page_size > MAX_PAGE:
            raise _invalid("page_size", f"must be 0 to {MAX_PAGE}, not {request.page_size}")
        reported = check_id(request.reported_id, "reported_id") if request.reported_id else ""
        reports = await asyncio.to_thread(
            self.store.reports, after_id=min(request.after_report_id, LARGEST_NUMBER),
            limit=request.page_size or DEFAULT_PAGE, kept_since_ms=self.oldest_kept_ms(),
            reported_id=reported)
        return reports_pb2.ListReportsResponse(reports=[report_message(r) for r in reports])

    async def GetReport(
        self, request: reports_pb2.GetReportRequest, context: grpc.aio.ServicerContext
    ) -> reports_pb2.GetReportResponse:
        _require_operator()
        report = None if request.report_id > LARGEST_NUMBER else await asyncio.to_thread(
            self.store.report, request.report_id, kept_since_ms=self.oldest_kept_ms())
        if report is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, ReportReason.REPORT_NOT_FOUND,
                               f"no kept report has the id {request.report_id}",
                               metadata={"field": "report_id"})
        return reports_pb2.GetReportResponse(report=report_message(report))
