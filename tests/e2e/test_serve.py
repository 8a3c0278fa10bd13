"""``dast serve`` runs the lobby, game, bot and timer services in one process (the runner)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, lobby_pb2
from services.compose import run
from services.platform.config import Settings
from tests.e2e.helpers import Guest

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_embedded_server_plays_a_match_with_bots(tmp_path: Path) -> None:
    address = f"127.0.0.1:{_free_port()}"
    # The guest plays at machine speed (a whole match in seconds), far above a person's
    # call rate: the default limits per player would refuse it.
    settings = Settings(listen=address, data_dir=tmp_path, services="all",
                        log_level="warning", limit_calls_per_second=1e6,
                        limit_call_burst=1_000_000)
    stop = asyncio.Event()
    server = asyncio.create_task(run(settings, stop=stop))
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            await asyncio.wait_for(channel.channel_ready(), 20)
            guest = await Guest.sign_in_with_accounts(channel, "device-serve")
            table = await guest.table_with_bots(lobby_pb2.TableSettings(
                game_type=common_pb2.GAME_TYPE_HOKM, target_score=3))
            final = await guest.play_to_the_end(table.game_id)
            assert final.is_over and max(final.view.scores) >= 3
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(server, 30)
    # The embedded store is a SQLite file under the data dir.
    assert any(path.suffix in (".db", ".sqlite3") for path in tmp_path.iterdir())
