"""The bot service plays whole matches of bots alone through the game service's gRPC API."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2
from services.bot.policies import SeatView
from services.platform.auth import Role
from tests.e2e.helpers import stack, wait_for
from tests.support.tokens import token

pytestmark = pytest.mark.timeout(120)


async def test_four_bots_play_a_seven_point_match_to_the_end_on_their_own() -> None:
    # Nobody but the bot service moves: the match must never stall between wake-ups.
    metadata = (("authorization", f"Bearer {token('tester', Role.SERVICE)}"),)
    players = [common_pb2.Player(player_id=f"bot:{level}:{seat}", is_bot=True)
               for seat, level in enumerate(("basic", "greedy", "random", "basic"))]
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, players=players,
            hokm=hokm_pb2.HokmRules(target_score=7)), metadata=metadata)

        async def over() -> SeatView | None:
            reply = await stub.GetView(game_pb2.GetViewRequest(game_id=created.game_id),
                                       metadata=metadata)
            view = SeatView.of(reply)
            return view if view.is_over else None

        final = await wait_for(over, seconds=100, step=0.2)
        assert max(final.view.scores) >= 7
        # Every card of every round came from the bot service (13 tricks of 4 cards a round).
        entries = await asyncio.to_thread(run.store.load, created.game_id, 0)
        played = sum(1 for e in entries if e.event.hokm.HasField("card_played"))
        assert run.stack.bots is not None and run.stack.bots.moves >= played >= 52
