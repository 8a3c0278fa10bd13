"""What the operator console's overview costs against the gRPC calls it makes.

A whole stack in this process (``tests.e2e.helpers.stack``, bots and timers off so the
matches stay live and idle) holds ``--games`` live lobby matches, each hosted by a guest with
three bots; the console serves over HTTP (uvicorn on loopback) and one operator is signed
in. Then ``--rounds`` times, alternating: the overview page (``GET /``, through HTTP, the
page rendered), and the same gRPC calls the page makes (the lobby's tables, every service's
health, the running tournaments, every game replica's status) made directly. The figures:
``overview_ms_p95``, ``grpc_ms_p95`` and ``overview_vs_grpc`` (their ratio, from one run).

Usage: ``python bench/console.py --json [--games 1000] [--rounds 200]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from dast.v1 import common_pb2, lobby_pb2, tournament_pb2
from services.console.app import build_app
from services.console.backend import Backend, ConsoleTargets
from services.console.server import ConsoleServer
from services.platform.auth import Role
from tests.e2e.helpers import Guest, stack
from tests.services.console.client import sign_in
from tests.support.tokens import TEST_KEYS, token

BATCH = 25


async def _live_games(channel: grpc.aio.Channel, games: int) -> None:
    """``games`` started lobby matches, each hosted by its own guest with three bots."""
    async def one(number: int) -> None:
        guest = await Guest.sign_in(channel, f"bench-console-{number}", f"Host {number}")
        table = (await guest.call("CreateTable", lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)))).table
        for seat in (1, 2, 3):
            await guest.call("AddBot", lobby_pb2.AddBotRequest(
                table_id=table.table_id, seat=seat, level=lobby_pb2.BOT_LEVEL_RANDOM))
        await guest.call("StartGame", lobby_pb2.StartGameRequest(table_id=table.table_id))

    for start in range(0, games, BATCH):
        await asyncio.gather(*(one(n) for n in range(start, min(games, start + BATCH))))


async def _the_pages_calls(backend: Backend, operator: str) -> None:
    """What the overview asks the services (services/console/pages.py ``figures``)."""
    await asyncio.gather(
        backend.all_tables(operator),
        backend.health(),
        backend.call(backend.tournaments.ListTournaments, tournament_pb2.ListTournamentsRequest(
            status=tournament_pb2.TOURNAMENT_STATUS_RUNNING, page_size=100), operator),
        backend.game_statuses(operator))


def _p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


async def measure(games: int, rounds: int) -> dict[str, Any]:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        started = time.perf_counter()
        await _live_games(channel, games)
        setup_s = time.perf_counter() - started
        targets = ConsoleTargets.parse("", default=run.address)
        console = ConsoleServer(build_app(Backend(targets), TEST_KEYS.ring), "127.0.0.1:0")
        await console.start()
        direct = Backend(targets)
        operator = token("bench-operator", Role.ADMIN)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{console.port}",
                                         timeout=60) as client:
                assert (await sign_in(client, operator)).status_code == 303
                page = await client.get("/api/overview")
                assert page.json()["live_games"] == games, page.text
                for _ in range(5):  # warm both paths
                    await client.get("/")
                    await _the_pages_calls(direct, operator)
                page_ms: list[float] = []
                grpc_ms: list[float] = []
                for _ in range(rounds):
                    began = time.perf_counter()
                    reply = await client.get("/")
                    page_ms.append((time.perf_counter() - began) * 1000)
                    assert reply.status_code == 200
                    began = time.perf_counter()
                    await _the_pages_calls(direct, operator)
                    grpc_ms.append((time.perf_counter() - began) * 1000)
        finally:
            await direct.close()
            await console.stop()
    return {
        "games": games, "rounds": rounds, "setup_s": round(setup_s, 1),
        "overview_ms_p50": round(statistics.median(page_ms), 2),
        "overview_ms_p95": round(_p95(page_ms), 2),
        "grpc_ms_p50": round(statistics.median(grpc_ms), 2),
        "grpc_ms_p95": round(_p95(grpc_ms), 2),
        "overview_vs_grpc": round(_p95(page_ms) / _p95(grpc_ms), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.games, args.rounds))
    print(json.dumps(figures) if args.json else "\n".join(
        f"{key}: {value}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
