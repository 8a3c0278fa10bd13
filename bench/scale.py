"""One game process's capacity, and game replicas' scaling, on PostgreSQL + NATS (issue 9).

One run measures, every server in its own process and every client apart from them:

- **Streams on one process** (``open_streams``, ``kb_per_stream``, ``fanout_p99_ms``,
  ``open_refusals``): ``--stream-clients`` client processes open ``--streams`` idle
  ``Subscribe`` streams of one game at ``--open-rate`` a second over ``--connections``
  connections (each stream a spectator with its own token: a player may hold 32 streams);
  a client retries an open that is refused and counts the refusal. The server's resident
  memory grows by ``kb_per_stream`` per stream. Then ``--events`` commands are played in
  the game, and ``fanout_p99_ms`` is the p99, over every stream and event, of the time from
  sending the command to a stream receiving the event.
- **The bare baseline, in the same minutes** (``bare_kb_per_stream``,
  ``bare_fanout_p99_ms``): the same clients, streams and connections against a bare
  ``grpc.aio`` server whose stream only forwards a broadcast (a queue per stream, no auth,
  store or bus), the broadcast sent by a unary call. Clients decode the same
  ``SubscribeResponse`` message in both cases. Both servers' streams are held open at once
  (each server's memory measured while its own streams open), and the events take turns:
  one to the bare streams, ``--event-gap`` seconds later one to ours, and so on. Measured one
  after the other, the fan-out ratio moved between 1.09 and 1.68 on the same code, with the
  machine's state between the two phases; taking turns, a change in what else the machine
  does touches both alike.
- **Commands** (``rps_1_replica``, ``rps_2_replicas``): SubmitCommand round trips a second
  with ``--games`` games in flight (a closed loop), against one game replica pinned to
  core 0, then two pinned to cores 0 and 1, each game kept on one replica.
  ``scale_efficiency`` is commands per CPU-second of every process serving them (the
  replicas, every PostgreSQL process, nats-server: ``/proc/<pid>/stat``) with two replicas
  over the same with one: on two shared cores the raw ``scale_ratio`` is capped by the
  machine (the client, PostgreSQL and NATS share those cores), so what must hold is that a
  second replica costs no more CPU per command.
- **Latency at 1,000 commands/s** (``p50_ms_at_1000``, ``p99_ms_at_1000``): the games
  together offer ``--rate`` commands a second on fixed schedules (open loop) to one replica
  (not pinned: one replica per machine); ``*_2_replicas`` the same spread over the two
  pinned replicas. ``us_per_command_at_1000`` is the CPU each kind of process (the replica,
  PostgreSQL, nats-server) spent per command in the one-replica run: at a fixed offered load,
  unlike the closed loops' figures, it compares two versions of the code directly.
- **Batches** (``writer_commands_per_transaction_*``, ``relay_events_per_publish_batch_*``):
  the mean writes the replica's event store committed per transaction and events its relay
  published per pass, over the timed window of the closed loop on one replica (``_1``) and
  of the one-replica run at 1,000/s (``_at_1000``), from the replica's own Prometheus
  histograms (``dast_store_batch_writes``, ``dast_relay_batch_events``).

Every command run starts with ``--warmup`` seconds of the same play, untimed, so that what is
timed is a serving replica's, not a cold start's (its first connections to PostgreSQL and
NATS, statements prepared, code paths first taken), and the timed window continues the games
the warm-up started: a match lasts longer than a run of the default length, so no game is
created in it, as in a
server whose games start a few a second, not a hundred at once.

Each run keeps its data in a PostgreSQL schema and a JetStream stream of its own, dropped
when it ends (``bench/places.py``): figures do not depend on what earlier runs left.

Usage: ``python bench/scale.py --json [--streams 10000] [--connections 200]``
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import re
import resource
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.game_service import (
    SIGNING_KEY,
    Samples,
    _play,
    _reachable,
    _script,
    _setup,
)
from bench.places import Place, fresh_place
from bench.report import print_figures
from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, log_pb2
from services.compose import settle_collector
from services.platform.auth import Role
from tests.support.servers import free_port
from tests.support.tokens import token as signed_token
from tests.support.tokens import token_environment

ROOT = Path(__file__).resolve().parent.parent
BARE_SERVICE = "bench.Broadcast"
_LISTENING = re.compile(r"listening on ([\d.]+):(\d+)")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_OWN_CONNECTION: Final = [("grpc.use_local_subchannel_pool", 1)]
"""A channel with its own subchannel pool opens a connection of its own."""


# ---- processes ----------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[str]
    address: str
    metrics_port: int = 0
    """Its Prometheus endpoint's port (0: none)."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_kb(self) -> int:
        """The process's resident memory in kB (``VmRSS``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError(f"no VmRSS for pid {self.pid}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _spawn(args: list[str], env: dict[str, str], cpu: int | None = None) -> Server:
    """Start a server process (on core ``cpu`` only, if given); return once it listens.

    Its output is drained by a thread for as long as it runs, so it never blocks on a full pipe.
    """
    def pin() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})

    process = subprocess.Popen(
        args, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, preexec_fn=pin,
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        match = _LISTENING.search(line)
        if match:
            threading.Thread(
                target=collections.deque, args=(process.stdout, 0), daemon=True
            ).start()
            return Server(process, f"{match[1]}:{match[2]}")
    raise RuntimeError(f"{args} did not start: {''.join(seen[-20:])}")


APPLICATION_NAME: Final = f"dast-scale-{os.getpid()}"
"""The PostgreSQL ``application_name`` of the bench's replicas: tells their backends apart
from those of anything else using the server meanwhile."""


CAPACITY_LIMITS: Final = {
    "DAST_LIMIT_STREAMS_PER_PROCESS": "1000000", "DAST_LIMIT_SPECTATORS_PER_GAME": "1000000",
    "DAST_LIMIT_SPECTATOR_SHARE": "1", "DAST_LIMIT_ADDRESS_SHARE": "1",
    "DAST_LIMIT_CALLS_IN_FLIGHT": "1000000",
}
"""Settings of a replica measured for capacity: the process's stream, spectator and in-flight
budgets out of reach (every client here is one address, and the streams watch one match)."""


def _game_server(place: Place, nats_url: str, cpu: int | None = None) -> Server:
    database_url = place.database_url
    separator = "&" if "?" in database_url else "?"
    metrics_port = free_port()
    server = _spawn(
        [sys.executable, "-m", "services.compose"],
        {"DAST_LISTEN": "127.0.0.1:0", **token_environment(["game"]),
         "DAST_LOG_LEVEL": "warning",
         "DAST_SIGNING_KEY": SIGNING_KEY, "DAST_SERVICES": "game", **place.env(),
         "DAST_DATABASE_URL": f"{database_url}{separator}application_name={APPLICATION_NAME}",
         "DAST_NATS_URL": nats_url, "DAST_METRICS_PORT": str(metrics_port),
         **CAPACITY_LIMITS},
        cpu,
    )
    server.metrics_port = metrics_port
    return server


def _our_postgres_pids(database_url: str) -> list[int]:
    """PostgreSQL's own background processes and the backends serving the bench's replicas
    (not those of other clients of the same server)."""
    import psycopg

    url = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE application_name = %s OR backend_type <> 'client backend'",
            (APPLICATION_NAME,),
        ).fetchall()
    return [int(row[0]) for row in rows]


def _pids_named(*names: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in names:
                    pids.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile
    return pids


def _cpu_seconds(pids: Sequence[int]) -> dict[int, float]:
    """User + system CPU seconds of each live process (and of its reaped children)."""
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # After the command name: state is field 3; utime, stime, cutime, cstime 14-17.
        seconds[pid] = sum(int(value) for value in fields[11:15]) / _CLOCK_TICKS
    return seconds


class CpuMeter:
    """CPU seconds spent between :meth:`start` and :meth:`stop` by the replicas, PostgreSQL
    (its background processes and the replicas' backends) and nats-server (shared with
    whatever else uses it meanwhile: on a busy machine an over-estimate)."""

    def __init__(self, replica_pids: Sequence[int], database_url: str) -> None:
        self._replicas = list(replica_pids)
        self._database_url = database_url
        self._before: dict[int, float] = {}
        self.replicas = self.postgres = self.nats = 0.0

    def start(self) -> None:
        everyone = [*self._replicas, *_pids_named("postgres", "nats-server")]
        self._before = _cpu_seconds(everyone)

    def stop(self) -> None:
        postgres, nats = _our_postgres_pids(self._database_url), _pids_named("nats-server")

        def spent(pids: Sequence[int]) -> float:
            after = _cpu_seconds(pids)
            return sum(after[pid] - self._before.get(pid, 0.0) for pid in after)

        self.replicas, self.postgres, self.nats = (
            spent(self._replicas), spent(postgres), spent(nats)
        )

    @property
    def total(self) -> float:
        return self.replicas + self.postgres + self.nats


BATCH_HISTOGRAMS: Final = ("dast_store_batch_writes", "dast_relay_batch_events")
"""The replicas' batch sizes: writes per store transaction, events per relay pass."""


def _histogram_totals(port: int) -> dict[str, tuple[float, float]]:
    """``(sum, count)`` of every batch histogram a replica's ``/metrics`` shows."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        families = text_string_to_metric_families(reply.read().decode())
    totals = {name: (0.0, 0.0) for name in BATCH_HISTOGRAMS}
    for family in families:
        if family.name not in totals:
            continue
        values = {sample.name: sample.value for sample in family.samples}
        totals[family.name] = (values[f"{family.name}_sum"], values[f"{family.name}_count"])
    return totals


class BatchMeter:
    """The replicas' mean batch sizes between :meth:`start` and :meth:`stop` (their
    Prometheus histograms read before and after): ``writes_per_transaction`` of the event
    store's writer, ``events_per_relay_pass`` of the relay."""

    def __init__(self, servers: Sequence[Server]) -> None:
        self._ports = [server.metrics_port for server in servers]
        self._before: list[dict[str, tuple[float, float]]] = []
        self.writes_per_transaction = self.events_per_relay_pass = 0.0

    def start(self) -> None:
        self._before = [_histogram_totals(port) for port in self._ports]

    def stop(self) -> None:
        added = {name: [0.0, 0.0] for name in BATCH_HISTOGRAMS}
        for port, before in zip(self._ports, self._before, strict=True):
            for name, (total, count) in _histogram_totals(port).items():
                added[name][0] += total - before[name][0]
                added[name][1] += count - before[name][1]

        def mean(name: str) -> float:
            total, count = added[name]
            return round(total / count, 2) if count else 0.0

        self.writes_per_transaction = mean("dast_store_batch_writes")
        self.events_per_relay_pass = mean("dast_relay_batch_events")


def _raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# ---- the bare broadcast server ------------------------------------------------------


async def _bare_server() -> None:
    """A server stream that only forwards a broadcast: the baseline of this stack."""
    queues: set[asyncio.Queue[bytes]] = set()
    hello = game_pb2.SubscribeResponse(event=log_pb2.Event(seq=0)).SerializeToString()

    async def watch(request: bytes, context: grpc.aio.ServicerContext) -> Any:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        queues.add(queue)
        try:
            yield hello
            while True:
                yield await queue.get()
        finally:
            queues.discard(queue)

    async def send(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        for queue in queues:
            queue.put_nowait(request)
        return b""

    handler = grpc.method_handlers_generic_handler(BARE_SERVICE, {
        "Watch": grpc.unary_stream_rpc_method_handler(watch),
        "Send": grpc.unary_unary_rpc_method_handler(send),
    })
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"bare listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


# ---- stream clients (each its own process) ------------------------------------------


@dataclass
class StreamPlan:
    """What one stream-client process opens."""

    kind: str
    """``"bare"`` or ``"dast"``."""
    target: str
    streams: int
    connections: int
    open_rate: float
    first_index: int
    """Spectator numbers start here (each stream has its own identity)."""
    game_id: str = ""
    after_seq: int = 0
    service_token: bool = False
    """Open every stream with one service token (exempt from the per-player stream limit)
    instead of a spectator's own token per stream."""


async def _stream_client(plan: StreamPlan) -> None:
    """Open the plan's streams (retrying refused opens), say so on stdout, then record when
    each message arrives until told on stdin which id is the last, and print the arrivals."""
    channels = [
        grpc.aio.insecure_channel(plan.target, options=_OWN_CONNECTION)
        for _ in range(plan.connections)
    ]
    arrivals: dict[int, list[float]] = collections.defaultdict(list)
    opened = refusals = dropped = 0
    refused: collections.Counter[str] = collections.Counter()
    all_open = asyncio.Event()
    parse = game_pb2.SubscribeResponse.FromString
    service = signed_token("bench-streams", Role.SERVICE)

    def open_call(index: int) -> Any:
        channel = channels[index % len(channels)]
        if plan.kind == "bare":
            watch = channel.unary_stream(f"/{BARE_SERVICE}/Watch", response_deserializer=parse)
            return watch(b"")
        stub = game_pb2_grpc.GameServiceStub(channel)
        token = service if plan.service_token else signed_token(
            f"spectator-{plan.first_index + index}", Role.PLAYER
        )
        return stub.Subscribe(
            game_pb2.SubscribeRequest(game_id=plan.game_id, after_seq=plan.after_seq),
            metadata=(("authorization", f"Bearer {token}"),),
        )

    async def follow(index: int) -> None:
        nonlocal opened, refusals, dropped
        while True:
            is_open = False
            try:
                async for reply in open_call(index):
                    if is_open:
                        arrivals[reply.event.seq].append(time.time())
                        continue
                    is_open = True  # the first reply (the last stored event, or hello)
                    opened += 1
                    if opened == plan.streams:
                        all_open.set()
                dropped += 1  # the server ended an open stream
                return
            except grpc.aio.AioRpcError as error:
                if is_open:
                    dropped += 1
                    return
                refusals += 1
                refused[error.code().name] += 1
                await asyncio.sleep(random.uniform(0.2, 1.0))

    tasks = []
    started = time.perf_counter()
    for index in range(plan.streams):
        await asyncio.sleep(max(0.0, started + index / plan.open_rate - time.perf_counter()))
        tasks.append(asyncio.create_task(follow(index)))
    await asyncio.wait_for(all_open.wait(), timeout=plan.streams / plan.open_rate + 120)
    print(json.dumps({"opened": opened, "refusals": refusals, "refused": refused}), flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    last = int(line)
    deadline = time.monotonic() + 60
    while len(arrivals[last]) < plan.streams and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    print(json.dumps({"arrivals": arrivals, "refusals": refusals, "dropped": dropped}),
          flush=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for channel in channels:
        await channel.close()


def _start_clients(
    kind: str, target: str, streams: int, connections: int, clients: int, open_rate: float,
    game_id: str = "", after_seq: int = 0,
) -> list[subprocess.Popen[str]]:
    processes = []
    for number in range(clients):
        share = streams // clients + (number < streams % clients)
        plan = StreamPlan(
            kind, target, share, connections // clients, open_rate / clients,
            first_index=number * streams, game_id=game_id, after_seq=after_seq,
        )
        processes.append(subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--stream-client",
             json.dumps(plan.__dict__)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        ))
    return processes


def _read_json(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"stream client {process.pid} ended early (exit {process.wait()})")
    reply: dict[str, Any] = json.loads(line)
    return reply


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


@dataclass
class StreamFigures:
    open_streams: int
    refusals: int
    refused: dict[str, int]
    """Refused opens by status code (before all were open)."""
    kb_per_stream: float
    fanout_p50_ms: float
    fanout_p99_ms: float
    missing: int
    """Stream × event deliveries that never arrived (0 when every stream got every event)."""


Send = Callable[[int], tuple[float, int, int]]
"""Sends event ``number``; returns when it was sent, the id streams see, the last id it made."""


@dataclass
class HeldStreams:
    """Streams of one server, held open by client processes, and the events sent to them."""

    server: Server
    send: Send
    processes: list[subprocess.Popen[str]]
    opened: list[dict[str, Any]]
    """Each client's report once all its streams were open."""
    kb_held: int
    """The server's resident memory growth while the streams opened."""
    sent: dict[int, float] = field(default_factory=dict)
    last: int = 0

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


def _open_streams(
    server: Server, kind: str, args: argparse.Namespace, send: Send,
    game_id: str = "", after_seq: int = 0,
) -> HeldStreams:
    """Open ``args.streams`` streams on ``server`` and measure the memory they hold."""
    time.sleep(0.5)
    baseline = server.rss_kb()
    processes = _start_clients(
        kind, server.address, args.streams, args.connections, args.stream_clients,
        args.open_rate, game_id, after_seq,
    )
    held = HeldStreams(server, send, processes, opened=[], kb_held=0)
    try:
        held.opened = [_read_json(process) for process in processes]
        time.sleep(1.0)
        held.kb_held = server.rss_kb() - baseline
    except BaseException:
        held.close()
        raise
    return held


def _fan_out(held: Sequence[HeldStreams], events: int, gap: float) -> None:
    """Send ``events`` events to each server's streams, taking turns (and turns about who goes
    first), ``gap`` seconds apart: the baseline and ours are timed in the same minutes, so a
    change in what else the machine is doing meanwhile touches both alike."""
    for number in range(events):
        for streams in (held if number % 2 == 0 else list(reversed(held))):
            at, seen_id, streams.last = streams.send(number)
            streams.sent[seen_id] = at
            time.sleep(gap)


def _stream_report(held: HeldStreams) -> StreamFigures:
    """Tell the clients the last id sent, and reduce what they saw (the caller ends them)."""
    for process in held.processes:
        assert process.stdin is not None
        process.stdin.write(f"{held.last}\n")
        process.stdin.flush()
    reports = [_read_json(process) for process in held.processes]
    open_streams = sum(report["opened"] for report in held.opened)
    refused: collections.Counter[str] = collections.Counter()
    for report in held.opened:
        refused.update(report["refused"])
    latencies: list[float] = []
    received = 0
    for report in reports:
        for seen_id, times in report["arrivals"].items():
            if int(seen_id) in held.sent:
                latencies.extend((arrived - held.sent[int(seen_id)]) * 1000 for arrived in times)
                received += len(times)
    return StreamFigures(
        open_streams=open_streams,
        refusals=sum(report["refusals"] for report in reports),
        refused=dict(refused),
        kb_per_stream=round(held.kb_held / max(open_streams, 1), 2),
        fanout_p50_ms=round(_percentile(latencies, 0.50), 1),
        fanout_p99_ms=round(_percentile(latencies, 0.99), 1),
        missing=open_streams * len(held.sent) - received,
    )


def _bare_broadcast(server: Server, stack: contextlib.ExitStack) -> Send:
    channel = stack.enter_context(grpc.insecure_channel(server.address))
    broadcast = channel.unary_unary(f"/{BARE_SERVICE}/Send")

    def send(number: int) -> tuple[float, int, int]:
        message = game_pb2.SubscribeResponse(
            event=log_pb2.Event(seq=number + 1, at_ms=int(time.time() * 1000)),
            hash=bytes(32),
        )
        at = time.time()
        broadcast(message.SerializeToString())
        return at, number + 1, number + 1

    return send


def _dast_game(server: Server, stack: contextlib.ExitStack) -> tuple[Send, str, int]:
    """A new game on ``server``, a way to play its next command, its id and head seq."""
    admin = (("authorization", f"Bearer {signed_token('bench', Role.ADMIN)}"),)
    channel = stack.enter_context(grpc.insecure_channel(server.address))
    stub = game_pb2_grpc.GameServiceStub(channel)
    rules, seed, seated = _setup(0)
    created = stub.CreateGame(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated,
        server_seed=seed, game_id=f"scale-{uuid.uuid4().hex[:12]}",
    ), metadata=admin)
    script = _script(0)

    def send(number: int) -> tuple[float, int, int]:
        seat, command = script[number]
        at = time.time()
        reply = stub.SubmitCommand(game_pb2.SubmitCommandRequest(
            game_id=created.game_id, command_id=f"c{number}", seat=seat, hokm=command,
        ), metadata=admin)
        return at, reply.events[0].seq, reply.seq

    return send, created.game_id, created.seq


def _both_streams(args: argparse.Namespace) -> tuple[StreamFigures, StreamFigures]:
    """The bare server's streams and ours, held at the same time, their events interleaved."""
    with contextlib.ExitStack() as stack:
        bare_server = _spawn([sys.executable, str(Path(__file__).resolve()), "--bare-server"], {})
        stack.callback(bare_server.stop)
        dast_server = _game_server(args.place, args.nats_url)
        stack.callback(dast_server.stop)
        send_dast, game_id, head = _dast_game(dast_server, stack)
        bare = _open_streams(bare_server, "bare", args, _bare_broadcast(bare_server, stack))
        stack.callback(bare.close)
        # Each stream starts at the last stored event: its first reply says it is open.
        ours = _open_streams(dast_server, "dast", args, send_dast, game_id, after_seq=head - 1)
        stack.callback(ours.close)
        _fan_out([bare, ours], args.events, args.event_gap)
        return _stream_report(bare), _stream_report(ours)


# ---- commands -----------------------------------------------------------------------


@dataclass
class CommandFigures:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu: CpuMeter
    batches: BatchMeter


async def _drive(
    servers: Sequence[Server], games: int, seconds: float, interval: float,
    scripts: Sequence[Any], meters: Sequence[CpuMeter | BatchMeter], warmup: float = 0.0,
) -> tuple[Samples, float]:
    """Play ``games`` games (game n on replica n mod count) for ``seconds``; the CPU meter
    runs exactly while they play. ``warmup`` seconds of the same play come first, untimed:
    the replicas' connections, prepared statements and caches are then warm, as a serving
    replica's are, and the timed calls continue the games already under way. (Started anew,
    all the games' creations and first commands would come at once, in the first interval:
    a burst the stated rate does not contain, which alone made the p99.)"""
    metadata = (("authorization", f"Bearer {signed_token('bench', Role.ADMIN)}"),)
    channels = [grpc.aio.insecure_channel(server.address) for server in servers]
    try:
        stubs = [game_pb2_grpc.GameServiceStub(channel) for channel in channels]
        for stub in stubs:  # connected before timing
            await stub.GetSigningKey(game_pb2.GetSigningKeyRequest(), metadata=metadata)

        tag = uuid.uuid4().hex[:12]  # games of their own
        settle_collector()  # as the servers do: no full collection inside the timed window
        samples = Samples(since=time.perf_counter() + warmup)
        play = asyncio.ensure_future(asyncio.gather(*(
            _play(stubs[n % len(stubs)], metadata, n, samples.since + seconds, samples,
                  interval, tag, games, scripts[n])
            for n in range(games)
        )))
        try:
            await asyncio.sleep(max(0.0, samples.since - time.perf_counter()))
            for meter in meters:
                meter.start()
            started = time.perf_counter()
            await play
            elapsed = time.perf_counter() - started
            for meter in meters:
                meter.stop()
        finally:
            play.cancel()
        return samples, elapsed
    finally:
        for channel in channels:
            await channel.close()


def _commands(
    args: argparse.Namespace, cpus: Sequence[int | None], scripts: Sequence[Any],
    rate: float | None = None,
) -> CommandFigures:
    servers = [_game_server(args.place, args.nats_url, cpu) for cpu in cpus]
    try:
        meter = CpuMeter([server.pid for server in servers], args.database_url)
        batches = BatchMeter(servers)
        interval = args.games / rate if rate else 0.0
        samples, elapsed = asyncio.run(_drive(
            servers, args.games, args.seconds, interval, scripts, [meter, batches], args.warmup
        ))
    finally:
        for server in servers:
            server.stop()
    latencies = [latency * 1000 for latency in samples.latencies]
    return CommandFigures(
        rps=round(len(latencies) / elapsed, 1),
        p50_ms=round(_percentile(latencies, 0.50), 2),
        p99_ms=round(_percentile(latencies, 0.99), 2),
        errors=samples.errors,
        cpu=meter,
        batches=batches,
    )


def _cpu_per_command(figures: CommandFigures, seconds: float) -> dict[str, float]:
    """CPU microseconds per command of each kind of process (the paced runs: the same
    offered load whatever the code, so these compare across versions)."""
    commands = figures.rps * seconds
    return {"replica": round(figures.cpu.replicas / commands * 1e6, 1),
            "postgres": round(figures.cpu.postgres / commands * 1e6, 1),
            "nats": round(figures.cpu.nats / commands * 1e6, 1)}


def _per_cpu_second(figures: CommandFigures, seconds: float) -> float:
    return figures.rps * seconds / figures.cpu.total if figures.cpu.total else float("nan")


# ---- the run ------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one bench run."""
    if not (_reachable(args.database_url, 5432) and _reachable(args.nats_url, 4222)):
        raise SystemExit("bench/scale.py needs PostgreSQL and NATS (--database-url, --nats-url)")
    _raise_fd_limit()
    cores = sorted(os.sched_getaffinity(0))
    result: dict[str, Any] = {
        "streams": args.streams, "connections": args.connections,
        "stream_clients": args.stream_clients, "open_rate": args.open_rate,
        "events": args.events, "games": args.games, "seconds": args.seconds,
        "rate": args.rate, "cores": len(cores),
    }
    with fresh_place(args.database_url, args.nats_url) as place:
        args.place = place
        if args.only in (None, "streams"):
            result.update(_stream_figures(args))
        if args.only in (None, "commands"):
            result.update(_command_figures(args, [cores[0], cores[1 % len(cores)]]))
    return result


def _stream_figures(args: argparse.Namespace) -> dict[str, Any]:
    bare, ours = _both_streams(args)
    return dict(
        open_streams=ours.open_streams,
        open_refusals=ours.refusals,
        open_refusals_by_code=ours.refused,
        kb_per_stream=ours.kb_per_stream,
        bare_kb_per_stream=bare.kb_per_stream,
        kb_ratio=round(ours.kb_per_stream / bare.kb_per_stream, 3),
        fanout_p50_ms=ours.fanout_p50_ms,
        fanout_p99_ms=ours.fanout_p99_ms,
        bare_fanout_p50_ms=bare.fanout_p50_ms,
        bare_fanout_p99_ms=bare.fanout_p99_ms,
        fanout_ratio=round(ours.fanout_p99_ms / bare.fanout_p99_ms, 3),
        fanout_missing=ours.missing,
        bare_open_streams=bare.open_streams,
        bare_open_refusals=bare.refusals,
        bare_fanout_missing=bare.missing,
    )


def _command_figures(args: argparse.Namespace, pinned: list[int]) -> dict[str, Any]:
    scripts = [_script(number) for number in range(args.games)]
    one = _commands(args, pinned[:1], scripts)
    two = _commands(args, pinned, scripts)
    paced = _commands(args, [None], scripts, rate=args.rate)
    paced_two = _commands(args, pinned, scripts, rate=args.rate)
    efficiency_one = _per_cpu_second(one, args.seconds)
    efficiency_two = _per_cpu_second(two, args.seconds)
    return dict(
        rps_1_replica=one.rps,
        rps_2_replicas=two.rps,
        scale_ratio=round(two.rps / one.rps, 3),
        commands_per_cpu_second_1=round(efficiency_one, 1),
        commands_per_cpu_second_2=round(efficiency_two, 1),
        scale_efficiency=round(efficiency_two / efficiency_one, 3),
        cpu_seconds_1={"replicas": round(one.cpu.replicas, 2),
                       "postgres": round(one.cpu.postgres, 2), "nats": round(one.cpu.nats, 2)},
        cpu_seconds_2={"replicas": round(two.cpu.replicas, 2),
                       "postgres": round(two.cpu.postgres, 2), "nats": round(two.cpu.nats, 2)},
        p50_ms_at_1000=paced.p50_ms,
        p99_ms_at_1000=paced.p99_ms,
        paced_rps=paced.rps,
        us_per_command_at_1000=_cpu_per_command(paced, args.seconds),
        p50_ms_at_1000_2_replicas=paced_two.p50_ms,
        p99_ms_at_1000_2_replicas=paced_two.p99_ms,
        paced_rps_2_replicas=paced_two.rps,
        writer_commands_per_transaction_1=one.batches.writes_per_transaction,
        relay_events_per_publish_batch_1=one.batches.events_per_relay_pass,
        writer_commands_per_transaction_at_1000=paced.batches.writes_per_transaction,
        relay_events_per_publish_batch_at_1000=paced.batches.events_per_relay_pass,
        command_errors=one.errors + two.errors + paced.errors + paced_two.errors,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--stream-clients", type=int, default=4,
                        help="client processes sharing the streams and connections")
    parser.add_argument("--open-rate", type=float, default=500.0, help="stream opens a second")
    parser.add_argument("--events", type=int, default=8,
                        help="events fanned out to each server's streams")
    parser.add_argument("--event-gap", type=float, default=1.5,
                        help="seconds between the events fanned out")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="seconds of untimed play before each timed command run")
    parser.add_argument("--rate", type=float, default=1000.0,
                        help="commands/s offered for p50/p99_ms_at_1000")
    parser.add_argument("--database-url", default=os.environ.get(
        "DAST_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--nats-url", default=os.environ.get(
        "DAST_TEST_NATS_URL", "nats://127.0.0.1:4222"))
    parser.add_argument("--only", choices=("streams", "commands"),
                        help="measure only the streams or only the commands")
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stream-client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        _raise_fd_limit()
        asyncio.run(_bare_server())
        return
    if args.stream_client:
        _raise_fd_limit()
        asyncio.run(_stream_client(StreamPlan(**json.loads(args.stream_client))))
        return
    result = run(args)
    print_figures(result, as_json=args.json, width=28)


if __name__ == "__main__":
    main()
