"""Whole matches through the lobby, the game service and the bot service over gRPC.

docs/rules/hokm.md "What the app adds": when the host starts, empty seats are filled with bots.
"""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, lobby_pb2
from tests.e2e.helpers import Guest, stack, wait_for

pytestmark = pytest.mark.timeout(180)


async def _finished(guest: Guest, table_id: str) -> bool:
    table = (await guest.call("GetTable", lobby_pb2.GetTableRequest(table_id=table_id))).table
    return bool(table.status == lobby_pb2.TABLE_STATUS_FINISHED)


async def test_one_player_and_three_bots_finish_a_seven_point_hokm_match() -> None:
    # docs/rules/hokm.md "What the app adds": target_score 7, bots fill the empty seats.
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-seven-points", "Sara")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=7,
            bot_level=lobby_pb2.BOT_LEVEL_BASIC,
        ))
        assert [seat.is_bot for seat in table.seats] == [False, True, True, True]
        final = await guest.play_to_the_end(table.game_id)
        assert isinstance(final.view, hokm_pb2.HokmView)
        assert max(final.view.scores) >= 7
        assert list(final.view.winners)
        # The lobby saw the final event and finished the table.
        await wait_for(lambda: _finished(guest, table.table_id))
        log = await guest.log(table.game_id)
        seats_played = {e.hokm.card_played.seat for e in log if e.hokm.HasField("card_played")}
        assert seats_played == {0, 1, 2, 3}


@pytest.mark.parametrize(("variant", "seats"), [
    (hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, 3), (hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, 2),
])
async def test_three_and_two_player_hokm_matches_with_bots(variant: int, seats: int) -> None:
    # docs/rules/hokm.md "Three players" and "Two players": a table has the variant's seats.
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, f"device-variant-{seats}")
        settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)
        settings.hokm.variant = variant  # type: ignore[assignment]
        table = await guest.table_with_bots(settings)
        assert len(table.seats) == seats
        final = await guest.play_to_the_end(table.game_id)
        assert max(final.view.scores) >= 3


async def test_four_player_partnership_hand_match_with_bots() -> None:
    # docs/rules/hand.md partnerships: seats 0+2 and 1+3; one round keeps the test short.
    async with stack(timers=False) as run, grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-hand-partners")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HAND,
            hand=hand_pb2.HandRules(players=4, partnerships=True, rounds=1),
        ))
        final = await guest.play_to_the_end(table.game_id)
        assert isinstance(final.view, hand_pb2.HandView)
        assert final.view.rules.partnerships
        log = await guest.log(table.game_id)
        assert any(e.hand.HasField("round_ended") for e in log)
        totals = final.view.totals
        assert totals[0] == totals[2] and totals[1] == totals[3]  # partners share a total
