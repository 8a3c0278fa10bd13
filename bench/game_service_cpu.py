"""CPU per call of the game service against the bare echo, and the ceiling that puts on
``embedded_vs_echo`` (``bench/game_service.py``), measured in one run.

``embedded_vs_echo`` compares two single-process servers at saturation, with the client on
the same two cores. A grpc.aio server runs its Python on one core at a time (the GIL), so
at saturation it serves about one call per "CPU per call" of its own, and the ratio is
about the echo's CPU per call over the game server's. This bench measures the parts:

- ``echo_us``: the bare echo server's CPU per call (a closed loop, 100 calls in flight);
- ``stack_us``: a server of the same stack as ``dast serve`` (authentication, per-caller
  limits, request checks, the same GIL and garbage-collector settings) whose
  ``SubmitCommand`` answers a fixed reply: what a command costs before it does anything;
- ``embedded_us``: the embedded game server (SQLite, in-process bus) per command;
- ``memory_store_us``: the same server with its event store swapped for one that keeps the
  log in memory and completes each write on the event loop: no thread, no SQL, nothing
  durable. No store can cost less, so ``memory_store_vs_echo`` bounds what any work on the
  store can bring ``embedded_vs_echo`` to;
- ``in_process_us_lockstep`` / ``in_process_us_one``: ``SubmitCommand`` called without
  gRPC, 100 games in lock-step (about 100 commands per store transaction: the store's best
  case) and one game at a time (one command per transaction);
- ``predicted_vs_echo``: ``echo_us / (stack_us + in_process_us_one)``: under gRPC the
  requests reach the loop one by one, so a command costs about the stack plus one command
  handled alone; this predicts ``embedded_vs_echo`` from its parts;
- ``ceiling_vs_echo``: ``echo_us / (stack_us + in_process_us_lockstep)``: the ratio if a
  command served over gRPC cost no more than the stack plus the in-process best case.

Each ``*_us`` is the server process's user + system CPU over the timed loop divided by the
calls served; ``*_client_us`` the same for the bench process (the client).

Usage: ``python bench/game_service_cpu.py --json [--seconds 5] [--games 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from subprocess import Popen
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.game_service import (
    _game_server,
    _run_echo,
    _run_game,
    _script,
    _setup,
    _spawn,
    _stop,
)
from bench.report import print_figures
from bench.scale import _cpu_seconds
from dast.v1 import common_pb2, game_pb2
from services.compose import GIL_SWITCH_SECONDS, settle_collector
from services.game.repository import GameRepository
from services.game.service import GameService
from services.platform.auth import Identity, Role, with_identity
from services.platform.bus import InProcessBus
from services.platform.logging import configure_logging
from services.platform.metrics import game_metrics
from services.platform.server import bind, make_server
from services.platform.store import AppendResult, LogEntry, MemoryEventStore, open_store
from tests.support.tokens import TEST_KEYS

ECHO_SERVER = [sys.executable, str(Path(__file__).resolve().parent / "game_service.py"),
               "--echo-server"]
STACK_SERVER = [sys.executable, __file__, "--stack-server"]
MEMORY_STORE_SERVER = [sys.executable, __file__, "--memory-store-server"]


# ---- the fixed-reply server ---------------------------------------------------------


_SUBMITTED = game_pb2.SubmitCommandResponse(seq=1)


async def _created(
    request: game_pb2.CreateGameRequest, context: grpc.aio.ServicerContext
) -> game_pb2.CreateGameResponse:
    return game_pb2.CreateGameResponse(game_id=request.game_id, seq=1)


async def _submitted(
    request: game_pb2.SubmitCommandRequest, context: grpc.aio.ServicerContext
) -> game_pb2.SubmitCommandResponse:
    return _SUBMITTED


def _fixed_replies() -> grpc.GenericRpcHandler:
    """The game service's CreateGame and SubmitCommand doing nothing but answer."""
    return grpc.method_handlers_generic_handler(
        game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name, {
            "CreateGame": grpc.unary_unary_rpc_method_handler(
                _created, request_deserializer=game_pb2.CreateGameRequest.FromString,
                response_serializer=game_pb2.CreateGameResponse.SerializeToString),
            "SubmitCommand": grpc.unary_unary_rpc_method_handler(
                _submitted, request_deserializer=game_pb2.SubmitCommandRequest.FromString,
                response_serializer=game_pb2.SubmitCommandResponse.SerializeToString),
        })


async def _stack_server() -> None:
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    server = make_server(TEST_KEYS.ring)
    server.add_generic_rpc_handlers((_fixed_replies(),))
    port = bind(server, "127.0.0.1:0")
    await server.start()
    settle_collector()
    print(f"stack listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


# ---- the server without a durable store ---------------------------------------------


class LoopMemoryStore(MemoryEventStore):
    """The in-memory event store, its writes completed on the event loop when awaited (the
    game repository then never hands a write to a thread)."""

    async def create_game_async(
        self, game_id: str, game_type: int, entries: Sequence[LogEntry], *, relayed: bool = False,
        spectators_allowed: bool = True,
    ) -> None:
        self.create_game(game_id, game_type, entries, relayed=relayed,
                         spectators_allowed=spectators_allowed)

    async def append_async(
        self, game_id: str, entries: Sequence[LogEntry], *, command_id: str | None,
        sender: str | None = None, relayed: bool = False, previous_hash: bytes | None = None,
    ) -> AppendResult:
        return self.append(game_id, entries, command_id=command_id, sender=sender,
                           relayed=relayed)


def _memory_store_server() -> None:
    """``dast serve`` as the embedded game server runs it, on :class:`LoopMemoryStore`."""
    import services.compose as compose

    compose.open_store = lambda url: LoopMemoryStore()  # type: ignore[attr-defined]
    compose.main()


# ---- measuring ----------------------------------------------------------------------


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _over_grpc(
    started: tuple[Popen[str], str], run: Callable[[str, float], Coroutine[Any, Any, float]],
    seconds: float,
) -> dict[str, float]:
    """Calls a second and CPU per call (server, client) of ``run`` against a server."""
    process, address = started
    try:
        asyncio.run(run(address, 1.0))  # connections and caches warm
        server_before = _cpu_seconds([process.pid])[process.pid]
        client_before, wall_before = _client_cpu(), time.perf_counter()
        rps = asyncio.run(run(address, seconds))
        wall = time.perf_counter() - wall_before
        client = _client_cpu() - client_before
        server = _cpu_seconds([process.pid])[process.pid] - server_before
    finally:
        _stop(process)
    calls = rps * wall
    return {"rps": round(rps, 1), "us": round(server / calls * 1e6, 1),
            "client_us": round(client / calls * 1e6, 1)}


async def _in_process(games: int, seconds: float, data_dir: str) -> float:
    """CPU microseconds per command of SubmitCommand called without gRPC."""
    store = open_store(f"sqlite:///{data_dir}/events.db")
    service = GameService(GameRepository(store), InProcessBus(), lambda: None, game_metrics())
    admin = Identity("bench", Role.ADMIN)
    # The handlers as the server runs them once the caller is known (no context: nothing
    # on this path reads one).
    create = with_identity(grpc.unary_unary_rpc_method_handler(service.CreateGame), admin)
    submit = with_identity(grpc.unary_unary_rpc_method_handler(service.SubmitCommand), admin)
    scripts = [_script(number) for number in range(games)]
    served = 0

    async def play(number: int, stop: float, tag: str) -> None:
        nonlocal served
        rules, seed, seated = _setup(number)
        for count in itertools.count(1):  # a new game each time one ends
            created = await create.unary_unary(game_pb2.CreateGameRequest(
                game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated,
                server_seed=seed, game_id=f"cpu-{tag}-{number}-{count}"), None)
            for command_no, (seat, command) in enumerate(scripts[number]):
                if time.perf_counter() >= stop:
                    return
                await submit.unary_unary(game_pb2.SubmitCommandRequest(
                    game_id=created.game_id, command_id=f"c{command_no}", seat=seat,
                    hokm=command), None)
                served += 1

    async def loop(tag: str, duration: float) -> None:
        stop = time.perf_counter() + duration
        await asyncio.gather(*(play(number, stop, tag) for number in range(games)))

    try:
        await loop(uuid.uuid4().hex[:8], 1.0)
        served = 0
        before = _client_cpu()
        await loop(uuid.uuid4().hex[:8], seconds)
        return (_client_cpu() - before) / served * 1e6
    finally:
        store.close()


def run(games: int, seconds: float) -> dict[str, Any]:
    """Every figure of one run."""
    async def echo(address: str, duration: float) -> float:
        return await _run_echo(address, games, duration)

    async def commands(address: str, duration: float) -> float:
        rps, _, errors = await _run_game(address, games, duration)
        if errors:
            raise RuntimeError(f"{errors} commands failed")
        return rps

    figures: dict[str, Any] = {"games": games, "seconds": seconds}
    measured = {
        "echo": _over_grpc(_spawn(ECHO_SERVER, {}), echo, seconds),
        "stack": _over_grpc(_spawn(STACK_SERVER, {}), commands, seconds),
    }
    with tempfile.TemporaryDirectory() as data_dir:
        measured["embedded"] = _over_grpc(
            _game_server({"DAST_DATA_DIR": data_dir}), commands, seconds)
        measured["memory_store"] = _over_grpc(
            _game_server({"DAST_DATA_DIR": data_dir}, MEMORY_STORE_SERVER), commands, seconds)
    for name, values in measured.items():
        figures.update({f"{name}_{key}": value for key, value in values.items()})
    configure_logging("warning")
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    for name, count in (("lockstep", games), ("one", 1)):
        with tempfile.TemporaryDirectory() as data_dir:
            figures[f"in_process_us_{name}"] = round(
                asyncio.run(_in_process(count, seconds, data_dir)), 1)
    figures["embedded_vs_echo"] = round(figures["embedded_rps"] / figures["echo_rps"], 3)
    figures["stack_vs_echo"] = round(figures["stack_rps"] / figures["echo_rps"], 3)
    figures["memory_store_vs_echo"] = round(
        figures["memory_store_rps"] / figures["echo_rps"], 3)
    figures["predicted_vs_echo"] = round(
        figures["echo_us"] / (figures["stack_us"] + figures["in_process_us_one"]), 3)
    figures["ceiling_vs_echo"] = round(
        figures["echo_us"] / (figures["stack_us"] + figures["in_process_us_lockstep"]), 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--stack-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory-store-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stack_server:
        asyncio.run(_stack_server())
        return
    if args.memory_store_server:
        _memory_store_server()
        return
    result = run(args.games, args.seconds)
    print_figures(result, as_json=args.json, width=24)


if __name__ == "__main__":
    main()
