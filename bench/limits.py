"""What a stream costs one server process, and a spectator flood against the default limits.

Two servers, each ``python -m services.compose`` in its own process on 127.0.0.1 (the
embedded backend: SQLite under a temporary directory, the in-process bus), measured from
``/proc/<pid>``:

- **The cost of a stream** (``stream_kb``, ``fanout_us_per_stream_event``,
  ``open_cpu_ms``): the game service alone, every stream and spectator limit lifted. One
  client opens ``--cost-streams`` spectator streams (each player its own token) on
  ``--cost-games`` matches over 64 connections, starting at each match's last event, and
  reads them. ``stream_kb`` is the server's resident memory growth over them (after 100
  streams already open, so one-time allocations are not counted); ``open_cpu_ms`` the
  server's CPU per open. Then ``--cost-events`` commands are played in each match, and
  ``fanout_us_per_stream_event`` is the server's CPU per stream and event: the CPU of those
  commands with the streams open, less that of as many commands with none, over
  (events × streams).
- **The flood** (``victim_p95_ratio``, ``process_rss_growth_mb``, ``opened_streams``,
  ``refused_streams`` by reason): every service, with the default ``DAST_LIMIT_*`` settings
  except the sign-in limit per address, raised so that ``--guests`` guests sign in within
  seconds instead of 4 minutes (the stream limits are under test, not the sign-in one). A
  host plays a live match with three bots at a person's pace raised tenfold; a victim plays
  another match the same way, timing each of its GetView and SubmitCommand calls. After
  ``--idle`` seconds of that (the idle p95), a client process signs in ``--guests`` guests
  from one address, each opening ``--streams-per-guest`` spectator streams of the host's
  match from its first event (reading them), and holds them for ``--hold`` seconds.
  ``victim_p95_ratio`` is the victim's p95 under the flood over its idle p95;
  ``process_rss_growth_mb`` the server's highest resident memory during the flood less
  its memory just before.

The clients are all on 127.0.0.1; the flood's server trusts that address as a proxy
(``DAST_TRUSTED_PROXIES=127.0.0.1/32``) and each client names its own address in
``x-forwarded-for``, so that the attacker, the host and the victim are three addresses, as
they would be on the internet.

Usage: ``python bench/limits.py --json [--guests 240] [--streams-per-guest 32]``
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.game_service import _script, _setup
from bench.scale import CAPACITY_LIMITS, Server, _cpu_seconds, _raise_fd_limit, _spawn
from dast.v1 import (
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
)
from services.bot.policies import SeatView, decide
from services.compose import KNOWN_SERVICES, settle_collector
from services.platform.auth import Role
from services.platform.errors import reason_of, retry_after_of
from tests.support.tokens import token as signed_token
from tests.support.tokens import token_environment

ROOT: Final = Path(__file__).resolve().parent.parent
ATTACKER: Final = "203.0.113.7"
HOST: Final = "198.51.100.30"
VICTIM: Final = "198.51.100.20"
_OWN_CONNECTION: Final = [("grpc.use_local_subchannel_pool", 1)]
HOST_PACE: Final = 0.3
VICTIM_PACE: Final = 0.1
"""Seconds between the host's and the victim's round trips: a person's pace raised tenfold
(the victim's GetView every 0.1 s, its move when its turn comes)."""
ATTEMPTS: Final = 5
"""How often the flood's client tries each sign-in (waiting as RetryInfo says); a refused
stream is not tried again."""
HOKM: Final = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=10,
                                      spectators_allowed=True)


def _cores() -> tuple[int | None, set[int] | None]:
    """The core the server runs on and those of the clients (None: not pinned, on a
    one-core machine): apart, so that the flood's client does not take the server's CPU
    and what the victim measures is the server's doing."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, None
    return cores[0], set(cores[1:])


def _server(data_dir: str, env: dict[str, str]) -> Server:
    server_core, client_cores = _cores()
    if client_cores is not None:
        os.sched_setaffinity(0, client_cores)  # this process and the flood's client
    return _spawn(
        [sys.executable, "-m", "services.compose"],
        # the flood's guests sign in with the lobby's retired device sign-in (the figures
        # are the lobby's and the game service's limits, measured as before)
        {"DAST_LISTEN": "127.0.0.1:0", "DAST_LOG_LEVEL": "error", "DAST_DATA_DIR": data_dir,
         "DAST_LOBBY_DEVICE_SIGN_IN": "1",
         **token_environment(env.get("DAST_SERVICES", ",".join(KNOWN_SERVICES)).split(",")),
         **env},
        server_core,
    )


def _cpu(server: Server) -> float:
    return _cpu_seconds([server.pid])[server.pid]


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _auth(token: str, address: str | None = None) -> tuple[tuple[str, str], ...]:
    pairs = [("authorization", f"Bearer {token}")]
    if address is not None:
        pairs.append(("x-forwarded-for", address))
    return tuple(pairs)


# ---- the cost of a stream -------------------------------------------------------------


@dataclass
class Streams:
    """Spectator streams one client holds, each read by a task of its own."""

    channels: list[grpc.aio.Channel]
    received: collections.Counter[int] = field(default_factory=collections.Counter)
    """Events received, by stream number."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def open(self, game_ids: Sequence[str], heads: Sequence[int], count: int,
                   first: int) -> None:
        """Open ``count`` streams spread over the games; return once each has its first
        reply (the game's last stored event)."""
        opened = [asyncio.get_running_loop().create_future() for _ in range(count)]

        async def follow(number: int, ready: asyncio.Future[None]) -> None:
            game = number % len(game_ids)
            stub = game_pb2_grpc.GameServiceStub(self.channels[number % len(self.channels)])
            token = signed_token(f"spectator-{number}", Role.PLAYER)
            call = stub.Subscribe(game_pb2.SubscribeRequest(
                game_id=game_ids[game], after_seq=heads[game] - 1), metadata=_auth(token))
            async for _ in call:
                if not ready.done():
                    ready.set_result(None)
                else:
                    self.received[number] += 1

        for index in range(count):
            self.tasks.append(asyncio.create_task(follow(first + index, opened[index])))
        await asyncio.wait_for(asyncio.gather(*opened), timeout=300)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _play_commands(
    stub: game_pb2_grpc.GameServiceStub, admin: Any, games: Sequence[tuple[str, list[Any]]],
    start: int, count: int,
) -> None:
    """Play commands ``start``..``start + count`` of each game's script, the games in turn."""
    for index in range(start, start + count):
        for game_id, script in games:
            seat, command = script[index]
            await stub.SubmitCommand(game_pb2.SubmitCommandRequest(
                game_id=game_id, command_id=f"c{index}", seat=seat, hokm=command,
            ), metadata=admin)


async def _stream_cost(address: str, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    channels = [grpc.aio.insecure_channel(address, options=_OWN_CONNECTION) for _ in range(64)]
    stub = game_pb2_grpc.GameServiceStub(channels[0])
    admin = _auth(signed_token("bench-admin", Role.ADMIN))
    games: list[tuple[str, list[Any]]] = []
    for number in range(args.cost_games):
        rules, seed, seated = _setup(number)
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated, server_seed=seed,
            game_id=f"cost-{number}"), metadata=admin)
        games.append((created.game_id, _script(number)))
    events = args.cost_events
    # Commands with no stream open: the CPU the commands cost by themselves.
    await _play_commands(stub, admin, games, 0, 4)  # warm up
    before = _cpu(server)
    await _play_commands(stub, admin, games, 4, events)
    alone = _cpu(server) - before
    heads = [(await stub.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                 metadata=admin)).seq for game_id, _ in games]
    streams = Streams(channels)
    settle_collector()
    await streams.open([game_id for game_id, _ in games], heads, 100, 0)
    await asyncio.sleep(1.0)
    rss_before, cpu_before = server.rss_kb(), _cpu(server)
    count = args.cost_streams
    await streams.open([game_id for game_id, _ in games], heads, count, 100)
    open_cpu = _cpu(server) - cpu_before
    await asyncio.sleep(1.0)
    rss_after = server.rss_kb()
    # The same number of commands with the streams open: each event reaches every stream of
    # its game.
    total = count + 100
    cpu_before = _cpu(server)
    await _play_commands(stub, admin, games, 4 + events, events)
    # Until every stream has every event: no stream has received anything for a second.
    seen, deadline = -1, time.monotonic() + 120
    while sum(streams.received.values()) != seen and time.monotonic() < deadline:
        seen = sum(streams.received.values())
        await asyncio.sleep(1.0)
    with_streams = _cpu(server) - cpu_before
    delivered = sum(streams.received.values())
    await streams.close()
    for channel in channels:
        await channel.close()
    return {
        "stream_kb": round((rss_after - rss_before) / count, 1),
        "open_cpu_ms": round(open_cpu / count * 1000, 3),
        "fanout_us_per_stream_event": round(
            max(0.0, with_streams - alone) / max(delivered, 1) * 1e6, 1),
        "cost_streams": total, "cost_events_delivered": delivered,
    }


# ---- the flood ------------------------------------------------------------------------


@dataclass
class Player:
    """A signed-in guest at its own address."""

    lobby: lobby_pb2_grpc.LobbyServiceStub
    game: game_pb2_grpc.GameServiceStub
    metadata: tuple[tuple[str, str], ...]

    @classmethod
    async def sign_in(cls, channel: grpc.aio.Channel, device: str, address: str) -> Player:
        lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
        reply = await lobby.SignInGuest(lobby_pb2.SignInGuestRequest(device_id=device),
                                        metadata=(("x-forwarded-for", address),))
        return cls(lobby, game_pb2_grpc.GameServiceStub(channel), _auth(reply.token, address))

    async def table_with_bots(self) -> str:
        table = (await self.lobby.CreateTable(lobby_pb2.CreateTableRequest(settings=HOKM),
                                              metadata=self.metadata)).table
        started = await self.lobby.StartGame(
            lobby_pb2.StartGameRequest(table_id=table.table_id), metadata=self.metadata)
        return str(started.table.game_id)

    async def move(self, game_id: str, latencies: list[float] | None) -> bool:
        """GetView, and the move when it is this seat's turn (each timed); False once the
        match is over."""
        started = time.perf_counter()
        reply = await self.game.GetView(game_pb2.GetViewRequest(game_id=game_id),
                                        metadata=self.metadata, timeout=30)
        if latencies is not None:
            latencies.append(time.perf_counter() - started)
        seat_view = SeatView.of(reply)
        if seat_view.is_over:
            return False
        if seat_view.turn != seat_view.view.seat or not seat_view.view.legal:
            return True
        request = game_pb2.SubmitCommandRequest(
            game_id=game_id, command_id=f"move-{seat_view.seq}", expected_seq=seat_view.seq)
        getattr(request, seat_view.game).CopyFrom(decide(seat_view, "basic", game_id))
        started = time.perf_counter()
        with contextlib.suppress(grpc.aio.AioRpcError):  # a lost race: the next view tells
            await self.game.SubmitCommand(request, metadata=self.metadata, timeout=30)
        if latencies is not None:
            latencies.append(time.perf_counter() - started)
        return True


async def _keep_playing(player: Player, game_id: str, pace: float,
                        latencies: list[float] | None) -> None:
    """Play ``game_id``'s seat at ``pace`` seconds between round trips; a new match with
    bots when it ends."""
    while True:
        if not await player.move(game_id, latencies):
            game_id = await player.table_with_bots()
        await asyncio.sleep(pace)


async def _retry_after(error: grpc.aio.AioRpcError) -> None:
    """Wait as the refusal's RetryInfo says (a client that follows the guide); a refusal
    that says nothing of retrying is retried at once."""
    delay = retry_after_of(error)
    if delay is not None and delay < 60:
        await asyncio.sleep(delay)


async def _attacker(address: str, game_id: str, guests: int, streams: int) -> None:
    """The flood's client, told on stdin when to go on: sign in ``guests`` guests from
    ``ATTACKER`` and report; on ``open``, each opens ``streams`` spectator streams of
    ``game_id`` (read until the end), and report; on ``stop``, report and end."""
    _raise_fd_limit()
    channels = [grpc.aio.insecure_channel(address, options=_OWN_CONNECTION)
                for _ in range(16)]
    loop = asyncio.get_running_loop()
    opened = dropped = 0
    refused: collections.Counter[str] = collections.Counter()
    readers: list[asyncio.Task[None]] = []

    async def read(call: Any) -> None:
        nonlocal dropped
        with contextlib.suppress(grpc.aio.AioRpcError):
            async for _ in call:
                pass
        dropped += 1

    async def open_one(player: Player) -> None:
        nonlocal opened
        call = player.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                     metadata=player.metadata)
        try:
            await call.read()
        except grpc.aio.AioRpcError as error:
            refused[reason_of(error) or error.code().name] += 1
            return
        opened += 1
        readers.append(asyncio.create_task(read(call)))

    async def sign_in(number: int, at_once: asyncio.Semaphore) -> Player | None:
        async with at_once:
            for _ in range(ATTEMPTS):
                try:
                    return await Player.sign_in(channels[number % len(channels)],
                                                f"flood-device-{number:05d}", ATTACKER)
                except grpc.aio.AioRpcError as error:
                    refused[f"sign_in:{reason_of(error) or error.code().name}"] += 1
                    await _retry_after(error)
            return None

    async def flood(player: Player, at_once: asyncio.Semaphore) -> None:
        async with at_once:
            await asyncio.gather(*(open_one(player) for _ in range(streams)))

    def report(**figures: Any) -> None:
        print(json.dumps(figures), flush=True)

    async def told() -> str:
        return str(await loop.run_in_executor(None, sys.stdin.readline)).strip()

    started = time.perf_counter()
    at_once = asyncio.Semaphore(8)
    players = [player for player in await asyncio.gather(
        *(sign_in(number, at_once) for number in range(guests))) if player is not None]
    report(signed_in=len(players), refused=refused,
           seconds=round(time.perf_counter() - started, 1))
    if await told() == "open":
        refused.clear()
        started = time.perf_counter()
        at_once = asyncio.Semaphore(32)
        await asyncio.gather(*(flood(player, at_once) for player in players))
        report(opened=opened, refused=refused, seconds=round(time.perf_counter() - started, 1))
        await told()
    report(dropped_while_held=dropped)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    for channel in channels:
        await channel.close()


@contextlib.asynccontextmanager
async def _playing(address: str) -> AsyncIterator[tuple[str, list[float]]]:
    """The host's live match and the victim's, played until exit; yields the host's game
    id and the list the victim's latencies go to."""
    async with grpc.aio.insecure_channel(address, options=_OWN_CONNECTION) as host_channel, \
            grpc.aio.insecure_channel(address, options=_OWN_CONNECTION) as victim_channel:
        host = await Player.sign_in(host_channel, "bench-host-device", HOST)
        victim = await Player.sign_in(victim_channel, "bench-victim-device", VICTIM)
        attacked = await host.table_with_bots()
        played = await victim.table_with_bots()
        latencies: list[float] = []
        tasks = [asyncio.create_task(_keep_playing(host, attacked, HOST_PACE, None)),
                 asyncio.create_task(_keep_playing(victim, played, VICTIM_PACE, latencies))]
        try:
            yield attacked, latencies
        finally:
            for task in tasks:
                task.cancel()
            for result in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(result, Exception):
                    raise result


async def _sample_rss(server: Server, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], server.rss_kb())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.25)


async def _flood(address: str, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    settle_collector()
    loop = asyncio.get_running_loop()
    async with _playing(address) as (attacked, latencies):
        rss_start = server.rss_kb()
        peak = [rss_start]
        stop = asyncio.Event()
        sampler = asyncio.create_task(_sample_rss(server, peak, stop))
        attacker = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--attacker",
             json.dumps([address, attacked, args.guests, args.streams_per_guest])],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert attacker.stdout is not None and attacker.stdin is not None
        stdin, stdout = attacker.stdin, attacker.stdout

        async def heard() -> dict[str, Any]:
            line = await asyncio.wait_for(loop.run_in_executor(None, stdout.readline), 600)
            if not line:
                raise RuntimeError(f"the attacker ended early (exit {attacker.wait()})")
            reply: dict[str, Any] = json.loads(line)
            return reply

        def tell(word: str) -> None:
            stdin.write(f"{word}\n")
            stdin.flush()

        try:
            # The guests sign in first (the sign-in limit is raised for that; their memory
            # counts in the growth), then the victim's idle p95, then the streams.
            signed_in = await heard()
            signing_p95 = _percentile(latencies, 0.95) if latencies else 0.0
            await asyncio.sleep(2.0)  # settle
            latencies.clear()
            cpu_idle, idle_started = _cpu(server), time.perf_counter()
            await asyncio.sleep(args.idle)
            idle = list(latencies)
            idle_cpu = (_cpu(server) - cpu_idle) / (time.perf_counter() - idle_started)
            latencies.clear()
            rss_before_streams = server.rss_kb()
            cpu_attack, attack_started = _cpu(server), time.perf_counter()
            tell("open")
            flood = await heard()
            await asyncio.sleep(args.hold)
            attacked_latencies = list(latencies)
            attack_cpu = (_cpu(server) - cpu_attack) / (time.perf_counter() - attack_started)
            rss_held = server.rss_kb()
            tell("stop")
            held = await heard()
        finally:
            stop.set()
            await sampler
            if attacker.poll() is None:
                stdin.close()
                try:
                    attacker.wait(60)
                except subprocess.TimeoutExpired:
                    attacker.kill()
    idle_p95, attack_p95 = _percentile(idle, 0.95), _percentile(attacked_latencies, 0.95)
    return {
        "victim_p95_ratio": round(attack_p95 / idle_p95, 2),
        "victim_idle_p95_ms": round(idle_p95 * 1000, 1),
        "victim_attack_p95_ms": round(attack_p95 * 1000, 1),
        "victim_sign_in_phase_p95_ms": round(signing_p95 * 1000, 1),
        "victim_calls": len(attacked_latencies),
        "server_cpu_idle": round(idle_cpu, 2),
        "server_cpu_attack": round(attack_cpu, 2),
        "process_rss_growth_mb": round((peak[0] - rss_start) / 1024, 1),
        "streams_rss_growth_mb": round((rss_held - rss_before_streams) / 1024, 1),
        "rss_start_mb": round(rss_start / 1024, 1),
        "signed_in": signed_in["signed_in"],
        "sign_in_seconds": signed_in["seconds"],
        "opened_streams": flood["opened"],
        "refused_streams": sum(flood["refused"].values()),
        "refused_by_reason": flood["refused"],
        "attack_seconds": flood["seconds"],
        "dropped_while_held": held["dropped_while_held"],
        "guests": args.guests, "streams_per_guest": args.streams_per_guest,
    }


# ---- running it -----------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both measures, each against a server of its own (in one event loop: grpc.aio's
    channels belong to the loop they were made on)."""
    _raise_fd_limit()
    figures: dict[str, Any] = {}
    if args.only in (None, "cost"):
        with tempfile.TemporaryDirectory(prefix="dast-limits-") as data_dir:
            server = _server(data_dir, {"DAST_SERVICES": "game", **CAPACITY_LIMITS})
            try:
                figures.update(await _stream_cost(server.address, server, args))
            finally:
                server.stop()
    if args.only in (None, "flood"):
        with tempfile.TemporaryDirectory(prefix="dast-limits-") as data_dir:
            server = _server(data_dir, {
                "DAST_LIMIT_SIGN_INS_PER_MINUTE_PER_ADDRESS": "1000000",
                "DAST_TRUSTED_PROXIES": "127.0.0.1/32",
                **dict(setting.split("=", 1) for setting in args.server_env),
            })
            try:
                figures.update(await _flood(server.address, server, args))
            finally:
                server.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", choices=("cost", "flood"))
    parser.add_argument("--cost-streams", type=int, default=3_000)
    parser.add_argument("--cost-games", type=int, default=10)
    parser.add_argument("--cost-events", type=int, default=20)
    parser.add_argument("--guests", type=int, default=240)
    parser.add_argument("--streams-per-guest", type=int, default=32)
    parser.add_argument("--idle", type=float, default=15.0)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--server-env", action="append", default=[], metavar="DAST_X=VALUE",
                        help="a setting of the flood's server (e.g. another limit to try)")
    parser.add_argument("--attacker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attacker:
        address, game_id, guests, streams = json.loads(args.attacker)
        asyncio.run(_attacker(address, game_id, guests, streams))
        return
    figures = asyncio.run(run(args))
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:>28}: {value}")


if __name__ == "__main__":
    main()
