"""GetServerStatus: a replica's commands accepted, refused and failed, events appended and
streams open, for operators only (the console's overview reads it)."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, lobby_pb2
from services.platform.auth import Role
from services.platform.errors import reason_of
from tests.e2e.helpers import Guest, stack, wait_for
from tests.support.tokens import bearer

pytestmark = pytest.mark.timeout(120)
OPERATOR = bearer("operator-1", Role.ADMIN)


async def test_the_status_counts_commands_and_streams_and_only_operators_read_it() -> None:
    async with stack(bots=True, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        game = game_pb2_grpc.GameServiceStub(channel)

        async def status() -> game_pb2.GetServerStatusResponse:
            reply: game_pb2.GetServerStatusResponse = await game.GetServerStatus(
                game_pb2.GetServerStatusRequest(), metadata=OPERATOR)
            return reply

        before = await status()
        assert before.started_at_ms > 0
        for token in (bearer("p-1", Role.PLAYER), bearer("lobby", Role.SERVICE)):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await game.GetServerStatus(game_pb2.GetServerStatusRequest(), metadata=token)
            assert (refused.value.code(), reason_of(refused.value)) == (
                grpc.StatusCode.PERMISSION_DENIED, "role_required")

        guest = await Guest.sign_in(channel, "status-1", "Sara")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM))
        events = game.Subscribe(game_pb2.SubscribeRequest(game_id=table.game_id),
                                metadata=guest.metadata)
        assert await events.read() is not grpc.aio.EOF
        assert (await status()).open_subscriptions == before.open_subscriptions + 1

        async def accepted() -> bool:
            await guest.play_move(table.game_id)
            now = await status()
            return now.commands_accepted > before.commands_accepted and (
                now.events_appended > before.events_appended)

        await wait_for(accepted, seconds=60, step=0.1)
        with pytest.raises(grpc.aio.AioRpcError):
            await guest.call("SubmitCommand", game_pb2.SubmitCommandRequest(
                game_id=table.game_id, command_id="empty"))
        after = await status()
        assert after.commands_refused == before.commands_refused + 1
        assert after.commands_failed == before.commands_failed
        events.cancel()

        async def closed() -> bool:
            return (await status()).open_subscriptions == before.open_subscriptions

        await wait_for(closed, seconds=10)
