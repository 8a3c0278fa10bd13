"""Game-service throughput and latency over real gRPC on loopback.

One run measures, with ``--games`` games in flight (one client coroutine per game):

- ``echo_rps``: a bare grpc.aio unary echo server (the ceiling of this Python/gRPC stack);
- ``embedded_rps``: play-card round trips (SubmitCommand) per second through ``dast
  serve`` on its embedded defaults (SQLite file, in-process bus), every game sending its
  next command as soon as the last one returns (a closed loop at saturation: 100 games in
  flight means 100 calls always outstanding, one per game). ``embedded_saturated_p99_ms``
  is the p99 there; by Little's law the MEAN latency of that loop is games / rps
  (``embedded_saturated_floor_ms``), so the saturated p99 can never be below it: it measures
  queueing, not the service;
- ``embedded_p99_ms``: the p99 latency when the games together offer ``--rate``
  commands/s (default 200: each of 100 games acts every half second, faster than people),
  and ``embedded_p99_ms_high`` the same at ``--high-rate`` (default 1000/s). Each game
  sends on its own fixed schedule whatever the replies (the schedule only slips when a
  reply takes longer than the game's interval), so these are open-loop figures at a stated
  rate; ``*_paced_rps`` checks that the rate was really offered;
- ``pg_nats_*``: the same through PostgreSQL and NATS (``--database-url``, ``--nats-url``, in
  a schema and a stream of the run's own, ``bench/places.py``;
  ``null`` figures when unreachable).

Every server runs in its own process. Before timing, the client works out every game's
whole match with the engine (the bench is the admin and chose the server seed), so the
timed loop only sends commands, as the echo loop only sends echoes: every timed call is one
command, and the client spends no more CPU per call than the echo's client does.
Goals (issue 4): embedded ≥ 50 % of echo, p99 ≤ 20 ms.

Usage: ``python bench/game_service.py --json [--games 100] [--seconds 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.places import fresh_place
from bench.report import print_figures
from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2, log_pb2
from engine import hokm
from services.compose import settle_collector
from services.platform.auth import Role
from tests.support.tokens import token, token_environment

ROOT = Path(__file__).resolve().parent.parent
SIGNING_KEY = "7EFAsGnUp4zHFey+CBcvHjthCWzbsquVN2MU7+ETZuI="
"""base64 of sha256("dast-bench"): the servers' log-signing key (needed with PostgreSQL)."""
ECHO_METHOD = "/bench.Echo/Echo"
_LISTENING = re.compile(r"listening on ([\d.]+):(\d+)")


# ---- servers ------------------------------------------------------------------------


async def _echo_server() -> None:
    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"echo listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


def _spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        args, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        match = _LISTENING.search(line)
        if match:
            return process, f"{match[1]}:{match[2]}"
    raise RuntimeError(f"{args} did not start")


def _game_server(
    env: dict[str, str], command: list[str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``dast serve`` of the game service alone (or ``command`` run with its settings)."""
    return _spawn(
        command or [sys.executable, "-m", "services.compose"],
        {"DAST_LISTEN": "127.0.0.1:0", **token_environment(["game"]),
         "DAST_LOG_LEVEL": "warning", "DAST_SIGNING_KEY": SIGNING_KEY, "DAST_SERVICES": "game",
         **env},
    )


# ---- clients ------------------------------------------------------------------------


@dataclass
class Samples:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    since: float = 0.0
    """Calls started before this ``time.perf_counter()`` are played but not recorded (a
    warm-up in the same play); errors are counted whenever they happen."""

    def summary(self, seconds: float) -> tuple[float, float]:
        ordered = sorted(self.latencies)
        p99 = ordered[int(len(ordered) * 0.99)] * 1000 if ordered else float("nan")
        return len(ordered) / seconds, p99


async def _run_echo(address: str, games: int, seconds: float) -> float:
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(ECHO_METHOD)
        payload = game_pb2.SubmitCommandRequest(
            game_id="x" * 32, command_id="y" * 16,
        ).SerializeToString()
        samples = Samples()
        settle_collector()  # the client's own collections stay out of what it times
        stop = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < stop:
                started = time.perf_counter()
                await call(payload)
                samples.latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(games)))
        return samples.summary(time.perf_counter() - started)[0]


def _script(number: int) -> list[tuple[int, hokm_pb2.HokmCommand]]:
    """The commands of game ``number``'s whole match, worked out before any timing: the
    bench chose the server seed (admin), so a mirror of the game with the engine knows every
    state; each seat plays its first legal command. The timed loop then only sends."""
    rules, seed, seated = _setup(number)
    state = hokm.replay(hokm.start(rules, seed, seated))
    script = []
    while (seat := hokm.to_act(state)) is not None:
        command: log_pb2.Command = hokm.legal(state, seat)[0]
        script.append((seat, command.hokm))
        for event in hokm.decide(state, command):
            state = hokm.evolve(state, event)
    return script


def _setup(number: int) -> tuple[hokm_pb2.HokmRules, bytes, list[common_pb2.Player]]:
    seed = number.to_bytes(32, "big")
    rules = hokm_pb2.HokmRules(target_score=7)
    seated = [common_pb2.Player(player_id=f"g{number}p{s}") for s in range(4)]
    return rules, seed, seated


async def _play(
    stub: game_pb2_grpc.GameServiceStub, metadata: Any, number: int, stop: float,
    samples: Samples, interval: float, tag: str, games: int,
    script: list[tuple[int, hokm_pb2.HokmCommand]],
) -> None:
    """Create games one after another and play each with its precomputed ``script``, one
    command every ``interval`` seconds (0: back to back).

    Paced, game ``number`` starts ``number / games`` of an interval late, so that the games'
    commands (and creations) are spread evenly over each interval from the first one on:
    the offered load is the stated rate, without a burst of every game at once."""
    rules, seed, seated = _setup(number)
    game_count = 0
    if interval:
        await asyncio.sleep(interval * number / games)
    while time.perf_counter() < stop:
        game_count += 1
        created = await stub.CreateGame(game_pb2.CreateGameRequest(
            game_type=common_pb2.GAME_TYPE_HOKM, hokm=rules, players=seated,
            server_seed=seed, game_id=f"bench-{tag}-{number}-{game_count}",
        ), metadata=metadata)
        next_at = time.perf_counter()
        for command_no, (seat, command) in enumerate(script):
            if time.perf_counter() >= stop:
                break
            if interval:
                await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                next_at += interval
            request = game_pb2.SubmitCommandRequest(
                game_id=created.game_id, command_id=f"c{command_no}", seat=seat, hokm=command,
            )
            started = time.perf_counter()
            try:
                await stub.SubmitCommand(request, metadata=metadata)
            except grpc.aio.AioRpcError:
                samples.errors += 1
                break
            if started >= samples.since:
                samples.latencies.append(time.perf_counter() - started)


async def _run_game(
    address: str, games: int, seconds: float, interval: float = 0.0
) -> tuple[float, float, int]:
    metadata = (("authorization", f"Bearer {token('bench', Role.ADMIN)}"),)
    scripts = [_script(number) for number in range(games)]
    async with grpc.aio.insecure_channel(address) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        samples = Samples()
        tag = uuid.uuid4().hex[:12]
        # The client holds every game's precomputed match and a sample per call: a full
        # collection of it (56-72 ms here) would stall every call in flight and be timed as
        # the server's latency. It settles its collector as the servers do.
        settle_collector()
        started = time.perf_counter()
        stop = started + seconds
        await asyncio.gather(
            *(
                _play(stub, metadata, n, stop, samples, interval, tag, games, scripts[n])
                for n in range(games)
            )
        )
        rps, p99 = samples.summary(time.perf_counter() - started)
        return rps, p99, samples.errors


def _reachable(url: str, port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or port), 1):
            return True
    except OSError:
        return False


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def _measure(
    prefix: str, env: dict[str, str], games: int, seconds: float, rate: float, high_rate: float
) -> dict[str, Any]:
    """Saturated throughput, then latency at ``rate`` and ``high_rate`` commands/s, of one
    server setup."""
    server, address = _game_server(env)
    try:
        rps, saturated_p99, errors = asyncio.run(_run_game(address, games, seconds))
        paced_rps, p99, paced_errors = asyncio.run(
            _run_game(address, games, seconds, interval=games / rate)
        )
        high_rps, high_p99, high_errors = asyncio.run(
            _run_game(address, games, seconds, interval=games / high_rate)
        )
    finally:
        _stop(server)
    return {
        f"{prefix}_rps": round(rps, 1),
        f"{prefix}_saturated_p99_ms": round(saturated_p99, 2),
        f"{prefix}_saturated_floor_ms": round(games / rps * 1000, 2) if rps else None,
        f"{prefix}_p99_ms": round(p99, 2),
        f"{prefix}_paced_rps": round(paced_rps, 1),
        f"{prefix}_p99_ms_high": round(high_p99, 2),
        f"{prefix}_paced_rps_high": round(high_rps, 1),
        f"{prefix}_errors": errors + paced_errors + high_errors,
    }


def run(
    games: int, seconds: float, rate: float, database_url: str, nats_url: str,
    high_rate: float = 1000.0,
) -> dict[str, Any]:
    """Every figure of one bench run."""
    result: dict[str, Any] = {
        "games": games, "seconds": seconds, "paced_rate": rate, "high_rate": high_rate,
    }
    echo, address = _spawn([sys.executable, __file__, "--echo-server"], {})
    try:
        result["echo_rps"] = round(asyncio.run(_run_echo(address, games, seconds)), 1)
    finally:
        _stop(echo)
    with tempfile.TemporaryDirectory() as data_dir:
        result.update(
            _measure("embedded", {"DAST_DATA_DIR": data_dir}, games, seconds, rate, high_rate)
        )
    if _reachable(database_url, 5432) and _reachable(nats_url, 4222):
        with fresh_place(database_url, nats_url) as place:
            env = {**place.env(), "DAST_NATS_URL": nats_url}
            result.update(_measure("pg_nats", env, games, seconds, rate, high_rate))
    else:
        result.update(pg_nats_rps=None, pg_nats_p99_ms=None)
    result["embedded_vs_echo"] = round(result["embedded_rps"] / result["echo_rps"], 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=200.0,
                        help="commands/s offered (all games together) for the paced p99")
    parser.add_argument("--high-rate", type=float, default=1000.0,
                        help="a second, higher offered rate for embedded/pg_nats_p99_ms_high")
    parser.add_argument("--database-url", default=os.environ.get(
        "DAST_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--nats-url", default=os.environ.get(
        "DAST_TEST_NATS_URL", "nats://127.0.0.1:4222"))
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server:
        asyncio.run(_echo_server())
        return
    result = run(args.games, args.seconds, args.rate, args.database_url, args.nats_url,
                 args.high_rate)
    print_figures(result, as_json=args.json, width=20)


if __name__ == "__main__":
    main()
