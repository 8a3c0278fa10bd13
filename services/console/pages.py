"""The console's pages: what each one asks the services and shows.

Every handler takes the request and the signed-in operator's session and calls the services
with the operator's token (:meth:`Backend.call`); a refusal propagates as
:class:`grpc.aio.AioRpcError` and a bad query string as :class:`BadInput`, which the app turns
into error pages.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import grpc
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from dast.v1 import (
    audit_pb2,
    common_pb2,
    game_pb2,
    lobby_pb2,
    moderation_pb2,
    replay_pb2,
    reports_pb2,
    stats_pb2,
    tournament_pb2,
)
from engine.core.logformat import dump_jsonl
from services.console.backend import Backend
from services.console.charts import bar_chart, histogram, line_chart
from services.console.frames import frame_view
from services.console.sampler import History
from services.console.sessions import OperatorSession

MAX_ID_CHARS: Final = 128
MAX_QUERY_CHARS: Final = 64
MAX_SEQ: Final = 2**63
LEADERBOARD_PAGES: Final = 5
RATED_VARIANT: Final = "4p"
"""The variant whose ratings the players page charts (Hokm's four-player game)."""
MAX_ROUND_TABLES: Final = 64
"""The most tables of a round the tournament page shows."""
STATUS_NAMES: Final = {
    "waiting": lobby_pb2.TABLE_STATUS_WAITING, "playing": lobby_pb2.TABLE_STATUS_PLAYING,
}
"""What the lobby lists (a finished match opens from its players' histories)."""
GAME_NAMES: Final = {"hokm": common_pb2.GAME_TYPE_HOKM, "hand": common_pb2.GAME_TYPE_HAND}
TOURNAMENT_STATUS_NAMES: Final = {
    "registering": tournament_pb2.TOURNAMENT_STATUS_REGISTERING,
    "running": tournament_pb2.TOURNAMENT_STATUS_RUNNING,
    "finished": tournament_pb2.TOURNAMENT_STATUS_FINISHED,
    "cancelled": tournament_pb2.TOURNAMENT_STATUS_CANCELLED,
}
_SAFE_FILE: Final = re.compile(r"[^A-Za-z0-9._-]")


class BadInput(Exception):
    """A query string or form field the console cannot use; the message is for people."""


@dataclass(frozen=True)
class Overview:
    """The overview's figures."""

    live_games: int
    players: int
    bot_seats: int
    waiting_tables: int
    running_tournaments: int
    services: list[Any]
    commands_per_second: float | None
    """Over the game replicas, since the previous reading (None before two readings)."""
    open_streams: int
    commands_refused: int
    commands_failed: int
    """Commands that failed on a replica's side (INTERNAL and the like) since it started."""
    replicas_unread: list[str]
    """The game replicas whose status could not be read, and why."""


@dataclass(frozen=True)
class RoundTable:
    """One table of a tournament's round, as the console saw it."""

    table: int
    game_id: str
    players: tuple[str, ...]
    over: bool


@dataclass
class Pages:
    """The handlers, over the services and the templates."""

    backend: Backend
    templates: Jinja2Templates
    history: dict[str, History] = field(default_factory=lambda: {
        "live_games": History(), "players": History(), "commands_per_second": History()})
    commands: dict[str, History] = field(default_factory=dict)
    """Each game replica's total of commands accepted, read by read (its rate is the
    growth between two readings)."""
    rounds: dict[str, dict[int, dict[int, RoundTable]]] = field(default_factory=dict)
    """Per tournament, the tables of each round found so far (a round that is over does
    not change: it is not asked for again)."""

    def render(self, request: Request, name: str, session: OperatorSession,
               **values: Any) -> Response:
        return self.templates.TemplateResponse(
            request, name, {"session": session, **values})

    async def call(self, session: OperatorSession, method: Any, request: Any) -> Any:
        return await self.backend.call(method, request, session.token)

    async def unless_missing(self, session: OperatorSession, method: Any, request: Any,
                             empty: Any) -> Any:
        """The answer, or ``empty`` where the service knows nothing of it (NOT_FOUND: a
        player without a finished match has no figures yet)."""
        try:
            return await self.call(session, method, request)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            return empty

    # ---- overview ----

    async def figures(self, token: str) -> Overview:
        """The overview's figures now (and the hour's history gets them)."""
        tables, health, running, statuses = await asyncio.gather(
            self.backend.all_tables(token),
            self.backend.health(),
            self.backend.call(self.backend.tournaments.ListTournaments,
                              tournament_pb2.ListTournamentsRequest(
                                  status=tournament_pb2.TOURNAMENT_STATUS_RUNNING,
                                  page_size=100), token),
            self.backend.game_statuses(token))
        readings = [(address, status) for address, status in statuses
                    if isinstance(status, game_pb2.GetServerStatusResponse)]
        for address, status in readings:
            self.commands.setdefault(address, History()).add(status.commands_accepted)
        rates = [rate for address, _ in readings
                 if (rate := self.commands[address].latest_rate()) is not None]
        if rates:
            self.history["commands_per_second"].add(sum(rates))
        playing = [t for t in tables if t.status == lobby_pb2.TABLE_STATUS_PLAYING]
        people = {seat.player_id for table in playing for seat in table.seats
                  if seat.player_id and not seat.is_bot and not seat.taken_over_by_bot}
        bots = sum(1 for table in playing for seat in table.seats
                   if seat.is_bot or seat.taken_over_by_bot)
        overview = Overview(
            live_games=len(playing), players=len(people), bot_seats=bots,
            waiting_tables=sum(1 for t in tables
                               if t.status == lobby_pb2.TABLE_STATUS_WAITING),
            running_tournaments=len(running.tournaments), services=health,
            commands_per_second=sum(rates) if rates else None,
            open_streams=sum(s.open_subscriptions + s.open_play_streams for _, s in readings),
            commands_refused=sum(s.commands_refused for _, s in readings),
            commands_failed=sum(s.commands_failed for _, s in readings),
            replicas_unread=[f"{address}: {status.code().name}" for address, status in statuses
                             if not isinstance(status, game_pb2.GetServerStatusResponse)])
        self.history["live_games"].add(overview.live_games)
        self.history["players"].add(overview.players)
        return overview

    async def sample(self, token: str) -> None:
        """One background reading of the figures."""
        await self.figures(token)

    async def overview(self, request: Request, session: OperatorSession) -> Response:
        overview = await self.figures(session.token)
        charts = [
            _over_time("Commands per second, last hour",
                       self.history["commands_per_second"].levels()),
            _over_time("Live games, last hour", self.history["live_games"].levels()),
            _over_time("Players at live tables, last hour", self.history["players"].levels()),
        ]
        return self.render(request, "overview.html", session, overview=overview,
                           charts=charts)

    async def overview_json(self, request: Request, session: OperatorSession) -> Response:
        overview = await self.figures(session.token)
        return JSONResponse({
            "live_games": overview.live_games, "players": overview.players,
            "bot_seats": overview.bot_seats, "waiting_tables": overview.waiting_tables,
            "running_tournaments": overview.running_tournaments,
            "commands_per_second": overview.commands_per_second,
            "open_streams": overview.open_streams,
            "commands_refused": overview.commands_refused,
            "commands_failed": overview.commands_failed,
            "game_replicas_unread": overview.replicas_unread,
            "services": [{"service": replica.service, "address": replica.address,
                          "serving": replica.serving, "detail": replica.detail}
                         for replica in overview.services],
        })

    # ---- tables and games ----

    async def tables(self, request: Request, session: OperatorSession) -> Response:
        status = _choice(request, "status", STATUS_NAMES, default="playing", allow_all=True)
        game = _choice(request, "game", GAME_NAMES, default="all", allow_all=True)
        needle = _text(request, "q").lower()
        listed = await self.backend.all_tables(session.token,
                                               game_type=GAME_NAMES.get(game, 0))
        rows = [table for table in listed
                if (status == "all" or table.status == STATUS_NAMES[status])
                and (not needle or needle in table.table_id.lower()
                     or needle in table.game_id.lower()
                     or any(needle in seat.player_id.lower()
                            or needle in seat.display_name.lower() for seat in table.seats))]
        return self.render(request, "tables.html", session, tables=rows[:500],
                           total=len(rows), status=status, game=game, q=needle,
                           statuses=["all", *STATUS_NAMES], games=["all", *GAME_NAMES],
                           status_name=_status_name)

    async def game(self, request: Request, session: OperatorSession) -> Response:
        game_id = _identifier(request.path_params["game_id"], "game id")
        return RedirectResponse(f"/games/{quote_path(game_id)}/frames/1", status_code=303)

    async def replay_frame(self, session: OperatorSession, game_id: str,
                           seq: int) -> replay_pb2.ReplayFrame:
        """The frame at ``seq`` as the table sees it (every hand) once the match is over,
        as a spectator sees it before."""
        try:
            reply = await self.call(session, self.backend.replay.GetReplayFrame,
                                    replay_pb2.GetReplayFrameRequest(
                                        game_id=game_id, seq=seq,
                                        viewpoint=replay_pb2.REPLAY_VIEWPOINT_TABLE))
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            reply = await self.call(session, self.backend.replay.GetReplayFrame,
                                    replay_pb2.GetReplayFrameRequest(
                                        game_id=game_id, seq=seq,
                                        viewpoint=replay_pb2.REPLAY_VIEWPOINT_SPECTATOR))
        frame: replay_pb2.ReplayFrame = reply.frame
        return frame

    async def frame(self, request: Request, session: OperatorSession) -> Response:
        game_id = _identifier(request.path_params["game_id"], "game id")
        seq = _number(request.path_params["seq"], "seq", minimum=1)
        frame = await self.replay_frame(session, game_id, seq)
        return self.render(request, "frame.html", session, game_id=game_id,
                           frame=frame_view(frame), quoted=quote_path(game_id))

    async def audit(self, request: Request, session: OperatorSession) -> Response:
        game_id = _identifier(request.path_params["game_id"], "game id")
        reply = await self.call(session, self.backend.audit.AuditGame,
                                audit_pb2.AuditGameRequest(game_id=game_id))
        return self.render(request, "audit.html", session, game_id=game_id,
                           quoted=quote_path(game_id), report=reply.report,
                           sealed=reply.HasField("seal"),
                           check_name=lambda value: enum_text(
                               audit_pb2.AuditCheck.Name(value), "AUDIT_CHECK_"),
                           outcome_name=lambda value: enum_text(
                               audit_pb2.AuditOutcome.Name(value), "AUDIT_OUTCOME_"))

    async def export(self, request: Request, session: OperatorSession) -> Response:
        game_id = _identifier(request.path_params["game_id"], "game id")
        reply = await self.call(session, self.backend.game.ExportLog,
                                game_pb2.ExportLogRequest(game_id=game_id))
        seal = reply.seal if reply.HasField("seal") else None
        name = _SAFE_FILE.sub("_", game_id)[:MAX_ID_CHARS] or "game"
        return Response(dump_jsonl(reply.entries, seal), media_type="application/x-ndjson",
                        headers={"content-disposition": f'attachment; filename="{name}.jsonl"'})

    # ---- players ----

    async def players(self, request: Request, session: OperatorSession) -> Response:
        query = _text(request, "q")
        found: list[moderation_pb2.FoundPlayer] = []
        if query:
            reply = await self.call(session, self.backend.moderation.FindPlayers,
                                    moderation_pb2.FindPlayersRequest(query=query,
                                                                      page_size=50))
            found = list(reply.players)
        ratings = await self.ratings(session)
        chart = histogram("Hokm ratings (ordinal) of the leaderboard's players", ratings)
        return self.render(request, "players.html", session, q=query, players=found,
                           chart=chart, rated=len(ratings))

    async def ratings(self, session: OperatorSession) -> list[float]:
        """The all-time Hokm ratings of the leaderboard's first pages."""
        values: list[float] = []
        token = ""
        for _ in range(LEADERBOARD_PAGES):
            reply = await self.call(session, self.backend.stats.GetLeaderboard,
                                    stats_pb2.GetLeaderboardRequest(
                                        game_type=common_pb2.GAME_TYPE_HOKM,
                                        variant=RATED_VARIANT, page_size=100,
                                        page_token=token))
            values.extend(entry.rating.ordinal for entry in reply.entries)
            token = reply.next_page_token
            if not token:
                break
        return values

    async def player(self, request: Request, session: OperatorSession) -> Response:
        player_id = _identifier(request.path_params["player_id"], "player id")
        found, stats, history, reports = await asyncio.gather(
            self.call(session, self.backend.moderation.FindPlayers,
                      moderation_pb2.FindPlayersRequest(query=player_id[:MAX_QUERY_CHARS],
                                                        page_size=100)),
            self.unless_missing(session, self.backend.stats.GetPlayerStats,
                                stats_pb2.GetPlayerStatsRequest(player_id=player_id),
                                stats_pb2.GetPlayerStatsResponse()),
            self.unless_missing(session, self.backend.stats.ListMatchHistory,
                                stats_pb2.ListMatchHistoryRequest(player_id=player_id,
                                                                  page_size=50),
                                stats_pb2.ListMatchHistoryResponse()),
            self.call(session, self.backend.reports.ListReports,
                      reports_pb2.ListReportsRequest(reported_id=player_id, page_size=100)))
        account = next((p for p in found.players if p.player_id == player_id), None)
        notice = _text(request, "done")
        return self.render(request, "player.html", session, player_id=player_id,
                           quoted=quote_path(player_id), account=account, stats=stats.stats,
                           history=history.matches, reports=reports.reports, notice=notice,
                           game_name=common_pb2.GameType.Name,
                           outcome_name=stats_pb2.MatchOutcome.Name,
                           category_name=_category, when=_when)

    async def ban(self, request: Request, session: OperatorSession) -> Response:
        player_id = _identifier(request.path_params["player_id"], "player id")
        form = await request.form()
        reason = form.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise BadInput("a ban needs a reason (the player is shown it)")
        hours = _number(form.get("hours") or "0", "hours", minimum=0, maximum=24 * 365 * 10)
        until = int(time.time() * 1000) + hours * 3_600_000 if hours else 0
        await self.call(session, self.backend.moderation.BanPlayer,
                        moderation_pb2.BanPlayerRequest(player_id=player_id, until_ms=until,
                                                        reason=reason.strip()))
        return RedirectResponse(f"/players/{quote_path(player_id)}?done=banned", status_code=303)

    async def lift(self, request: Request, session: OperatorSession) -> Response:
        player_id = _identifier(request.path_params["player_id"], "player id")
        form = await request.form()
        note = form.get("note")
        await self.call(session, self.backend.moderation.LiftBan,
                        moderation_pb2.LiftBanRequest(
                            player_id=player_id, note=note if isinstance(note, str) else ""))
        return RedirectResponse(f"/players/{quote_path(player_id)}?done=lifted", status_code=303)

    # ---- reports ----

    async def reports(self, request: Request, session: OperatorSession) -> Response:
        after = _number(request.query_params.get("after") or "0", "after", minimum=0)
        reply = await self.call(session, self.backend.reports.ListReports,
                                reports_pb2.ListReportsRequest(after_report_id=after,
                                                               page_size=50))
        rows = list(reply.reports)
        return self.render(request, "reports.html", session, reports=rows,
                           next_after=rows[-1].report_id if len(rows) == 50 else None,
                           category_name=_category, when=_when)

    async def report(self, request: Request, session: OperatorSession) -> Response:
        report_id = _number(request.path_params["report_id"], "report id", minimum=1)
        reply = await self.call(session, self.backend.reports.GetReport,
                                reports_pb2.GetReportRequest(report_id=report_id))
        report = reply.report
        seq = _number(request.query_params.get("seq") or str(report.seq or 1), "seq",
                      minimum=1)
        frame = await self.replay_frame(session, report.game_id, seq)
        return self.render(request, "report.html", session, report=report,
                           frame=frame_view(frame), quoted=quote_path(report.game_id),
                           category_name=_category, when=_when)

    # ---- tournaments ----

    async def tournaments(self, request: Request, session: OperatorSession) -> Response:
        status = _choice(request, "status", TOURNAMENT_STATUS_NAMES, default="all",
                         allow_all=True)
        reply = await self.call(session, self.backend.tournaments.ListTournaments,
                                tournament_pb2.ListTournamentsRequest(
                                    status=TOURNAMENT_STATUS_NAMES.get(
                                        status, tournament_pb2.TOURNAMENT_STATUS_UNSPECIFIED),
                                    page_size=100))
        return self.render(request, "tournaments.html", session,
                           tournaments=reply.tournaments, status=status,
                           statuses=["all", *TOURNAMENT_STATUS_NAMES],
                           status_name=_tournament_status, format_name=_format_name)

    async def tournament(self, request: Request, session: OperatorSession) -> Response:
        tournament_id = _identifier(request.path_params["tournament_id"], "tournament id")
        reply = await self.call(session, self.backend.tournaments.GetStandings,
                                tournament_pb2.GetStandingsRequest(tournament_id=tournament_id))
        summary = reply.tournament
        await self._round_tables(session, summary)
        seen = self.rounds.get(tournament_id, {})
        rounds = [(number, sorted(seen[number].values(), key=lambda t: t.table))
                  for number in sorted(seen)]
        names = {s.player_id: short_player(s.display_name or s.player_id)
                 for s in reply.standings}
        leaders = list(reply.standings)[:16]
        progress = bar_chart("Match points (the leaders)",
                             [float(s.match_points) for s in leaders],
                             [f"#{s.rank}" for s in leaders])
        total = summary.settings.rounds or max([summary.round, *seen.keys(), 1])
        return self.render(request, "tournament.html", session, summary=summary,
                           standings=reply.standings, rounds=rounds, names=names,
                           progress=progress, total_rounds=total,
                           status_name=_tournament_status, format_name=_format_name,
                           live=summary.status in (
                               tournament_pb2.TOURNAMENT_STATUS_RUNNING,
                               tournament_pb2.TOURNAMENT_STATUS_REGISTERING))

    async def _round_tables(self, session: OperatorSession,
                            summary: tournament_pb2.TournamentSummary) -> None:
        """Find the tables of every round so far: a round's table ``t`` plays the game
        ``<tournament>-r<round>-t<t>`` (docs/architecture.md), whose first replay frame names
        its players. A round before the current one is asked for once."""
        seen = self.rounds.setdefault(summary.tournament_id, {})
        for number in range(1, summary.round + 1):
            if seen.get(number) and all(table.over for table in seen[number].values()):
                continue
            tables: dict[int, RoundTable] = {}
            for table in range(MAX_ROUND_TABLES):
                game_id = f"{summary.tournament_id}-r{number}-t{table}"
                try:
                    frame = await self.replay_frame(session, game_id, 1)
                except grpc.aio.AioRpcError as error:
                    if error.code() in (grpc.StatusCode.NOT_FOUND,
                                        grpc.StatusCode.INVALID_ARGUMENT):
                        break
                    raise
                tables[table] = RoundTable(table, game_id, _players_of(frame), frame.finished)
            seen[number] = tables


def _over_time(title: str, levels: list[tuple[float, float]]) -> Any:
    """A line over the readings of the last hour, its left end labelled with its age."""
    age = -levels[0][0] if levels else 0.0
    left = f"{age / 60:.0f} min ago" if age >= 90 else f"{age:.0f} s ago"
    return line_chart(title, levels, left, "now")


def _players_of(frame: replay_pb2.ReplayFrame) -> tuple[str, ...]:
    """The players a frame's first view seats."""
    for view in frame.views:
        kind = view.WhichOneof("view")
        players = getattr(getattr(view, kind), "players", None) if kind else None
        if players is not None:
            return tuple(p.player_id for p in players)
    return ()


def _text(request: Request, name: str) -> str:
    value = request.query_params.get(name, "").strip()
    if len(value) > MAX_QUERY_CHARS:
        raise BadInput(f"{name}: at most {MAX_QUERY_CHARS} characters")
    if any(ord(char) < 32 for char in value):
        raise BadInput(f"{name}: control characters are not allowed")
    return value


def _choice(request: Request, name: str, known: Mapping[str, Any], *, default: str,
            allow_all: bool) -> str:
    value = request.query_params.get(name, default) or default
    allowed = [*(["all"] if allow_all else []), *known]
    if value not in allowed:
        raise BadInput(f"{name}: one of {', '.join(allowed)}")
    return value


def _identifier(value: str, what: str) -> str:
    if not value or len(value) > MAX_ID_CHARS:
        raise BadInput(f"{what}: 1 to {MAX_ID_CHARS} characters")
    if any(ord(char) < 32 for char in value):
        raise BadInput(f"{what}: control characters are not allowed")
    return value


def _number(value: object, what: str, *, minimum: int = 0, maximum: int = MAX_SEQ) -> int:
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise BadInput(f"{what}: a whole number")
    number = int(value)
    if not minimum <= number <= maximum:
        raise BadInput(f"{what}: from {minimum} to {maximum}")
    return number


def quote_path(value: str) -> str:
    """``value`` as one segment of a URL's path."""
    return quote(value, safe="")


def enum_text(name: str, prefix: str) -> str:
    """An enum value's name for people: ``REPORT_CATEGORY_ABUSIVE_CHAT`` → ``abusive chat``."""
    return name.removeprefix(prefix).lower().replace("_", " ")


def short_player(player_id: str) -> str:
    """A bot's long id shortened (``bot:random:<game>-e4`` → ``bot:random …e4``)."""
    if player_id.startswith("bot:") and player_id.count(":") >= 2:
        level, _, rest = player_id[4:].partition(":")
        return f"bot:{level} …{rest[-4:]}"
    return player_id


def _status_name(status: lobby_pb2.TableStatus.ValueType) -> str:
    return str(lobby_pb2.TableStatus.Name(status)).removeprefix("TABLE_STATUS_").lower()


def _tournament_status(status: tournament_pb2.TournamentStatus.ValueType) -> str:
    return str(tournament_pb2.TournamentStatus.Name(status)).removeprefix(
        "TOURNAMENT_STATUS_").lower()


def _format_name(value: tournament_pb2.TournamentFormat.ValueType) -> str:
    name = str(tournament_pb2.TournamentFormat.Name(value)).removeprefix("TOURNAMENT_FORMAT_")
    return "swiss" if name == "UNSPECIFIED" else name.lower().replace("_", " ")


def _category(value: reports_pb2.ReportCategory.ValueType) -> str:
    return enum_text(reports_pb2.ReportCategory.Name(value), "REPORT_CATEGORY_")


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000)) if ms else ""
