"""What a command costs on its way through a server, from gRPC's floor to PostgreSQL + NATS,
measured in one run on one machine (issue 30).

Every server is a process of its own, its CPU read from ``/proc/<pid>`` over a timed window;
the load comes from this process (the client), never from the server's:

- **Floors**, a bare ``grpc.aio`` server of raw bytes (no game, no interceptor):
  ``unary_echo_cpu_us`` (CPU per unary echo call), ``stream_echo_cpu_us`` (per message on
  an open bidirectional stream: one read and one write), and ``table4_floor_cpu_us`` (a
  table of four bidirectional seat streams: one read written to all four seats, per read);
  each with ``--floor-clients`` calls, streams or tables in flight, a closed loop.
- **Embedded** (``python -m services.compose``: SQLite, the in-process bus, receipts and
  seals on), ``--games`` 4-seat Hokm games in flight, every seat reading its own events:
  ``unary_cpu_us_per_command`` (each seat a ``Subscribe`` stream, commands by
  ``SubmitCommand``) and ``play_cpu_us_per_command`` (each seat a ``Play`` stream carrying
  its commands and events), the server's CPU per command, its fan-out to the four seats
  included (``*_loop_cpu_us_per_command``: its event loop's thread alone; the rest is the
  store's threads and gRPC's); ``unary_over_play`` (goal ≥ 1.5) and
  ``play_over_stream_echo`` (goal ≤ 5.0).
- **PostgreSQL + NATS** (``--database-url``, ``--nats-url``, in a schema and a stream of the
  run's own, ``bench/places.py``), four ``Play`` seats a game, the games offering a fixed
  rate together (open loop: each game its own schedule, spread over the interval), raised
  by 100 commands/s a step from ``--start-rate``, each step ``--step-seconds``:
  ``capacity_at_p99_20ms`` is the highest step whose every outcome arrived (no error) with
  p99 ≤ 20 ms, the game rate reached within 10 %; ``replica_cpu_us_per_command`` the
  replicas' CPU per command at ``--cpu-rate`` (a fixed offered load: comparable across
  versions), with ``writer_commands_per_transaction`` and ``relay_events_per_publish_batch``
  of the same step (the replicas' ``dast_store_batch_writes`` and
  ``dast_relay_batch_events``); the same with two replicas (``*_2_replicas``, each game on
  one of them, each replica pinned to a core).

``--quick`` shortens every window (a few seconds each, the sweep from 300/s in 5 s steps)
for ``make bench``; its figures are noisier than a full run's.

Usage: ``python bench/request_path.py --json [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.game_service import SIGNING_KEY, _reachable, _script, _setup
from bench.places import fresh_place
from bench.report import print_figures
from bench.scale import (
    _CLOCK_TICKS,
    CAPACITY_LIMITS,
    BatchMeter,
    CpuMeter,
    Server,
    _cpu_seconds,
    _game_server,
    _percentile,
    _raise_fd_limit,
    _spawn,
)
from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2
from services.compose import settle_collector
from services.platform.auth import Role
from tests.support.tokens import token as signed_token
from tests.support.tokens import token_environment

FLOOR: Final = "bench.Floor"
PAYLOAD: Final = game_pb2.PlayRequest(command=game_pb2.PlayCommand(
    command_id="c123", hokm=hokm_pb2.HokmCommand())).SerializeToString() * 4
"""About a command's bytes (the floors carry raw bytes, not messages)."""
UNLIMITED_CALLS: Final = {"DAST_LIMIT_CALLS_PER_SECOND": "1000000",
                          "DAST_LIMIT_CALL_BURST": "1000000"}
"""The per-caller call rate out of reach too: the bench's players act as fast as it asks."""
P99_GOAL_MS: Final = 20.0
Script = list[tuple[int, hokm_pb2.HokmCommand]]


# ---- the floor server ---------------------------------------------------------------


async def _floor_server() -> None:
    """The bare server of the floors, until killed."""
    tables: dict[bytes, list[asyncio.Queue[bytes]]] = {}

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    async def stream_echo(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        async for request in requests:
            yield request

    async def seat(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        # The first message names the table; every later one goes to all its seats.
        table = await anext(requests)
        seats = tables.setdefault(table, [])
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        seats.append(queue)

        async def relay() -> None:
            async for message in requests:
                for each in seats:
                    each.put_nowait(message)

        reader = asyncio.ensure_future(relay())
        try:
            while True:
                yield await queue.get()
        finally:
            reader.cancel()
            seats.remove(queue)

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(FLOOR, {
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Stream": grpc.stream_stream_rpc_method_handler(stream_echo),
        "Seat": grpc.stream_stream_rpc_method_handler(seat),
    }),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"floor listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


async def _timed(pid: int, warmup: float, seconds: float,
                 loops: Sequence[Callable[[Callable[[], bool]], Awaitable[int]]]) -> float:
    """Run ``loops`` (each counting what it did while timed) through ``warmup`` then
    ``seconds``; the server's CPU microseconds per thing counted."""
    settle_collector()
    window = {"timing": False}
    tasks = [asyncio.ensure_future(loop(lambda: window["timing"])) for loop in loops]
    try:
        await asyncio.sleep(warmup)
        before = _cpu_seconds([pid])[pid]
        window["timing"] = True
        await asyncio.sleep(seconds)
        window["timing"] = False
        spent = _cpu_seconds([pid])[pid] - before
    finally:
        for task in tasks:
            task.cancel()
        counts = await asyncio.gather(*tasks, return_exceptions=True)
    done = sum(count for count in counts if isinstance(count, int))
    errors = [count for count in counts if isinstance(count, BaseException)
              and not isinstance(count, asyncio.CancelledError)]
    if errors:
        raise RuntimeError(f"a client loop failed: {errors[0]!r}")
    return round(spent / done * 1e6, 1) if done else float("nan")


def _counting(step: Callable[[], Awaitable[int]]
              ) -> Callable[[Callable[[], bool]], Awaitable[int]]:
    """A loop repeating ``step`` until cancelled, counting what it did while timed."""

    async def loop(timing: Callable[[], bool]) -> int:
        count = 0
        try:
            while True:
                done = await step()
                if timing():
                    count += done
        except asyncio.CancelledError:
            return count

    return loop


async def _floors(server: Server, clients: int, warmup: float, seconds: float
                  ) -> dict[str, float]:
    channels = [grpc.aio.insecure_channel(server.address) for _ in range(8)]
    try:
        unary = [channels[n % 8].unary_unary(f"/{FLOOR}/Echo") for n in range(clients)]

        def echo_call(call: Any) -> Callable[[], Awaitable[int]]:
            async def step() -> int:
                await call(PAYLOAD)
                return 1
            return step

        unary_us = await _timed(server.pid, warmup, seconds,
                                [_counting(echo_call(call)) for call in unary])
        streams = [channels[n % 8].stream_stream(f"/{FLOOR}/Stream")() for n in range(clients)]

        def stream_step(call: Any) -> Callable[[], Awaitable[int]]:
            async def step() -> int:
                await call.write(PAYLOAD)
                await call.read()
                return 1
            return step

        stream_us = await _timed(server.pid, warmup, seconds,
                                 [_counting(stream_step(call)) for call in streams])
        for call in streams:
            call.cancel()
        tables = []
        for number in range(clients):
            seats = [channels[(number + s) % 8].stream_stream(f"/{FLOOR}/Seat")()
                     for s in range(4)]
            for call in seats:
                await call.write(f"table{number}".encode())
            tables.append(seats)
        await asyncio.sleep(0.5)  # every seat registered before the first read

        def table_step(seats: list[Any]) -> Callable[[], Awaitable[int]]:
            turn = iter(range(1 << 62))

            async def step() -> int:
                await seats[next(turn) % 4].write(PAYLOAD)
                await asyncio.gather(*(call.read() for call in seats))
                return 1
            return step

        table_us = await _timed(server.pid, warmup, seconds,
                                [_counting(table_step(seats)) for seats in tables])
        for seats in tables:
            for call in seats:
                call.cancel()
    finally:
        for channel in channels:
            await channel.close()
    return {"unary_echo_cpu_us": unary_us, "stream_echo_cpu_us": stream_us,
            "table4_floor_cpu_us": table_us}


# ---- games over the game service ----------------------------------------------------


def _bearer(player_id: str, role: Role = Role.PLAYER) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {signed_token(player_id, role)}"),)


@dataclass
class Outcomes:
    """What the games' commands came to: latencies (seconds) of those sent while recording."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    commands: int = 0
    recording: bool = False


class PlaySeat:
    """One seat's Play stream: commands sent, outcomes awaited by command id."""

    def __init__(self, stub: game_pb2_grpc.GameServiceStub, player_id: str, game_id: str,
                 after_seq: int) -> None:
        self._requests: asyncio.Queue[game_pb2.PlayRequest | None] = asyncio.Queue()
        self._requests.put_nowait(game_pb2.PlayRequest(
            open=game_pb2.PlayOpen(game_id=game_id, after_seq=after_seq)))
        self._waiting: dict[str, asyncio.Future[game_pb2.PlayOutcome]] = {}
        self.events = 0
        self._call = stub.Play(self._sent(), metadata=_bearer(player_id))
        self._reader = asyncio.ensure_future(self._read())

    async def _sent(self) -> Any:
        while (request := await self._requests.get()) is not None:
            yield request

    async def _read(self) -> None:
        async for message in self._call:
            if message.HasField("outcome"):
                waiting = self._waiting.pop(message.outcome.command_id, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(message.outcome)
            elif message.HasField("event"):
                self.events += 1

    async def command(self, command_id: str, body: hokm_pb2.HokmCommand) -> str | None:
        """Send a command and wait for its outcome; None if accepted, else why not."""
        outcome = asyncio.get_running_loop().create_future()
        self._waiting[command_id] = outcome
        self._requests.put_nowait(game_pb2.PlayRequest(
            command=game_pb2.PlayCommand(command_id=command_id, hokm=body)))
        done, _ = await asyncio.wait({outcome, self._reader}, timeout=30,
                                     return_when=asyncio.FIRST_COMPLETED)
        if outcome not in done:
            return "the stream ended" if self._reader.done() else "no outcome in 30 s"
        result: game_pb2.PlayOutcome = outcome.result()
        return None if result.status.code == 0 else result.status.message

    def close(self) -> None:
        self._requests.put_nowait(None)
        self._call.cancel()
        self._reader.cancel()


class SubscribeSeat:
    """One seat's Subscribe stream (events only) and its commands by SubmitCommand."""

    def __init__(self, stub: game_pb2_grpc.GameServiceStub, player_id: str, game_id: str,
                 after_seq: int) -> None:
        self._stub, self._game_id = stub, game_id
        self._metadata = _bearer(player_id)
        self.events = 0
        self._call = stub.Subscribe(game_pb2.SubscribeRequest(
            game_id=game_id, after_seq=after_seq), metadata=self._metadata)
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for _ in self._call:
            self.events += 1

    async def command(self, command_id: str, body: hokm_pb2.HokmCommand) -> str | None:
        try:
            await self._stub.SubmitCommand(game_pb2.SubmitCommandRequest(
                game_id=self._game_id, command_id=command_id, hokm=body),
                metadata=self._metadata, timeout=30)
        except grpc.aio.AioRpcError as error:
            return f"{error.code().name}: {error.details()}"
        return None

    def close(self) -> None:
        self._call.cancel()
        self._reader.cancel()


SeatKind = type[PlaySeat] | type[SubscribeSeat]


@dataclass
class Pace:
    """The offered rate of all games together (0: a closed loop, each game as fast as it can)."""

    rate: float = 0.0
    games: int = 1

    @property
    def interval(self) -> float:
        return self.games / self.rate if self.rate else 0.0


async def _game(stub: game_pb2_grpc.GameServiceStub, kind: SeatKind, number: int, tag: str,
                script: Script, pace: Pace, outcomes: Outcomes) -> None:
    """Play game ``number``'s script again and again (a new game each time), each seat on its
    own stream, until cancelled."""
    rules, seed, seated = _setup(number)
    admin = _bearer("bench", Role.ADMIN)
    if pace.interval:
        await asyncio.sleep(pace.interval * number / pace.games)
    next_at = time.perf_counter()
    for count in range(1 << 30):
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated, server_seed=seed,
            game_id=f"bench-{tag}-{number}-{count}"), metadata=admin)
        seats = [kind(stub, player.player_id, created.game_id, created.seq) for player in seated]
        try:
            for command_no, (seat, body) in enumerate(script):
                if pace.interval:
                    next_at = max(next_at + pace.interval, time.perf_counter() - pace.interval)
                    await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                recording = outcomes.recording
                started = time.perf_counter()
                problem = await seats[seat].command(f"c{command_no}", body)
                if problem is not None:
                    outcomes.errors.append(problem)
                    break
                if recording and outcomes.recording:
                    outcomes.latencies.append(time.perf_counter() - started)
                    outcomes.commands += 1
        finally:
            for each in seats:
                each.close()


@contextlib.asynccontextmanager
async def _games(servers: Sequence[Server], kind: SeatKind, games: int, pace: Pace,
                 outcomes: Outcomes) -> Any:
    """``games`` games in flight (game n on server n mod count) while the context is open."""
    channels = [grpc.aio.insecure_channel(server.address) for server in servers]
    stubs = [game_pb2_grpc.GameServiceStub(channel) for channel in channels]
    for stub in stubs:  # connected before timing
        await stub.GetSigningKey(game_pb2.GetSigningKeyRequest(),
                                 metadata=_bearer("bench", Role.ADMIN))
    tag = uuid.uuid4().hex[:10]
    settle_collector()
    tasks = [asyncio.ensure_future(_game(stubs[n % len(stubs)], kind, n, tag, _script(n),
                                         pace, outcomes)) for n in range(games)]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for channel in channels:
            await channel.close()


def _loop_thread_cpu(pid: int) -> float:
    """CPU seconds of a process's main thread (a server's event loop)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


async def _embedded_cpu(server: Server, kind: SeatKind, games: int, warmup: float,
                        seconds: float) -> tuple[float, float, int]:
    """The server's CPU microseconds per command at a closed loop, those of its event loop's
    thread alone (the rest: the store's writer and reads, gRPC's threads); errors."""
    outcomes = Outcomes()
    async with _games([server], kind, games, Pace(), outcomes):
        await asyncio.sleep(warmup)
        before = _cpu_seconds([server.pid])[server.pid]
        loop_before = _loop_thread_cpu(server.pid)
        outcomes.recording = True
        await asyncio.sleep(seconds)
        outcomes.recording = False
        spent = _cpu_seconds([server.pid])[server.pid] - before
        loop_spent = _loop_thread_cpu(server.pid) - loop_before
    if not outcomes.commands:
        return float("nan"), float("nan"), len(outcomes.errors)
    return (round(spent / outcomes.commands * 1e6, 1),
            round(loop_spent / outcomes.commands * 1e6, 1), len(outcomes.errors))


def _embedded_server(data_dir: str) -> Server:
    return _spawn(
        [sys.executable, "-m", "services.compose"],
        {"DAST_LISTEN": "127.0.0.1:0", **token_environment(["game"]),
         "DAST_LOG_LEVEL": "warning", "DAST_SIGNING_KEY": SIGNING_KEY,
         "DAST_SERVICES": "game", "DAST_DATA_DIR": data_dir, **CAPACITY_LIMITS,
         **UNLIMITED_CALLS},
    )


async def _embedded(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    # Alternating, so that what else the machine does touches both paths alike.
    unary: list[tuple[float, float]] = []
    play: list[tuple[float, float]] = []
    errors = 0
    for _ in range(args.rounds):
        for kind, into in ((SubscribeSeat, unary), (PlaySeat, play)):
            us, loop_us, failed = await _embedded_cpu(
                server, kind, args.games, args.warmup, args.seconds)
            into.append((us, loop_us))
            errors += failed
    figures["unary_cpu_us_per_command"], figures["unary_loop_cpu_us_per_command"] = min(unary)
    figures["play_cpu_us_per_command"], figures["play_loop_cpu_us_per_command"] = min(play)
    figures["embedded_errors"] = errors
    return figures


# ---- capacity on PostgreSQL + NATS --------------------------------------------------


@dataclass
class Step:
    rate: float
    commands_per_second: float
    p99_ms: float
    errors: int
    replica_cpu_us: float
    writes_per_transaction: float
    events_per_relay_pass: float

    @property
    def held(self) -> bool:
        return (not self.errors and self.p99_ms <= P99_GOAL_MS
                and self.commands_per_second >= 0.9 * self.rate)


async def _sweep(servers: Sequence[Server], database_url: str, args: argparse.Namespace
                 ) -> list[Step]:
    """Steps of offered rate from ``--start-rate`` up by 100 until one fails its p99."""
    pace = Pace(args.start_rate, args.pg_games)
    outcomes = Outcomes()
    steps: list[Step] = []
    async with _games(servers, PlaySeat, args.pg_games, pace, outcomes):
        await asyncio.sleep(args.warmup)
        while pace.rate <= args.max_rate:
            await asyncio.sleep(min(2.0, args.warmup))  # the new pace settles
            errors_before = len(outcomes.errors)
            outcomes.latencies.clear()
            outcomes.commands = 0
            cpu = CpuMeter([server.pid for server in servers], database_url)
            batches = BatchMeter(servers)
            cpu.start()
            batches.start()
            outcomes.recording = True
            started = time.perf_counter()
            await asyncio.sleep(args.step_seconds)
            outcomes.recording = False
            elapsed = time.perf_counter() - started
            cpu.stop()
            batches.stop()
            latencies = [latency * 1000 for latency in outcomes.latencies]
            step = Step(
                rate=pace.rate, commands_per_second=round(outcomes.commands / elapsed, 1),
                p99_ms=round(_percentile(latencies, 0.99), 2) if latencies else float("inf"),
                errors=len(outcomes.errors) - errors_before,
                replica_cpu_us=round(cpu.replicas / outcomes.commands * 1e6, 1)
                if outcomes.commands else float("nan"),
                writes_per_transaction=batches.writes_per_transaction,
                events_per_relay_pass=batches.events_per_relay_pass,
            )
            steps.append(step)
            if not step.held and pace.rate >= args.cpu_rate:
                break
            pace.rate += 100
    return steps


def _capacity(args: argparse.Namespace, replicas: int) -> dict[str, Any]:
    """The sweep on ``replicas`` replicas; run in a process of its own (the replicas are
    started before it holds any gRPC channel: a fork beside gRPC's threads can fail)."""
    suffix = "" if replicas == 1 else f"_{replicas}_replicas"
    cores = sorted(os.sched_getaffinity(0))
    pinned: list[int | None] = [None] if replicas == 1 else [
        cores[n % len(cores)] for n in range(replicas)]
    with fresh_place(args.database_url, args.nats_url) as place:
        servers = [_game_server(place, args.nats_url, cpu) for cpu in pinned]
        try:
            steps = asyncio.run(_sweep(servers, args.database_url, args))
        finally:
            for server in servers:
                server.stop()
    held = [step.rate for step in steps if step.held]
    at_cpu_rate = next((step for step in steps if step.rate == args.cpu_rate), steps[-1])
    return {
        f"capacity_at_p99_20ms{suffix}": max(held) if held else 0,
        f"replica_cpu_us_per_command{suffix}": at_cpu_rate.replica_cpu_us,
        f"cpu_rate{suffix}": at_cpu_rate.rate,
        f"writer_commands_per_transaction{suffix}": at_cpu_rate.writes_per_transaction,
        f"relay_events_per_publish_batch{suffix}": at_cpu_rate.events_per_relay_pass,
        f"steps{suffix}": [
            {"rate": step.rate, "rps": step.commands_per_second, "p99_ms": step.p99_ms,
             "errors": step.errors, "replica_cpu_us": step.replica_cpu_us}
            for step in steps
        ],
    }


# ---- the run ------------------------------------------------------------------------


async def _in_process(floor: Server, embedded: Server, args: argparse.Namespace
                      ) -> dict[str, Any]:
    """The floors and the embedded figures (one event loop: grpc.aio's poller outlives none)."""
    figures = await _floors(floor, args.floor_clients, args.warmup, args.seconds)
    figures.update(await _embedded(embedded, args))
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one bench run."""
    _raise_fd_limit()
    result: dict[str, Any] = {"quick": args.quick, "games": args.games,
                              "pg_games": args.pg_games, "cores": len(os.sched_getaffinity(0))}
    # Both servers start before this process opens a channel (see _capacity).
    with tempfile.TemporaryDirectory() as data_dir:
        floor = _spawn([sys.executable, __file__, "--floor-server"], {})
        try:
            embedded = _embedded_server(data_dir)
            try:
                result.update(asyncio.run(_in_process(floor, embedded, args)))
            finally:
                embedded.stop()
        finally:
            floor.stop()
    result["unary_over_play"] = round(
        result["unary_cpu_us_per_command"] / result["play_cpu_us_per_command"], 2)
    result["play_over_stream_echo"] = round(
        result["play_cpu_us_per_command"] / result["stream_echo_cpu_us"], 2)
    if args.skip_pg:
        return result
    if not (_reachable(args.database_url, 5432) and _reachable(args.nats_url, 4222)):
        raise SystemExit("bench/request_path.py needs PostgreSQL and NATS (or --skip-pg)")
    for replicas in (1, 2):
        sweep = subprocess.run(
            [sys.executable, __file__, *sys.argv[1:], "--capacity-replicas", str(replicas)],
            check=True, stdout=subprocess.PIPE, text=True,
        )
        result.update(json.loads(sweep.stdout.strip().splitlines()[-1]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true",
                        help="short windows and sweep (make bench): noisier figures")
    parser.add_argument("--games", type=int, default=32, help="embedded games in flight")
    parser.add_argument("--floor-clients", type=int, default=32,
                        help="calls, streams or tables in flight on the floor server")
    parser.add_argument("--seconds", type=float, default=10.0, help="each timed window")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2,
                        help="alternating embedded windows of each path (the lowest counts)")
    parser.add_argument("--pg-games", type=int, default=200,
                        help="games offering the rate on PostgreSQL + NATS")
    parser.add_argument("--start-rate", type=float, default=100.0)
    parser.add_argument("--max-rate", type=float, default=3000.0)
    parser.add_argument("--step-seconds", type=float, default=30.0)
    parser.add_argument("--cpu-rate", type=float, default=500.0,
                        help="the offered rate replica_cpu_us_per_command is read at")
    parser.add_argument("--skip-pg", action="store_true",
                        help="floors and embedded only (no PostgreSQL + NATS)")
    parser.add_argument("--database-url", default=os.environ.get(
        "DAST_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--nats-url", default=os.environ.get(
        "DAST_TEST_NATS_URL", "nats://127.0.0.1:4222"))
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--capacity-replicas", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_server:
        asyncio.run(_floor_server())
        return
    if args.quick:
        args.seconds, args.warmup, args.rounds = 4.0, 2.0, 1
        args.pg_games, args.start_rate, args.step_seconds = 100, 300.0, 5.0
    if args.capacity_replicas:
        _raise_fd_limit()
        os.environ.update(UNLIMITED_CALLS)  # the replicas' settings (bench.scale._game_server)
        print(json.dumps(_capacity(args, args.capacity_replicas)), flush=True)
        return
    result = run(args)
    print_figures(result, as_json=args.json, width=34)


if __name__ == "__main__":
    main()
