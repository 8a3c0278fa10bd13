"""Bot matches of every variant of both games played through the services (game service,
bot service, turn timers, seat control), followed by the stats service on the bus: its
tables equal the independent recomputation from the exported logs, and its gRPC answers
read them (player figures, leaderboards and histories, page after page)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import pytest

from dast.v1 import (
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    hand_pb2,
    hokm_pb2,
    log_pb2,
    stats_pb2,
    stats_pb2_grpc,
)
from services.platform.auth import Role
from services.platform.errors import reason_of
from services.stats.store import PLAYERS, PROGRESS, StatsStore
from tests.e2e.helpers import stack
from tests.services.stats.checks import assert_matches_logs
from tests.support.tokens import token

pytestmark = pytest.mark.timeout(600)  # a loaded machine plays slowly: _until_projected

RULES: list[tuple[common_pb2.GameType.ValueType, str, Any]] = [
    (common_pb2.GAME_TYPE_HOKM, "hokm", hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, target_score=1, turn_seconds=5)),
    (common_pb2.GAME_TYPE_HOKM, "hokm", hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=1, turn_seconds=5)),
    (common_pb2.GAME_TYPE_HOKM, "hokm", hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=1, turn_seconds=5)),
    (common_pb2.GAME_TYPE_HAND, "hand", hand_pb2.HandRules(players=2, rounds=1,
                                                           turn_seconds=5)),
    (common_pb2.GAME_TYPE_HAND, "hand", hand_pb2.HandRules(players=3, rounds=1,
                                                           turn_seconds=5)),
    (common_pb2.GAME_TYPE_HAND, "hand", hand_pb2.HandRules(players=4, rounds=1,
                                                           turn_seconds=5)),
    (common_pb2.GAME_TYPE_HAND, "hand", hand_pb2.HandRules(players=4, partnerships=True,
                                                           rounds=1, turn_seconds=5)),
]
SEATS = [4, 3, 2, 2, 3, 4, 4]
PEOPLE = ["ana", "babak", "cyrus", "dara"]


def _players(index: int, seats: int) -> list[common_pb2.Player]:
    """Seat 0 a person a bot takes over, seat 1 a person whose turns run out, the rest bots
    of alternating levels (rotated so that every role meets every variant)."""
    players = []
    for seat in range(seats):
        role = (seat + index) % seats
        if role < 2:
            players.append(common_pb2.Player(player_id=PEOPLE[(seat + index) % 4],
                                             display_name="p"))
        else:
            level = ("random", "greedy")[(seat + index) % 2]
            players.append(common_pb2.Player(player_id=f"bot:{level}:{seat}",
                                             display_name=level, is_bot=True))
    return players


async def test_bot_matches_of_every_variant_project_to_the_recomputation() -> None:
    admin = (("authorization", f"Bearer {token('admin', Role.ADMIN)}"),)
    player = (("authorization", f"Bearer {token('ana', Role.PLAYER)}"),)
    async with stack(timer_shift_ms=-5_000) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        games = game_pb2_grpc.GameServiceStub(channel)
        game_ids = []
        for index, (game_type, member, rules) in enumerate(RULES * 2):
            game_id = f"stats-{index}"
            players = _players(index, SEATS[index % len(RULES)])
            request = game_pb2.CreateGameRequest(game_type=game_type, game_id=game_id,
                                                 players=players)
            getattr(request, member).CopyFrom(rules)
            await games.CreateGame(request, metadata=admin)
            taken = next(s for s, p in enumerate(players) if not p.is_bot)
            await games.ControlSeat(game_pb2.ControlSeatRequest(
                game_id=game_id, seat=taken, bot=True, bot_level="random",
                reason=log_pb2.SEAT_CONTROL_REASON_LEFT), metadata=admin)
            game_ids.append(game_id)

        stats_store = run.stack.stats_store
        assert stats_store is not None
        await _until_projected(stats_store, len(game_ids))
        logs = {}
        for game_id in game_ids:  # over, as the projection saw their final events
            reply = await games.ExportLog(game_pb2.ExportLogRequest(game_id=game_id),
                                          metadata=admin)
            assert reply.HasField("seal"), game_id
            logs[game_id] = [entry.event for entry in reply.entries]
        expected = await asyncio.to_thread(assert_matches_logs, stats_store, logs)
        assert any(row["bot_moves"] for row in expected.players.values())
        assert any(row["abandoned"] for row in expected.players.values())
        variants = {(key[1], key[2]) for key in expected.players}
        assert len(variants) == 7

        stats = stats_pb2_grpc.StatsServiceStub(channel)
        await _check_player_stats(stats, player, stats_store)
        await _check_boards(stats, player, variants)
        await _check_history(stats, player, expected)


async def _until_projected(store: StatsStore, matches: int, *,
                           stall_seconds: float = 90.0) -> None:
    """Wait until the projection has applied the final event of all ``matches``, for as long
    as it keeps applying events: a loaded machine plays the matches slowly, a stuck
    projection (or game) stops. The projection's own progress rows are read, in process
    (polling every whole log through ExportLog twice a second cost the run about a tenth
    of its CPU)."""
    applied, since = -1, time.monotonic()
    while True:
        rows = await asyncio.to_thread(store.all_rows, PROGRESS)
        if len(rows) == matches and all(row.over for row in rows):
            return
        now = sum(row.applied_seq for row in rows)
        if now != applied:
            applied, since = now, time.monotonic()
        assert time.monotonic() - since < stall_seconds, (
            f"no event applied for {stall_seconds:.0f} s: "
            f"{sum(row.over for row in rows)} of {matches} matches over")
        await asyncio.sleep(0.5)


async def _check_player_stats(stats: Any, metadata: Any, store: Any) -> None:
    rows = [row for row in store.all_rows(PLAYERS) if row.subject == "ana"]
    reply = await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(player_id="ana"),
                                       metadata=metadata)
    assert {(s.game_type, s.variant) for s in reply.stats} == {
        (r.game_type, r.variant) for r in rows}
    for figures in reply.stats:
        row = next(r for r in rows if (r.game_type, r.variant) == (figures.game_type,
                                                                  figures.variant))
        assert (figures.matches_played, figures.matches_won, figures.matches_abandoned,
                figures.own_moves, figures.bot_moves) == (
                    row.played, row.won, row.abandoned, row.own_moves, row.bot_moves)
        assert figures.matches_played == figures.matches_won + figures.matches_lost
        assert figures.rating.mu == pytest.approx(row.mu)
        names = [counter.name for counter in figures.counters]
        assert "rounds_played" in names
        if figures.game_type == common_pb2.GAME_TYPE_HAND:
            counters = {c.name: c.value for c in figures.counters}
            mean = next(m.value for m in figures.means if m.name == "mean_penalty")
            assert mean == pytest.approx(counters["penalty_total"] / counters["rounds_played"])
    bot = await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(player_id="bot:greedy"),
                                     metadata=metadata)
    assert bot.is_bot and any(s.HasField("rating") for s in bot.stats)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(player_id="nobody"),
                                   metadata=metadata)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    assert reason_of(missing.value) == "player_not_found"
    with pytest.raises(grpc.aio.AioRpcError) as anonymous:
        await stats.GetPlayerStats(stats_pb2.GetPlayerStatsRequest(player_id="ana"))
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def _pages(call: Any, request: Any, items: str, metadata: Any) -> list[Any]:
    found: list[Any] = []
    while True:
        reply = await call(request, metadata=metadata)
        found.extend(getattr(reply, items))
        if not reply.next_page_token:
            return found
        request.page_token = reply.next_page_token


async def _check_boards(stats: Any, metadata: Any,
                        variants: set[tuple[common_pb2.GameType.ValueType, str]]) -> None:
    for game_type, variant in sorted(variants):
        whole = await stats.GetLeaderboard(stats_pb2.GetLeaderboardRequest(
            game_type=game_type, variant=variant, page_size=100), metadata=metadata)
        paged = await _pages(stats.GetLeaderboard, stats_pb2.GetLeaderboardRequest(
            game_type=game_type, variant=variant, page_size=2), "entries", metadata)
        assert [e.player_id for e in paged] == [e.player_id for e in whole.entries]
        assert [e.rank for e in paged] == list(range(1, len(paged) + 1))
        ordinals = [e.rating.ordinal for e in paged]
        assert ordinals == sorted(ordinals, reverse=True) and paged
        for period in (stats_pb2.LEADERBOARD_PERIOD_WEEK, stats_pb2.LEADERBOARD_PERIOD_MONTH):
            board = await _pages(stats.GetLeaderboard, stats_pb2.GetLeaderboardRequest(
                game_type=game_type, variant=variant, period=period, page_size=1),
                "entries", metadata)
            assert sum(e.matches_played for e in board) > 0
            wins = [e.matches_won for e in board]
            assert wins == sorted(wins, reverse=True)
    with pytest.raises(grpc.aio.AioRpcError) as foreign:
        await stats.GetLeaderboard(stats_pb2.GetLeaderboardRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, variant="4p", page_token=(
                await stats.GetLeaderboard(stats_pb2.GetLeaderboardRequest(
                    game_type=common_pb2.GAME_TYPE_HOKM, variant="2p", page_size=1),
                    metadata=metadata)).next_page_token), metadata=metadata)
    assert foreign.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def _check_history(stats: Any, metadata: Any, expected: Any) -> None:
    mine = sorted(((row["ended_at_ms"], game_id, seat)
                   for (game_id, seat), row in expected.matches.items()
                   if row["subject"] == "ana"), reverse=True)
    history = await _pages(stats.ListMatchHistory, stats_pb2.ListMatchHistoryRequest(
        player_id="ana", page_size=3), "matches", metadata)
    assert [(m.ended_at_ms, m.game_id, m.seat) for m in history] == mine
    for record in history:
        row = expected.matches[(record.game_id, record.seat)]
        assert (record.outcome == stats_pb2.MATCH_OUTCOME_WON) == row["won"]
        assert record.abandoned == row["abandoned"]
        assert record.rating_after.mu == pytest.approx(row["mu_after"])
