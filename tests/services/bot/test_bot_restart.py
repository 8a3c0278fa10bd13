"""A bot whose turn came while the bot service was down plays once it is back."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from tests.e2e.helpers import Guest, stack, wait_for

pytestmark = pytest.mark.timeout(60)


async def test_a_bot_waiting_since_before_a_restart_plays_after_it(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'bots.sqlite3'}"
    async with stack(store_url=store_url, bots=False, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-bot-restart")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=3))
        # Play the guest's turns until a bot is to act; no bot service runs.
        while (view := await guest.view(table.game_id)).turn == 0:
            await guest.play_move(table.game_id)
        waiting_seq = view.seq
    async with stack(store_url=store_url, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-bot-restart")

        bots = run.stack.bots
        assert bots is not None

        async def bot_moved() -> bool:
            # The bot's move is in the log, and its outcome, which comes after the move's
            # events on the bot's stream, has reached the bot service.
            return (await guest.view(table.game_id)).seq > waiting_seq and bots.moves >= 1

        await wait_for(bot_moved, seconds=20)
