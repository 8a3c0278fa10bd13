"""What refusing a spectator stream costs a server process, taken apart against what gRPC
alone costs for the same refusal.

Three servers, each its own process on 127.0.0.1 (on a core of its own when there are two),
measured from ``/proc/<pid>``; one client process opens ``--opens`` spectator ``Subscribe``
streams on each, ``--in-flight`` at a time over 16 connections, ``--streams-per-token`` per
player token (a guest of the flood of ``bench/limits.py`` opens 32), every one refused with
RESOURCE_EXHAUSTED:

- ``floor``: a bare ``grpc.aio`` server whose ``GameService.Subscribe`` aborts every call
  at once with the same rich status (``ErrorInfo``, ``RetryInfo``) dast sends: what the
  framework costs to take a stream, refuse it and tell why;
- ``checked``: the same server behind dast's interceptor (token check from its cache, the
  caller's limits, the request guard), so what authentication and limits add;
- ``dast``: the game service (``python -m services.compose``, embedded) with one spectator
  per match allowed, a match whose one spectator seat is taken, and every further
  spectator refused ``too_many_spectators`` after the handler's checks.

Each gives ``<server>_cpu_us_per_refusal`` (the server's CPU over the opens) and the ratios
``checked_vs_floor`` and ``dast_vs_floor``, measured in one run.

Usage: ``python bench/refusals.py --json [--opens 4000]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.game_service import _setup
from bench.scale import Server, _cpu_seconds, _spawn
from dast.v1 import common_pb2, game_pb2, game_pb2_grpc
from services.platform.auth import Role
from services.platform.errors import Reason, rich_status
from services.platform.server import DastInterceptor, bind, server_options
from services.platform.token_keys import parse_key_ring
from tests.support.tokens import token as signed_token
from tests.support.tokens import token_environment

SUBSCRIBE: Final = "/dast.v1.GameService/Subscribe"
CONNECTIONS: Final = 16
_REFUSED: Final = rich_status(grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.TOO_MANY_SPECTATORS,
                              "this match has 1 spectators on this server", retry_after=5.0)


async def _serve_bare(with_interceptor: bool) -> None:
    """The ``floor`` (and, ``with_interceptor``, the ``checked``) server, until killed."""

    async def refuse(request: game_pb2.SubscribeRequest,
                     context: grpc.aio.ServicerContext) -> Any:
        await context.abort_with_status(_REFUSED)
        yield  # pragma: no cover - makes this an async generator

    handler = grpc.unary_stream_rpc_method_handler(
        refuse, request_deserializer=game_pb2.SubscribeRequest.FromString,
        response_serializer=game_pb2.SubscribeResponse.SerializeToString)
    # The ring of the bench's own test keys (a process makes its own: the parent passes it).
    ring = parse_key_ring(os.environ["DAST_TOKEN_KEYS"])
    interceptors = [DastInterceptor(ring)] if with_interceptor else []
    server = grpc.aio.server(interceptors=interceptors, options=server_options(64 * 1024))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "dast.v1.GameService", {"Subscribe": handler})])
    port = bind(server, "127.0.0.1:0")
    await server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


def _cores() -> tuple[int | None, set[int] | None]:
    cores = sorted(os.sched_getaffinity(0))
    return (cores[0], set(cores[1:])) if len(cores) >= 2 else (None, None)


def _bare(with_interceptor: bool, core: int | None) -> Server:
    return _spawn([sys.executable, __file__, "--serve-checked" if with_interceptor
                   else "--serve-floor"], token_environment(), core)


def _dast(data_dir: str, core: int | None) -> Server:
    return _spawn(
        [sys.executable, "-m", "services.compose"],
        {"DAST_LISTEN": "127.0.0.1:0", "DAST_LOG_LEVEL": "error", "DAST_DATA_DIR": data_dir,
         "DAST_SERVICES": "game", **token_environment(["game"]),
         "DAST_LIMIT_SPECTATORS_PER_GAME": "1", "DAST_LIMIT_CALLS_PER_SECOND": "1000000",
         "DAST_LIMIT_CALL_BURST": "1000000"},
        core,
    )


def _auth(player_id: str, role: Role = Role.PLAYER) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {signed_token(player_id, role)}"),)


async def _refusals(address: str, game_id: str, opens: int, in_flight: int,
                    tokens: list[tuple[tuple[str, str], ...]]) -> dict[str, int]:
    """Open ``opens`` spectator streams of ``game_id``; how they ended, by status."""
    channels = [grpc.aio.insecure_channel(address) for _ in range(CONNECTIONS)]
    outcomes: dict[str, int] = {}
    slots = asyncio.Semaphore(in_flight)

    async def one(number: int) -> None:
        async with slots:
            stub = game_pb2_grpc.GameServiceStub(channels[number % CONNECTIONS])
            call = stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                  metadata=tokens[number % len(tokens)])
            try:
                async for _ in call:
                    pass
                code = "OK"
            except grpc.aio.AioRpcError as error:
                code = error.code().name
            outcomes[code] = outcomes.get(code, 0) + 1

    try:
        await asyncio.gather(*(one(number) for number in range(opens)))
    finally:
        for channel in channels:
            await channel.close()
    return outcomes


async def _measure(server: Server, game_id: str, opens: int, in_flight: int,
                   tokens: list[tuple[tuple[str, str], ...]]) -> tuple[float, dict[str, int]]:
    """The server's CPU µs per open over ``opens`` (after a warm-up using every token once,
    so that each is verified before the count starts, as a flood's tokens are after their
    first stream)."""
    await _refusals(server.address, game_id, len(tokens), in_flight, tokens)
    before = _cpu_seconds([server.pid])[server.pid]
    outcomes = await _refusals(server.address, game_id, opens, in_flight, tokens)
    spent = _cpu_seconds([server.pid])[server.pid] - before
    return spent * 1e6 / opens, outcomes


async def _dast_match(address: str) -> str:
    """A match with its one spectator seat taken (the stream kept open); its id."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        rules, seed, seated = _setup(0)
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated, server_seed=seed,
            game_id="refusals-0"), metadata=_auth("bench-admin", Role.ADMIN))
        return str(created.game_id)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    server_core, client_cores = _cores()
    if client_cores is not None:
        os.sched_setaffinity(0, client_cores)
    # A guest's token per --streams-per-token streams, made before any server is timed.
    tokens = [_auth(f"spectator-{number}")
              for number in range(max(args.opens // args.streams_per_token, 1))]
    result: dict[str, Any] = {"opens": args.opens, "in_flight": args.in_flight}
    for name, with_interceptor in (("floor", False), ("checked", True)):
        server = _bare(with_interceptor, server_core)
        try:
            cost, outcomes = await _measure(server, "any-game", args.opens, args.in_flight,
                                            tokens)
        finally:
            server.process.kill()
            server.process.wait()
        result[f"{name}_cpu_us_per_refusal"] = round(cost, 1)
        result[f"{name}_outcomes"] = outcomes
    with tempfile.TemporaryDirectory(prefix="dast-refusals-") as data_dir:
        server = _dast(data_dir, server_core)
        try:
            game_id = await _dast_match(server.address)
            async with grpc.aio.insecure_channel(server.address) as channel:
                held = game_pb2_grpc.GameServiceStub(channel).Subscribe(
                    game_pb2.SubscribeRequest(game_id=game_id), metadata=_auth("first-seat"))
                await held.read()  # the one spectator allowed: every other is refused
                cost, outcomes = await _measure(server, game_id, args.opens, args.in_flight,
                                                tokens)
                held.cancel()
        finally:
            server.process.kill()
            server.process.wait()
    result["dast_cpu_us_per_refusal"] = round(cost, 1)
    result["dast_outcomes"] = outcomes
    floor = result["floor_cpu_us_per_refusal"] or 1.0
    result["checked_vs_floor"] = round(result["checked_cpu_us_per_refusal"] / floor, 2)
    result["dast_vs_floor"] = round(result["dast_cpu_us_per_refusal"] / floor, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=4000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--streams-per-token", type=int, default=32,
                        help="streams each guest (token) opens, as in bench/limits.py")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-checked", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor or args.serve_checked:
        asyncio.run(_serve_bare(args.serve_checked))
        return
    result = asyncio.run(_run(args))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
