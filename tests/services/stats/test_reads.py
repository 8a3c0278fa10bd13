"""A reply of the stats service shows one snapshot of the projection: a batch committed
while the reply is read shows whole or not at all, never its counters without its moves
and matches, or a leaderboard's period figures beside a rating from a later batch.

The store below commits the next batch right after every read it serves, as the projection
would by committing between two reads of one reply; the replies must still equal what the
tables held before that batch."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Final

import grpc
import pytest
from sqlalchemy import Connection

from dast.v1 import common_pb2, stats_pb2, stats_pb2_grpc
from engine.core.stats import stats_of
from services.platform.server import bind, make_server
from services.stats.app import mount_stats_service
from services.stats.projector import Delivery, Projector, periods_of, subject_of
from services.stats.service import shown_period
from services.stats.store import StatsStore
from tests.services.stats.matches import HOKM, Match, corpus, delivered
from tests.support.tokens import TEST_KEYS, token

pytestmark = pytest.mark.timeout(60)
HOKM_4P: Final = next(match for match in corpus(1) if match.game is HOKM
                      and len(match.events[0].hokm.match_started.players) == 4)


class CommittingBetweenReads(StatsStore):
    """A store that, once armed, projects one batch right after the next read it serves."""

    projector: Projector
    armed: list[Delivery] | None = None

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        with super()._reading() as db:
            yield db
        batch, self.armed = self.armed, None
        if batch is not None:
            self.projector.project(batch)


def _first(match: Match, kind: str) -> int:
    """The index of the first event of ``kind`` in the match."""
    return next(index for index, event in enumerate(match.events)
                if event.WhichOneof("game") == "hokm" and event.hokm.WhichOneof("kind") == kind)


@contextlib.asynccontextmanager
async def _served(store: CommittingBetweenReads) -> AsyncIterator[
        tuple[stats_pb2_grpc.StatsServiceStub, tuple[tuple[str, str], ...]]]:
    server = make_server(TEST_KEYS.ring)
    mount_stats_service(server, store)
    port = bind(server, "127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield (stats_pb2_grpc.StatsServiceStub(channel),
                   (("authorization", f"Bearer {token('ana')}"),))
    finally:
        await server.stop(None)


def _store() -> CommittingBetweenReads:
    store = CommittingBetweenReads.open(None)
    assert isinstance(store, CommittingBetweenReads)
    store.projector = Projector(store)
    return store


async def test_player_figures_and_counters_come_from_one_snapshot() -> None:
    store = _store()
    deliveries = delivered(HOKM_4P)
    ended = _first(HOKM_4P, "round_ended")
    store.projector.project(deliveries[:ended])  # every card of round 1 played
    stats = stats_of(HOKM)
    assert stats is not None
    subject = subject_of(stats.frame(HOKM_4P.events[0]).players[0])
    request = stats_pb2.GetPlayerStatsRequest(player_id=subject,
                                              game_type=common_pb2.GAME_TYPE_HOKM)
    async with _served(store) as (client, metadata):
        before = await client.GetPlayerStats(request, metadata=metadata)
        store.armed = deliveries[ended:ended + 1]  # the round's end: its counters
        reply = await client.GetPlayerStats(request, metadata=metadata)
        after = await client.GetPlayerStats(request, metadata=metadata)
    assert reply == before  # the moves and counters of before the batch, together
    counted = {c.name: c.value for c in after.stats[0].counters}
    assert counted["rounds_played"] >= 1 and after.stats[0].own_moves + after.stats[
        0].bot_moves == before.stats[0].own_moves + before.stats[0].bot_moves


async def test_a_period_board_shows_each_rating_beside_its_period_figures() -> None:
    store = _store()
    deliveries = delivered(HOKM_4P)
    final = _first(HOKM_4P, "match_ended")
    store.projector.project(deliveries[:final])
    week, _ = periods_of(HOKM_4P.events[final].at_ms)
    request = stats_pb2.GetLeaderboardRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, variant="4p",
        period=stats_pb2.LEADERBOARD_PERIOD_WEEK, period_key=shown_period(week))
    async with _served(store) as (client, metadata):
        # The same log under another game id: the same players finish a match in the same
        # week first, so the board has rated entries.
        store.projector.project(delivered(Match("again", HOKM, HOKM_4P.events)))
        before = await client.GetLeaderboard(request, metadata=metadata)
        store.armed = deliveries[final:]  # the match's end: new ratings and week figures
        reply = await client.GetLeaderboard(request, metadata=metadata)
        after = await client.GetLeaderboard(request, metadata=metadata)
    assert before.entries and all(e.HasField("rating") for e in before.entries)
    assert reply == before
    assert [e.rating.rated_matches for e in after.entries] != [
        e.rating.rated_matches for e in before.entries]

