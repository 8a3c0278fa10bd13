"""A lobby that was down while its match ended catches up, on the embedded defaults too.

The in-process bus keeps nothing across a restart, so the lobby cannot replay what it
missed from the bus: on start it asks the game service about every table still playing.
Here the match is created by the whole backend, played to its end by a process serving only
the game and bot services (no lobby anywhere), and then the whole backend starts again on the
same data dir: the table ends as finished, and a rematch plays.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from services.compose import run
from services.platform.config import Settings
from tests.e2e.helpers import Guest, wait_for

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(data_dir: Path, services: str) -> AsyncIterator[grpc.aio.Channel]:
    """``dast serve --services SERVICES`` on the embedded defaults under ``data_dir``."""
    address = f"127.0.0.1:{_free_port()}"
    settings = Settings(listen=address, data_dir=data_dir, services=services,
                        log_level="warning",
                        limit_calls_per_second=1e6, limit_call_burst=1_000_000)
    stop = asyncio.Event()
    server = asyncio.create_task(run(settings, stop=stop))
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            await asyncio.wait_for(channel.channel_ready(), 20)
            yield channel
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(server, 30)


async def test_a_table_whose_match_ended_while_no_lobby_ran_ends_finished(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, "all") as channel:
        guest = await Guest.sign_in_with_accounts(channel, "device-catch-up")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, target_score=3))
        assert table.status == lobby_pb2.TABLE_STATUS_PLAYING

    async with serving(tmp_path, "game,bot") as channel:  # no lobby follows this match
        player = Guest(channel, guest.player_id, guest.token)
        assert (await player.play_to_the_end(table.game_id)).is_over

    async with serving(tmp_path, "all") as channel:
        player = Guest(channel, guest.player_id, guest.token)

        async def finished() -> bool:
            current = (await player.call("GetTable", lobby_pb2.GetTableRequest(
                table_id=table.table_id))).table
            return bool(current.status == lobby_pb2.TABLE_STATUS_FINISHED)

        assert await wait_for(finished, seconds=20)
        rematch = (await player.call("Rematch", lobby_pb2.RematchRequest(
            table_id=table.table_id))).table
        assert rematch.status == lobby_pb2.TABLE_STATUS_PLAYING
        assert (await player.play_to_the_end(rematch.game_id)).is_over
        assert await wait_for(finished, seconds=20)
