"""The stats service as its own process over NATS and PostgreSQL, SIGKILLed mid-stream.

The test plays the relay: it publishes the logs of bot matches of every variant to its own
JetStream stream (some events twice, as distinct messages: repeats the projection must
drop; bursts of concurrent publishes: events out of order), while ``python -m
services.compose`` with ``DAST_SERVICES=stats`` follows them. The process is killed with
SIGKILL in the middle of a burst, and restarted. In the end its
tables equal the independent recomputation from the logs: nothing acknowledged was lost
and nothing counted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import Awaitable
from pathlib import Path

import nats
import pytest

from dast.v1 import log_pb2
from services.platform.bus_nats import NatsBus
from services.stats.store import StatsStore
from tests.conftest import NatsNames
from tests.e2e.test_multiprocess_stack import SIGNING_KEY
from tests.services.stats.checks import assert_matches_logs, stats_progress
from tests.services.stats.matches import corpus
from tests.support.processes import ServiceProcess
from tests.support.servers import free_port
from tests.support.tokens import token_environment

pytestmark = pytest.mark.timeout(180)


async def test_a_killed_stats_process_resumes_without_losing_or_double_counting(
        pg_url: str, nats_url: str, nats_names: NatsNames, tmp_path: Path) -> None:
    matches = corpus(1, first_index=100)
    logs = {match.game_id: match.events for match in matches}
    total = sum(len(events) for events in logs.values())
    draw = random.Random(4)
    queues = [[(m.game.NAME, m.game_id, e) for e in m.events] for m in matches]
    stream: list[tuple[str, str, log_pb2.Event]] = []
    while queues:
        queue = draw.choice(queues)
        stream.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    env = {**os.environ, "DAST_DATABASE_URL": pg_url,
           "DAST_NATS_URL": nats_url, "DAST_DEPLOYMENT": nats_names.deployment,
           **token_environment(["stats"]), "DAST_SIGNING_KEY": SIGNING_KEY,
           "DAST_LOG_LEVEL": "warning"}
    log = tmp_path / "stats.log"
    process = ServiceProcess("stats", "stats", free_port(), env, log)
    bus = NatsBus(nats_url, stream=nats_names.stream, subject_prefix=nats_names.subject_prefix)
    await bus.start()
    raw = await nats.connect(nats_url)
    jetstream = raw.jetstream()
    process.start()
    try:
        third = len(stream) // 3
        parts = [stream[:third], stream[third:2 * third], stream[2 * third:]]
        applied_at_start = 0
        for number, part in enumerate(parts):
            # The first part trickles in; the others come in bursts (concurrent publishes,
            # so a game's events may also arrive out of order). The process is killed as
            # soon as the second part is in the stream: in the middle of working through it.
            publishes: list[Awaitable[object]] = []
            for game_type, game_id, event in part:
                entry = log_pb2.LogEntry(event=event)
                publishes.append(bus.publish(game_type, game_id, [entry]))
                if draw.random() < 0.05:  # the same event again, as another message
                    publishes.append(jetstream.publish(bus.subject(game_type, game_id),
                                                       entry.SerializeToString()))
            if number == 0:
                for publish in publishes:
                    await publish
                continue
            if number == 2:  # the rest, while the restarted process starts
                await asyncio.gather(*publishes)
                continue
            for _ in range(600):  # the process consumes (it committed something new)
                if stats_progress(pg_url)[1] > applied_at_start:
                    break
                await asyncio.sleep(0.05)
            # Kill it while it holds messages it fetched and has not acknowledged (on a
            # quiet machine it would otherwise have acknowledged the whole burst already).
            burst = asyncio.ensure_future(asyncio.gather(*publishes))
            for _ in range(2000):
                info = await jetstream.consumer_info(nats_names.stream, "stats")
                if info.num_ack_pending:
                    break
                await asyncio.sleep(0.005)
            process.kill()
            await burst
            info = await jetstream.consumer_info(nats_names.stream, "stats")
            assert info.num_ack_pending, "the kill found nothing fetched and unacknowledged"
            applied_at_start = stats_progress(pg_url)[1]
            assert applied_at_start < total
            process.start()

        async def caught_up() -> bool:
            return stats_progress(pg_url) == (len(matches), total)

        for _ in range(600):
            assert process.running, process.log_tail(3000)
            if await caught_up():
                break
            await asyncio.sleep(0.1)
        assert await caught_up(), process.log_tail(3000)
        # Messages the killed processes had fetched and not acknowledged came again (a
        # durable consumer numbers every delivery, redeliveries included). A kill between
        # a batch's commit and its acknowledgements leaves the tables caught up before
        # the redelivery (after the consumer's ack wait): wait for it to be acknowledged.
        for _ in range(600):
            consumer = await jetstream.consumer_info(nats_names.stream, "stats")
            if not consumer.num_ack_pending and not consumer.num_pending:
                break
            await asyncio.sleep(0.05)
        assert consumer.delivered.consumer_seq > consumer.delivered.stream_seq
        assert await caught_up()  # the redelivered messages were applied once only
        store = StatsStore.open(pg_url)
        try:
            assert_matches_logs(store, logs)
        finally:
            store.close()
    finally:
        process.stop()
        with contextlib.suppress(Exception):
            await jetstream.delete_stream(nats_names.stream)
        await raw.close()
        await bus.close()
