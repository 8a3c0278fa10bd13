"""Wiring of the stats service: its gRPC servicer and its follower of the games' events.

The composition root (:mod:`services.compose`) mounts the servicer with
:func:`mount_stats_service`, then runs :meth:`Stats.follow` as a task::

    stats = mount_stats_service(server, StatsStore.open(url))
    task = asyncio.create_task(stats.follow(bus, durable="stats", game_target=target))

:meth:`Stats.follow` registers the durable consumer ``stats`` on the bus, then projects batch
after batch (:class:`~services.stats.projector.Projector`), acknowledging each delivery
only once its batch is committed. A batch the store refuses is retried as it was (nothing
of it was stored). Games with a gap whose final event is known, or whose projection started
before a restart and never ended, are repaired from the game service's ``ExportLog``
(:mod:`services.stats.repair`) in the background, a game at a time.

The projection has one writer: run one stats process per deployment (its gRPC reads may be
served by more, over the same tables).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Final

import grpc
import structlog

from dast.v1 import stats_pb2, stats_pb2_grpc
from services.platform.auth import TokenSigner
from services.platform.background import BackgroundTasks
from services.platform.bans import Ban
from services.platform.bus import Bus
from services.platform.clock import Clock, wall_clock_ms
from services.stats.feed import DEFAULT_MAX_BATCH, Batches, open_batches
from services.stats.metrics import StatsMetrics, stats_metrics
from services.stats.projector import Delivery, Outcome, Projector
from services.stats.repair import GameServiceLogs, LogSource
from services.stats.service import StatsService
from services.stats.store import StatsStore

SERVICE_NAME = stats_pb2.DESCRIPTOR.services_by_name["StatsService"].full_name
RETRY_SECONDS: Final = 1.0
"""Pause before retrying a batch the store refused, or a repair that could not run."""
_log = structlog.get_logger(component="stats")


@dataclass
class Stats:
    """The stats service of one process: its servicer and its projection."""

    store: StatsStore
    service: StatsService
    metrics: StatsMetrics = field(default_factory=stats_metrics)
    projector: Projector = field(init=False)
    _repairs: asyncio.Queue[str] = field(init=False, default_factory=asyncio.Queue)
    _repairing: set[str] = field(init=False, default_factory=set)
    applied_events: int = field(init=False, default=0)
    """Events this process applied for the first time (benchmarks and tests wait on it)."""
    _writing: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    """One batch at a time: the feed's and the repairs' (the projection has one writer)."""
    _forgetting: BackgroundTasks = field(init=False, default_factory=BackgroundTasks)

    def __post_init__(self) -> None:
        self.projector = Projector(self.store)

    def on_ban(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: a deleted account's figures are
        shown as a deleted player's from now on (recorded in the store, for good)."""
        if ban is None or not ban.erased:
            return
        self._forgetting.spawn(asyncio.to_thread(self.store.forget, player_id, wall_clock_ms()),
                               name=f"stats-forget:{player_id}")

    def follow(self, bus: Bus, *, durable: str = "stats", game_target: str | None = None,
               signer: TokenSigner | None = None, logs: LogSource | None = None,
               max_batch: int = DEFAULT_MAX_BATCH) -> Coroutine[None, None, None]:
        """Register the durable consumer ``durable`` on ``bus`` now, and return the work of
        following the games' events forever (run it as a task). Gaps are repaired through
        ``logs``, or the game service at ``game_target`` with a service token signed by
        ``signer``; without either, the projection waits for the missing events."""
        feed = open_batches(bus, durable, max_batch=max_batch)
        source = logs
        if source is None and game_target and signer is not None:
            source = GameServiceLogs(game_target, signer)
        return self._run(feed, source)

    async def _run(self, feed: Batches, source: LogSource | None) -> None:
        repairing: asyncio.Task[None] | None = None
        if source is not None:
            repairing = asyncio.create_task(self._repair_forever(source), name="stats-repair")
            for game_id in await asyncio.to_thread(self.store.unfinished_games):
                self._schedule_repair(game_id)
        try:
            async for batch in feed.batches():
                await self.project(batch)
        finally:
            if repairing is not None:
                repairing.cancel()
                with contextlib.suppress(BaseException):
                    await repairing
            if isinstance(source, GameServiceLogs):
                with contextlib.suppress(Exception):
                    await source.close()

    async def project(self, batch: Sequence[Delivery]) -> Outcome:
        """Project ``batch``, retrying while the store refuses it; acknowledge what is
        settled and queue what needs repair."""
        async with self._writing:
            while True:
                started = time.perf_counter()
                try:
                    outcome = await asyncio.to_thread(self.projector.project, batch)
                    break
                except Exception as error:  # the store is down or refused: nothing stored
                    _log.warning("stats_batch_failed", events=len(batch), error=repr(error))
                    await asyncio.sleep(RETRY_SECONDS)
        self.metrics.batch_seconds.observe(time.perf_counter() - started)
        self.applied_events += outcome.applied
        self.metrics.applied.inc(outcome.applied)
        self.metrics.repeated.inc(len(outcome.settled) - outcome.applied)
        self.metrics.buffered.set(self.projector.buffered)
        for delivery in outcome.settled:
            if delivery.ack is not None:
                with contextlib.suppress(Exception):  # unacknowledged: delivered again
                    acked = delivery.ack()
                    if inspect.isawaitable(acked):
                        await acked
        for game_id in outcome.repair:
            self._schedule_repair(game_id)
        return outcome

    def _schedule_repair(self, game_id: str) -> None:
        if game_id not in self._repairing:
            self._repairing.add(game_id)
            self._repairs.put_nowait(game_id)

    async def _repair_forever(self, source: LogSource) -> None:
        while True:
            game_id = await self._repairs.get()
            try:
                log = await source.finished_log(game_id)
            except Exception as error:  # the game service is unreachable: later
                _log.info("stats_repair_waiting", game_id=game_id, error=repr(error))
                self.metrics.repairs.labels("unreachable").inc()
                await asyncio.sleep(RETRY_SECONDS)
                self._repairing.discard(game_id)
                self._schedule_repair(game_id)
                continue
            self._repairing.discard(game_id)
            if log is None:  # still running: its events will come, or its end will
                self.metrics.repairs.labels("running").inc()
                continue
            await self.project([Delivery(published) for published in log])
            self.metrics.repairs.labels("repaired").inc()
            _log.info("stats_repaired", game_id=game_id, events=len(log))


def mount_stats_service(server: grpc.aio.Server, store: StatsStore, *,
                        clock: Clock = wall_clock_ms) -> Stats:
    """Add the stats service over ``store`` to ``server``; return it (run :meth:`Stats.follow`)."""
    service = StatsService(store, clock=clock)
    stats_pb2_grpc.add_StatsServiceServicer_to_server(service, server)
    return Stats(store, service)
