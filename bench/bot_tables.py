"""Benchmark whole bot-only Hokm matches played through gRPC by the bot service.

Each match is created with GameService.CreateGame (four ``basic`` bot players, the default
7-point rules) and played to its end by the bot service, which learns whose turn it is from
the bus and acts on one Play stream per game (its seats' turns and views come on the stream,
its commands go on it). ``--tables`` matches run at once.

- ``bot_tables_per_cpu_minute``: on the embedded backend (SQLite file, in-process bus: the
  game service, the bots and this benchmark's client in one process), finished matches per
  minute of that process's CPU time (every thread's): what a table of bots costs the
  servers, whatever else the machine runs.
- ``tables_per_min_embedded``: the same run's finished matches per minute of wall time.
- ``tables_per_min_pg_nats``: PostgreSQL (``DAST_TEST_DATABASE_URL``, a throwaway schema) and
  NATS JetStream (``DAST_TEST_NATS_URL``, a throwaway stream); ``null`` with ``pg_nats_error``
  when either is unreachable.

Run ``python bench/bot_tables.py --json`` for one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.places import delete_streams, fresh_schema
from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2
from services.compose import StackOptions, running_stack
from services.platform.auth import Role
from services.platform.bus import Bus
from services.platform.nats_names import NatsNames
from tests.support.tokens import TEST_KEYS
from tests.support.tokens import token as signed_token

DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"


async def _matches_ended(bus: Bus, game_ids: set[str], done: asyncio.Event) -> None:
    from engine import hokm

    left = set(game_ids)
    async for published in bus.all_events():
        if published.game_id in left and hokm.revealed_seed(published.entry.event):
            left.discard(published.game_id)
            if not left:
                done.set()
                return


async def _play(address: str, bus: Bus, matches: int, tables: int,
                target: int) -> tuple[float, float]:
    """Play ``matches`` bot-only matches, ``tables`` at a time; matches per minute of wall
    time and of this process's CPU time."""
    token = signed_token("bench", Role.SERVICE)
    metadata = (("authorization", f"Bearer {token}"),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        players = [common_pb2.Player(player_id=f"bot:basic:{s}", display_name=f"Bot {s}",
                                     is_bot=True) for s in range(4)]
        started = time.perf_counter()
        cpu_started = time.process_time()
        finished = 0
        while finished < matches:
            batch = {f"bench-{uuid.uuid4().hex[:12]}" for _ in range(min(tables,
                                                                          matches - finished))}
            done = asyncio.Event()
            watcher = asyncio.create_task(_matches_ended(bus, batch, done))
            await asyncio.sleep(0)  # the watcher subscribes before the first event
            for game_id in batch:
                await stub.CreateGame(game_pb2.CreateGameRequest(
                    game_type=common_pb2.GAME_TYPE_HOKM, game_id=game_id, players=players,
                    hokm=hokm_pb2.HokmRules(target_score=target),
                ), metadata=metadata)
            await asyncio.wait_for(done.wait(), timeout=600)
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher
            finished += len(batch)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    return finished / elapsed * 60, finished / cpu * 60


async def embedded(matches: int, tables: int, target: int) -> tuple[float, float]:
    """Matches per minute (wall, CPU) on the embedded backend."""
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'bench.sqlite3'}"
        options = StackOptions(timers=False, presence=False)
        async with running_stack(TEST_KEYS, store_url=url, options=options) as run:
            return await _play(run.address, run.stack.bus, matches, tables, target)


async def pg_nats(matches: int, tables: int, target: int) -> float:
    """Matches per minute on PostgreSQL and NATS JetStream."""
    database_url = os.environ.get("DAST_TEST_DATABASE_URL", DEFAULT_DATABASE_URL)
    nats_url = os.environ.get("DAST_TEST_NATS_URL", DEFAULT_NATS_URL)
    deployment = f"bench{uuid.uuid4().hex[:10]}"
    with fresh_schema(database_url) as url:
        options = StackOptions(timers=False, presence=False)
        try:
            async with running_stack(TEST_KEYS, store_url=url, nats_url=nats_url, options=options,
                                     deployment=deployment) as run:
                return (await _play(run.address, run.stack.bus, matches, tables, target))[0]
        finally:
            with contextlib.suppress(Exception):
                await delete_streams(nats_url, NatsNames(deployment))


def main() -> None:
    """Run both setups and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--matches", type=int, default=16)
    parser.add_argument("--tables", type=int, default=8, help="matches played at once")
    parser.add_argument("--target", type=int, default=7, help="points to win a match")
    parser.add_argument("--embedded-only", action="store_true",
                        help="skip the PostgreSQL + NATS run")
    args = parser.parse_args()
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    figures: dict[str, Any] = {"matches": args.matches, "tables": args.tables,
                               "target_score": args.target}
    wall, cpu = asyncio.run(embedded(args.matches, args.tables, args.target))
    figures["bot_tables_per_cpu_minute"] = round(cpu, 1)
    figures["tables_per_min_embedded"] = round(wall, 1)
    if not args.embedded_only:
        try:
            figures["tables_per_min_pg_nats"] = round(
                asyncio.run(pg_nats(args.matches, args.tables, args.target)), 1)
        except Exception as error:
            figures["tables_per_min_pg_nats"] = None
            figures["pg_nats_error"] = f"{type(error).__name__}: {error}"
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
