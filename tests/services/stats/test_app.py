"""The stats service's follower on the in-process bus (the embedded mode): batches from the
bus, and repairs from the game service's logs after a restart or a lost event."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from dast.v1 import log_pb2
from services.platform.bus import InProcessBus, Published
from services.stats.app import Stats, mount_stats_service
from services.stats.store import PROGRESS, StatsStore
from tests.services.stats.checks import assert_matches_logs
from tests.services.stats.matches import corpus

pytestmark = pytest.mark.timeout(60)
MATCHES = corpus(1, first_index=40)
LOGS = {match.game_id: match.events for match in MATCHES}
NAMES = {match.game_id: match.game.NAME for match in MATCHES}


class FinishedLogs:
    """A :class:`services.stats.repair.LogSource` over the logs of finished matches."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def finished_log(self, game_id: str) -> list[Published] | None:
        self.asked.append(game_id)
        return [Published(NAMES[game_id], game_id, log_pb2.LogEntry(event=event))
                for event in LOGS[game_id]]


def _stats(store: StatsStore) -> Stats:
    return mount_stats_service(grpc.aio.server(), store)


async def _publish(bus: InProcessBus, *, upto: float,
                   skip: frozenset[tuple[str, int]] = frozenset()) -> int:
    published = 0
    for match in MATCHES:
        cut = int(len(match.events) * upto)
        entries = [log_pb2.LogEntry(event=e) for e in match.events[:cut]
                   if (match.game_id, e.seq) not in skip]
        await bus.publish(match.game.NAME, match.game_id, entries)
        published += len(entries)
    return published


async def _until(predicate: object, seconds: float = 20) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.01)


async def test_a_restart_in_embedded_mode_is_repaired_from_the_finished_logs() -> None:
    store = StatsStore.open(None)
    bus = InProcessBus()
    first = _stats(store)
    task = asyncio.create_task(first.follow(bus, durable="stats", logs=FinishedLogs()))
    half = await _publish(bus, upto=0.5)
    await _until(lambda: first.applied_events == half)
    task.cancel()  # the process dies; the in-process bus with it, and what it still held
    await asyncio.gather(task, return_exceptions=True)
    assert len(store.unfinished_games()) == len(MATCHES)
    source = FinishedLogs()
    second = _stats(store)
    task = asyncio.create_task(second.follow(InProcessBus(), durable="stats", logs=source))
    await _until(lambda: not store.unfinished_games())
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sorted(source.asked) == sorted(LOGS)
    assert_matches_logs(store, LOGS)


async def test_a_lost_event_is_repaired_once_the_final_event_arrives() -> None:
    store = StatsStore.open(None)
    bus = InProcessBus()
    stats = _stats(store)
    source = FinishedLogs()
    task = asyncio.create_task(stats.follow(bus, durable="stats", logs=source, max_batch=64))
    lost = frozenset((match.game_id, 3) for match in MATCHES[::2])
    await _publish(bus, upto=1.0, skip=lost)
    await _until(lambda: len(store.all_rows(PROGRESS)) == len(MATCHES)
                 and not store.unfinished_games() and stats.projector.buffered == 0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sorted(source.asked) == sorted(game_id for game_id, _ in lost)
    assert_matches_logs(store, LOGS)


async def test_without_a_log_source_a_gap_waits_and_counts_nothing_beyond_it() -> None:
    store = StatsStore.open(None)
    bus = InProcessBus()
    stats = _stats(store)
    task = asyncio.create_task(stats.follow(bus, durable="stats"))
    lost = frozenset({(MATCHES[0].game_id, 5)})
    published = await _publish(bus, upto=1.0, skip=lost)
    buffered = len(LOGS[MATCHES[0].game_id]) - 5
    await _until(lambda: stats.applied_events == published - buffered)
    assert stats.projector.buffered == buffered
    assert store.unfinished_games() == [MATCHES[0].game_id]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
