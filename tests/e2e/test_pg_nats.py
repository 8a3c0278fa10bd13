"""The play stack on PostgreSQL and NATS JetStream: the bots follow the durable consumer.

DESIGN.md "Event store and bus": production runs against PostgreSQL and NATS; consumers
(bots, timers, the lobby's follower) share durable consumers.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from services.bot.stack import StackOptions, running_stack
from tests.conftest import NatsNames
from tests.e2e.helpers import SECRET, Guest, wait_for

pytestmark = [pytest.mark.usefixtures("open_sign_in"), pytest.mark.timeout(180)]


async def test_a_hokm_match_with_bots_and_a_timeout_on_postgres_and_nats(
    pg_url: str, nats_url: str, nats_names: NatsNames,
) -> None:
    options = StackOptions(grace_ms=300, timer_shift_ms=-14_900)
    async with running_stack(
        SECRET, store_url=pg_url, nats_url=nats_url, options=options,
        stream=nats_names.stream, subject_prefix=nats_names.subject_prefix,
    ) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-pg-nats")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=3, turn_seconds=15))

        # The guest never moves: every one of its turns runs out and its bot plays.
        async def over() -> bool:
            return (await guest.view(table.game_id)).is_over

        await wait_for(over, seconds=150, step=0.2)
        entries = await asyncio.to_thread(run.store.load, table.game_id, 0)
        log = [entry.event for entry in entries]
        assert any(e.automatic for e in log)
        assert run.stack.timers is not None and run.stack.timers.fired > 0

        async def finished() -> bool:
            current = await guest.call("GetTable", lobby_pb2.GetTableRequest(
                table_id=table.table_id))
            return bool(current.status == lobby_pb2.TABLE_STATUS_FINISHED)

        await wait_for(finished, seconds=20)
