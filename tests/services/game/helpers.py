"""Test clients of the game service: typed wrappers over the generated stub."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2, log_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from tests.support.tokens import token, token_environment

SIGNING_KEY = "W6af9htngB8LaJw3O5hhknvEuMjSp2l5lE17rlyQVAQ="
"""base64 of sha256("dast-tests"): the log-signing key of the servers the tests start."""
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class GameClient:
    """One caller of the game service (a player, the lobby or an admin)."""

    channel: grpc.aio.Channel
    player_id: str
    role: Role = Role.PLAYER
    stub: game_pb2_grpc.GameServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.stub = game_pb2_grpc.GameServiceStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token(self.player_id, self.role)}"),)

    async def create(self, request: game_pb2.CreateGameRequest) -> game_pb2.CreateGameResponse:
        reply: game_pb2.CreateGameResponse = await self.stub.CreateGame(
            request, metadata=self.metadata
        )
        return reply

    async def submit(
        self, game_id: str, command_id: str, body: hokm_pb2.HokmCommand | Any,
        *, expected_seq: int | None = None, seat: int | None = None, game: str = "hokm",
    ) -> game_pb2.SubmitCommandResponse:
        request = game_pb2.SubmitCommandRequest(game_id=game_id, command_id=command_id)
        getattr(request, game).CopyFrom(body)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        if seat is not None:
            request.seat = seat
        reply: game_pb2.SubmitCommandResponse = await self.stub.SubmitCommand(
            request, metadata=self.metadata
        )
        return reply

    async def view(self, game_id: str, seat: int | None = None) -> game_pb2.GetViewResponse:
        request = game_pb2.GetViewRequest(game_id=game_id)
        if seat is not None:
            request.seat = seat
        reply: game_pb2.GetViewResponse = await self.stub.GetView(request, metadata=self.metadata)
        return reply

    async def subscribe(self, game_id: str, after_seq: int = 0) -> AsyncIterator[log_pb2.Event]:
        call = self.stub.Subscribe(
            game_pb2.SubscribeRequest(game_id=game_id, after_seq=after_seq),
            metadata=self.metadata,
        )
        async for reply in call:
            yield reply.event

    async def export(self, game_id: str) -> list[log_pb2.LogEntry]:
        reply = await self.stub.ExportLog(
            game_pb2.ExportLogRequest(game_id=game_id), metadata=self.metadata
        )
        return list(reply.entries)


def players(count: int, prefix: str = "p") -> list[common_pb2.Player]:
    """``count`` seated players named p0, p1, … with client seeds."""
    return [
        common_pb2.Player(player_id=f"{prefix}{seat}", display_name=f"Player {seat}",
                          client_seed=f"seed-{seat}".encode())
        for seat in range(count)
    ]


def choose(view: game_pb2.GetViewResponse | game_pb2.SubscribeResponse,
           rng: DeterministicRandom) -> Any | None:
    """A seat's move chosen from its own view only (None when it has nothing to do): a
    GetView reply's, or a stream message's that says it is the seat's turn."""
    kind = view.WhichOneof("view")
    assert kind is not None
    seen = getattr(view, kind)
    if not seen.legal:
        return None
    try:
        bots = __import__(f"engine.{kind}.bots", fromlist=["BOTS"]).BOTS
    except ImportError:
        return seen.legal[rng.randbelow(len(seen.legal))]
    policy = bots.get("greedy") or next(iter(bots.values()))
    return policy(seen, rng)


async def next_move(
    clients: Sequence[GameClient], game_id: str, rngs: Sequence[DeterministicRandom],
    views: list[tuple[int, game_pb2.GetViewResponse]] | None = None,
) -> tuple[int, Any, int] | None:
    """The seat to act, its move (from its own GetView) and the seq it saw; None when over."""
    public = await clients[0].view(game_id)
    seen = getattr(public, public.WhichOneof("view") or "hokm")
    if not seen.HasField("turn"):  # the match is over (the rules never wait for nobody)
        return None
    seat = seen.turn
    own = await clients[seat].view(game_id)
    if views is not None:
        views.append((seat, own))
    move = choose(own, rngs[seat])
    assert move is not None, f"seat {seat} is to act but has no legal move"
    return seat, move, own.seq


# ---- subprocess servers -------------------------------------------------------------

_LISTENING = re.compile(r"dast listening on ([\d.]+):(\d+)")


@dataclass
class ServerProcess:
    """A ``python -m services.compose`` subprocess and the address it listens on."""

    process: subprocess.Popen[str]
    address: str

    def kill(self) -> None:
        """SIGKILL: no shutdown at all."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_server(env_overrides: dict[str, str], *, timeout: float = 30.0) -> ServerProcess:
    """Start a game-service process and wait until it prints its address."""
    env = {
        **os.environ,
        "DAST_LISTEN": "127.0.0.1:0",
        **token_environment(["game"]),
        "DAST_SIGNING_KEY": SIGNING_KEY,
        "DAST_LOG_LEVEL": "warning",
        "DAST_SERVICES": "game",
        **env_overrides,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "services.compose"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = _LISTENING.search(line)
        if match:
            return ServerProcess(process, f"{match[1]}:{match[2]}")
    process.kill()
    raise RuntimeError(f"game service did not start (exit {process.poll()})")


@contextlib.contextmanager
def two_servers(env_overrides: dict[str, str]) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two game-service processes (:func:`start_server`), both stopped afterwards."""
    first = start_server(env_overrides)
    try:
        second = start_server(env_overrides)
    except BaseException:
        first.stop()
        raise
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


async def stream_into(client: GameClient, game_id: str, after_seq: int,
                      sink: list[log_pb2.Event]) -> None:
    """Append the client's streamed events to ``sink`` until the stream ends."""
    with contextlib.suppress(asyncio.CancelledError):
        async for event in client.subscribe(game_id, after_seq):
            sink.append(event)
