"""The play stack on PostgreSQL and NATS JetStream: the bots follow the durable consumer.

docs/architecture.md "Event store and bus": production runs against PostgreSQL and NATS; consumers
(bots, timers, the lobby's follower) share durable consumers.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from services.compose import StackOptions, running_stack
from tests.conftest import NatsNames
from tests.e2e.helpers import Guest, wait_for
from tests.support.tokens import TEST_KEYS, token

pytestmark = pytest.mark.timeout(180)


async def test_a_hokm_match_with_bots_and_a_timeout_on_postgres_and_nats(
    pg_url: str, nats_url: str, nats_names: NatsNames,
) -> None:
    options = StackOptions(grace_ms=300, timer_shift_ms=-14_900)
    async with running_stack(
        TEST_KEYS, store_url=pg_url, nats_url=nats_url, options=options,
        deployment=nats_names.deployment,
    ) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in_with_accounts(channel, "device-pg-nats")
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
            current = (await guest.call("GetTable", lobby_pb2.GetTableRequest(
                table_id=table.table_id))).table
            return bool(current.status == lobby_pb2.TABLE_STATUS_FINISHED)

        await wait_for(finished, seconds=20)


async def test_two_replicas_share_the_bots_durable_consumer_and_finish_a_match(
    pg_url: str, nats_url: str, nats_names: NatsNames,
) -> None:
    # docs/architecture.md "Scale-out": consumers scale by sharing durable consumers; any replica's
    # game service takes any command and the store settles races.
    from dast.v1 import game_pb2, game_pb2_grpc, hokm_pb2
    from services.bot.policies import SeatView
    from services.platform.auth import Role

    options = StackOptions(timers=False, presence=False)
    metadata = (("authorization", f"Bearer {token('tester', Role.SERVICE)}"),)
    async with running_stack(TEST_KEYS, store_url=pg_url, nats_url=nats_url, options=options,
                             deployment=nats_names.deployment) as first, \
            running_stack(TEST_KEYS, store_url=pg_url, nats_url=nats_url, options=options,
                          deployment=nats_names.deployment) as second, \
            grpc.aio.insecure_channel(first.address) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        players = [common_pb2.Player(player_id=f"bot:basic:{s}", is_bot=True) for s in range(4)]
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, players=players,
            hokm=hokm_pb2.HokmRules(target_score=3)), metadata=metadata)

        async def over() -> bool:
            reply = await stub.GetView(game_pb2.GetViewRequest(game_id=created.game_id),
                                       metadata=metadata)
            return SeatView.of(reply).is_over

        await wait_for(over, seconds=120, step=0.2)
        entries = await asyncio.to_thread(first.store.load, created.game_id, 0)
        bots = [run.stack.bots for run in (first, second)]
        assert bots[0] is not None and bots[1] is not None
        played = sum(1 for e in entries if e.event.hokm.WhichOneof("kind") in (
            "card_played", "trump_declared"))
        # Every move was appended exactly once, by one replica or the other.
        assert bots[0].moves + bots[1].moves == played
