"""The gRPC ``dast.v1.StatsService``: reads of the stats tables (stats.proto).

Every method needs an authenticated caller (any role: the figures are public), checks the
meaning of its fields here (the server's guard has refused malformed ones already) and
reads :class:`~services.stats.store.StatsStore` in a thread. Failures are
:class:`~services.platform.errors.ServiceError`\\ s, which the server's guard turns into
statuses (:mod:`services.platform.errors`, the one place that maps them).

Page tokens are opaque to callers: URL-safe base64 of the last row's sort key and a digest
of the query it belongs to, so a token from another query, or an edited one, is refused
with INVALID_ARGUMENT instead of paging something else.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final

import grpc

from dast.v1 import stats_pb2, stats_pb2_grpc
from engine.core.stats import stats_of
from engine.registry import GAMES
from services.platform.auth import current_identity
from services.platform.clock import Clock, wall_clock_ms
from services.platform.errors import Reason, ServiceError
from services.platform.validation import check_id
from services.stats import ratings
from services.stats.projector import periods_of
from services.stats.store import SUBJECT_CHARS, Rating, StatsStore

DEFAULT_PAGE_SIZE: Final = 25
MAX_PAGE_SIZE: Final = 100
_VARIANT: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_WEEK: Final = re.compile(r"(\d{4})-W(\d{2})")
_MONTH: Final = re.compile(r"(\d{4})-(\d{2})")
_TOKEN_CHARS: Final = 1024


class StatsReason(StrEnum):
    """Stable reasons of the stats service's refusals (besides the platform's)."""

    PLAYER_NOT_FOUND = "player_not_found"


def _invalid(field: str, problem: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                        f"{field} {problem}", metadata={"field": field})


def _game_type(value: int, field: str = "game_type", *, required: bool) -> int:
    if value == 0 and not required:
        return 0
    if value not in GAMES:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.UNKNOWN_GAME_TYPE,
                           f"{field} names no game", metadata={"field": field})
    return value


def _variant(value: str, *, required: bool) -> str:
    if not value and not required:
        return ""
    if not _VARIANT.fullmatch(value):
        raise _invalid("variant", "is not a variant name (like 4p)")
    return value


def _page_size(value: int) -> int:
    if value > MAX_PAGE_SIZE:
        raise _invalid("page_size", f"is more than {MAX_PAGE_SIZE}")
    return value or DEFAULT_PAGE_SIZE


def _query_digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def encode_token(query: str, key: list[Any]) -> str:
    """The page token continuing ``query`` after the row whose sort key is ``key``."""
    body = json.dumps({"q": query, "k": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(body).decode().rstrip("=")


def decode_token(token: str, query: str, kinds: tuple[type, ...]) -> list[Any] | None:
    """The sort key a page token carries (None for no token).

    :raises ServiceError: INVALID_ARGUMENT if the token is malformed or belongs to another
        query.
    """
    if not token:
        return None
    if len(token) > _TOKEN_CHARS:
        raise _invalid("page_token", "is too long")
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _invalid("page_token", "is not a page token") from None
    if not isinstance(body, dict) or body.get("q") != query:
        raise _invalid("page_token", "belongs to another query")
    key = body.get("k")
    if (not isinstance(key, list) or len(key) != len(kinds) or not all(
            isinstance(item, kind) and not isinstance(item, bool)
            for item, kind in zip(key, kinds, strict=True))):
        raise _invalid("page_token", "is not a page token")
    return key


def _rating(mu: float, sigma: float, rated: int) -> stats_pb2.Rating:
    value = Rating(mu, sigma, rated)
    return stats_pb2.Rating(mu=mu, sigma=sigma, ordinal=ratings.ordinal(value),
                            rated_matches=rated)


def period_key(period: int, text: str, now_ms: int) -> str:
    """The stored key of a week (``W2026-49``) or month (``M2026-12``) a caller names as
    ``2026-W49`` or ``2026-12`` (empty: the current one).

    :raises ServiceError: INVALID_ARGUMENT for a key of the wrong form.
    """
    week, month = periods_of(now_ms)
    if period == stats_pb2.LEADERBOARD_PERIOD_WEEK:
        if not text:
            return week
        found = _WEEK.fullmatch(text)
        if found is None or not 1 <= int(found.group(2)) <= 53:
            raise _invalid("period_key", "is not an ISO week like 2026-W49")
        return f"W{found.group(1)}-{found.group(2)}"
    if not text:
        return month
    found = _MONTH.fullmatch(text)
    if found is None or not 1 <= int(found.group(2)) <= 12:
        raise _invalid("period_key", "is not a month like 2026-12")
    return f"M{found.group(1)}-{found.group(2)}"


def shown_period(stored: str) -> str:
    """A stored period key as callers write it (``W2026-49`` → ``2026-W49``)."""
    if stored.startswith("W"):
        year, week = stored[1:].split("-")
        return f"{year}-W{week}"
    return stored[1:]


class StatsService(stats_pb2_grpc.StatsServiceServicer):
    """``dast.v1.StatsService`` over a :class:`StatsStore`."""

    def __init__(self, store: StatsStore, *, clock: Clock = wall_clock_ms) -> None:
        self._store = store
        self._clock = clock

    async def _read(self, read: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(read)

    async def GetPlayerStats(self, request: stats_pb2.GetPlayerStatsRequest,
                             context: grpc.aio.ServicerContext
                             ) -> stats_pb2.GetPlayerStatsResponse:
        """See stats.proto."""
        current_identity()
        subject = check_id(request.player_id, "player_id", max_chars=SUBJECT_CHARS)
        game_type = _game_type(request.game_type, required=False)
        variant = _variant(request.variant, required=False)
        figures = await self._read(
            lambda: self._store.player_figures(subject, game_type, variant))
        if not figures:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, StatsReason.PLAYER_NOT_FOUND,
                               "no figures for this player")
        reply = stats_pb2.GetPlayerStatsResponse(
            player_id=subject, is_bot=any(row.is_bot for row, _ in figures),
            deleted=bool(await self._read(lambda: self._store.deleted_among([subject]))))
        for row, counted in figures:
            stats = reply.stats.add(
                game_type=row.game_type, variant=row.variant, matches_played=row.played,
                matches_won=row.won, matches_lost=row.lost, matches_abandoned=row.abandoned,
                own_moves=row.own_moves, bot_moves=row.bot_moves)
            game = GAMES.get(row.game_type)
            game_stats = stats_of(game) if game is not None else None
            layout = game_stats.LAYOUT if game_stats is not None else None
            names = layout.counters if layout is not None else tuple(sorted(counted))
            for name in names:
                stats.counters.add(name=name, value=counted.get(name, 0))
            for mean in layout.means if layout is not None else ():
                count = counted.get(mean.count, 0)
                stats.means.add(name=mean.name,
                                value=counted.get(mean.total, 0) / count if count else 0.0)
            if row.rated:
                stats.rating.CopyFrom(_rating(row.mu, row.sigma, row.rated))
        return reply

    async def GetLeaderboard(self, request: stats_pb2.GetLeaderboardRequest,
                             context: grpc.aio.ServicerContext
                             ) -> stats_pb2.GetLeaderboardResponse:
        """See stats.proto."""
        current_identity()
        game_type = _game_type(request.game_type, required=True)
        variant = _variant(request.variant, required=True)
        size = _page_size(request.page_size)
        reply = stats_pb2.GetLeaderboardResponse()
        if request.period in (stats_pb2.LEADERBOARD_PERIOD_UNSPECIFIED,
                              stats_pb2.LEADERBOARD_PERIOD_ALL_TIME):
            query = _query_digest("all", game_type, variant)
            key = decode_token(request.page_token, query, (float, str, int))
            after = (key[0], key[1]) if key is not None else None
            rank = key[2] if key is not None else 0
            rows = await self._read(lambda: self._store.rating_board(
                game_type, variant, after=after, limit=size + 1))
            for row in rows[:size]:
                rank += 1
                reply.entries.add(rank=rank, player_id=row.subject, is_bot=row.is_bot,
                                  rating=_rating(row.mu, row.sigma, row.rated),
                                  matches_played=row.played, matches_won=row.won)
            if len(rows) > size:
                last = rows[size - 1]
                reply.next_page_token = encode_token(query, [last.ordinal, last.subject, rank])
            return await self._marked_deleted(reply)
        period = period_key(request.period, request.period_key, self._clock())
        reply.period_key = shown_period(period)
        query = _query_digest("period", game_type, variant, period)
        key = decode_token(request.page_token, query, (int, float, str, int))
        after_period = (key[0], key[1], key[2]) if key is not None else None
        rank = key[3] if key is not None else 0
        rows = await self._read(lambda: self._store.period_board(
            game_type, variant, period, after=after_period, limit=size + 1))
        for row in rows[:size]:
            rank += 1
            entry = reply.entries.add(rank=rank, player_id=row.subject,
                                      matches_played=row.played, matches_won=row.won,
                                      rating_change=row.rating_change,
                                      is_bot=bool(row.is_bot))
            if row.rated:
                entry.rating.CopyFrom(_rating(row.mu, row.sigma, row.rated))
        if len(rows) > size:
            last = rows[size - 1]
            reply.next_page_token = encode_token(
                query, [last.won, last.rating_change, last.subject, rank])
        return await self._marked_deleted(reply)

    async def _marked_deleted(self, reply: stats_pb2.GetLeaderboardResponse
                              ) -> stats_pb2.GetLeaderboardResponse:
        """``reply`` with the entries of deleted accounts marked so."""
        deleted = await self._read(lambda: self._store.deleted_among(
            [entry.player_id for entry in reply.entries if not entry.is_bot]))
        for entry in reply.entries:
            entry.deleted = entry.player_id in deleted
        return reply

    async def ListMatchHistory(self, request: stats_pb2.ListMatchHistoryRequest,
                               context: grpc.aio.ServicerContext
                               ) -> stats_pb2.ListMatchHistoryResponse:
        """See stats.proto."""
        current_identity()
        subject = check_id(request.player_id, "player_id", max_chars=SUBJECT_CHARS)
        game_type = _game_type(request.game_type, required=False)
        size = _page_size(request.page_size)
        query = _query_digest("history", subject, game_type)
        key = decode_token(request.page_token, query, (int, str, int))
        after = (key[0], key[1], key[2]) if key is not None else None
        rows = await self._read(lambda: self._store.history(
            subject, game_type=game_type, after=after, limit=size + 1))
        reply = stats_pb2.ListMatchHistoryResponse()
        for row in rows[:size]:
            reply.matches.add(
                game_id=row.game_id, game_type=row.game_type, variant=row.variant,
                ended_at_ms=row.ended_at_ms, seat=row.seat, abandoned=row.abandoned,
                outcome=(stats_pb2.MATCH_OUTCOME_WON if row.won
                         else stats_pb2.MATCH_OUTCOME_LOST),
                rating_before=_rating(row.mu_before, row.sigma_before, 0),
                rating_after=_rating(row.mu_after, row.sigma_after, 0))
        if len(rows) > size:
            last = rows[size - 1]
            reply.next_page_token = encode_token(query, [last.ended_at_ms, last.game_id,
                                                         last.seat])
        return reply
