"""The multi-process stack over real PostgreSQL and NATS, with every kind of process killed.

One lobby, two game replicas and two bot replicas run as separate ``python -m
services.compose`` processes (what ``deploy/local-stack.sh`` starts), on the test's own
PostgreSQL schema and JetStream stream. The lobby, the bots and the test clients reach the
game replicas through one ``ipv4:a,b`` target balanced by gRPC's ``round_robin``.

While whole bot matches and a match driven by a test client run, a game replica, a bot
replica and the lobby are each killed with SIGKILL and restarted (the lobby only after the
client's match ended, so it must catch up). Then: every match finished; every game's events
are stored once each, seq 1..n without a gap, in SQL and in the JetStream stream; the
client's table is finished, and a rematch on it plays to the end.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from sqlalchemy import create_engine, text

from dast.v1 import (
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    log_pb2,
)
from services.bot.policies import SeatView, decide
from services.platform.auth import Role
from services.platform.channels import service_channel
from tests.conftest import NatsNames
from tests.support.processes import ServiceProcess
from tests.support.servers import free_port
from tests.support.tokens import token, token_environment

pytestmark = pytest.mark.timeout(180)

SIGNING_KEY = base64.b64encode(os.urandom(32)).decode()
"""A key of this run's own: the one it had was deploy/local-stack.sh's published default,
which servers now refuse."""
BOT_MATCHES = 2
TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
T = TypeVar("T")


@dataclass
class Stack:
    lobby: ServiceProcess
    games: list[ServiceProcess]
    bots: list[ServiceProcess]
    game_target: str

    @property
    def every(self) -> list[ServiceProcess]:
        return [*self.games, self.lobby, *self.bots]


@contextlib.asynccontextmanager
async def multiprocess_stack(pg_url: str, nats_url: str, names: NatsNames, logs: Path
                             ) -> AsyncIterator[Stack]:
    game_ports = [free_port(), free_port()]
    game_target = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in game_ports)
    env = {
        **os.environ, "DAST_DATABASE_URL": pg_url, "DAST_NATS_URL": nats_url,
        "DAST_DEPLOYMENT": names.deployment,
        "DAST_SIGNING_KEY": SIGNING_KEY,
        "DAST_GAME_TARGET": game_target, "DAST_LOG_LEVEL": "warning",
    }
    stack = Stack(
        # The client signs in with the lobby's retired device sign-in (no accounts process
        # here: this test is about the game, bot and lobby processes dying).
        ServiceProcess("lobby", "lobby", free_port(),
                       {**env, **token_environment(["lobby"]), "DAST_LOBBY_DEVICE_SIGN_IN": "1"},
                       logs / "lobby.log"),
        [ServiceProcess(f"game-{i}", "game", port, {**env, **token_environment(["game"])},
                        logs / f"game-{i}.log")
         for i, port in enumerate(game_ports)],
        [ServiceProcess(f"bot-{i}", "bot", free_port(), {**env, **token_environment(["bot"])},
                        logs / f"bot-{i}.log")
         for i in range(2)],
        game_target,
    )
    try:
        stack.games[0].start()  # the first replica migrates the schema
        await stack.games[0].listening()
        for process in stack.every[1:]:
            process.start()
        await asyncio.gather(*(process.listening() for process in stack.every))
        yield stack
    finally:
        for process in stack.every:
            process.stop()


async def retrying(call: Callable[[], Awaitable[T]], seconds: float = 20) -> T:
    """``call()``, again while a killed game replica makes it fail as unavailable."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() not in TRANSIENT or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


@dataclass
class Client:
    """A test client: a guest of the lobby whose game calls go to either replica."""

    lobby: lobby_pb2_grpc.LobbyServiceStub
    game: game_pb2_grpc.GameServiceStub
    token: str = ""
    player_id: str = ""

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def lobby_call(self, method: str, request: Any) -> Any:
        return await retrying(lambda: getattr(self.lobby, method)(
            request, metadata=self.metadata, timeout=10))

    async def view(self, game_id: str) -> SeatView:
        reply = await retrying(lambda: self.game.GetView(
            game_pb2.GetViewRequest(game_id=game_id), metadata=self.metadata, timeout=10))
        return SeatView.of(reply)

    async def play_to_the_end(self, game_id: str, seconds: float = 60) -> None:
        """Play this seat's turns with the basic policy until the match is over."""
        async with asyncio.timeout(seconds):
            while not (seat_view := await self.view(game_id)).is_over:
                if seat_view.turn != seat_view.view.seat or not seat_view.view.legal:
                    await asyncio.sleep(0.02)
                    continue
                request = game_pb2.SubmitCommandRequest(
                    game_id=game_id, command_id=f"{self.player_id}:{seat_view.seq}",
                    expected_seq=seat_view.seq)
                getattr(request, seat_view.game).CopyFrom(
                    decide(seat_view, "basic", game_id))
                with contextlib.suppress(grpc.aio.AioRpcError):  # lost race: look again
                    await retrying(lambda r=request: self.game.SubmitCommand(  # type: ignore[misc]
                        r, metadata=self.metadata, timeout=10))


def hokm_settings() -> lobby_pb2.TableSettings:
    return lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)


async def create_bot_match(game: game_pb2_grpc.GameServiceStub, game_id: str) -> None:
    """A match of four bots created without the lobby (the bots play all of it)."""
    service = (("authorization", f"Bearer {token('test', Role.SERVICE)}"),)
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, game_id=game_id,
        players=[common_pb2.Player(player_id=f"bot:basic:{seat}", display_name=f"B{seat}",
                                   is_bot=True) for seat in range(4)],
        hokm=hokm_pb2.HokmRules(target_score=3),
    )
    await retrying(lambda: game.CreateGame(request, metadata=service, timeout=10))


def stored_seqs(pg_url: str, game_ids: list[str]) -> dict[str, list[int]]:
    engine = create_engine(pg_url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT game_id, seq FROM events ORDER BY game_id, seq"))
            found: dict[str, list[int]] = {game_id: [] for game_id in game_ids}
            for row in rows:
                if row.game_id in found:
                    found[row.game_id].append(row.seq)
    finally:
        engine.dispose()
    return found


async def stream_messages(nats_url: str, stream: str, prefix: str) -> list[tuple[str, bytes]]:
    """Every message of ``stream`` as (last subject token, payload), in stream order."""
    connection = await nats.connect(nats_url, connect_timeout=2, max_reconnect_attempts=0)
    found: list[tuple[str, bytes]] = []
    try:
        subscription = await connection.jetstream().pull_subscribe(
            f"{prefix}.>", stream=stream,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL))
        pending = (await subscription.consumer_info()).num_pending or 0
        while pending:
            msgs = await subscription.fetch(min(pending, 256), timeout=5)
            found.extend((msg.subject.rsplit(".", 1)[1], msg.data) for msg in msgs)
            pending = msgs[-1].metadata.num_pending or 0
        await subscription.unsubscribe()
    finally:
        await connection.close()
    return found


async def streamed_seqs(nats_url: str, names: NatsNames) -> dict[str, list[int]]:
    """Every message of the test's event stream, as seqs per game."""
    found: dict[str, list[int]] = {}
    for game_id, data in await stream_messages(nats_url, names.stream, names.subject_prefix):
        found.setdefault(game_id, []).append(log_pb2.LogEntry.FromString(data).event.seq)
    return found


async def test_matches_finish_exactly_once_while_each_kind_of_process_is_killed(
    pg_url: str, nats_url: str, nats_names: NatsNames, tmp_path: Path,
) -> None:
    async with multiprocess_stack(pg_url, nats_url, nats_names, tmp_path) as stack, \
            grpc.aio.insecure_channel(f"127.0.0.1:{stack.lobby.port}") as lobby_channel, \
            service_channel(stack.game_target) as game_channel:
        game = game_pb2_grpc.GameServiceStub(game_channel)
        client = Client(lobby_pb2_grpc.LobbyServiceStub(lobby_channel), game)
        signed = await client.lobby_call("SignInGuest", lobby_pb2.SignInGuestRequest(
            device_id="device-multiprocess"))
        client.token, client.player_id = signed.token, signed.player_id

        bot_games = [f"bots-{index}" for index in range(BOT_MATCHES)]
        await asyncio.gather(*(create_bot_match(game, game_id) for game_id in bot_games))
        table = (await client.lobby_call("CreateTable", lobby_pb2.CreateTableRequest(
            settings=hokm_settings()))).table
        table = (await client.lobby_call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))).table
        human = asyncio.create_task(client.play_to_the_end(table.game_id))

        async def moved(game_id: str, beyond: int) -> bool:
            return (await client.view(game_id)).seq > beyond

        # Mid-match: a game replica dies (SIGKILL) and comes back, then a bot replica.
        await wait_until(lambda: moved(bot_games[0], 20))
        stack.games[0].kill()
        await wait_until(lambda: moved(bot_games[0], 60))
        stack.games[0].start()
        stack.bots[0].kill()
        # A move the killed bot replica had taken comes back to the other one only when the
        # bots' consumer's ack wait (30 s) runs out: the budget is that and then some.
        await wait_until(lambda: moved(bot_games[1], 100), seconds=60)
        stack.bots[0].start()
        # The lobby dies while the client's match runs and stays down until it has ended.
        stack.lobby.kill()
        await human
        assert (await client.view(table.game_id)).is_over
        stack.lobby.start()
        await asyncio.gather(stack.lobby.listening(), stack.games[0].listening(),
                             stack.bots[0].listening())

        async def over(game_id: str) -> bool:
            return (await client.view(game_id)).is_over

        for game_id in bot_games:
            await wait_until(lambda g=game_id: over(g), seconds=60)  # type: ignore[misc]

        # The restarted lobby caught up: the table is finished, and a rematch plays.
        async def finished() -> bool:
            current = (await client.lobby_call("GetTable", lobby_pb2.GetTableRequest(
                table_id=table.table_id))).table
            return bool(current.status == lobby_pb2.TABLE_STATUS_FINISHED)

        await wait_until(finished, seconds=20)
        rematch = (await client.lobby_call("Rematch", lobby_pb2.RematchRequest(
            table_id=table.table_id))).table
        assert rematch.game_id != table.game_id
        await client.play_to_the_end(rematch.game_id)
        await wait_until(finished, seconds=20)

        # No event lost or stored twice: seq 1..n once each, in SQL and in the stream.
        games = [*bot_games, table.game_id, rematch.game_id]
        stored = await asyncio.to_thread(stored_seqs, pg_url, games)
        for game_id in games:
            assert stored[game_id] == list(range(1, len(stored[game_id]) + 1)), game_id
            assert len(stored[game_id]) > 10

        async def relayed() -> bool:
            streamed = await streamed_seqs(nats_url, nats_names)
            return all(len(streamed.get(g, [])) >= len(stored[g]) for g in games)

        # A replica killed mid-pass leaves its claim on some games' outbox until the claim's
        # lease runs out (5 s, services.platform.store.RELAY_LEASE_MS), after which a live
        # relay publishes them.
        await wait_until(relayed, seconds=20)
        streamed = await streamed_seqs(nats_url, nats_names)
        for game_id in games:
            assert streamed[game_id] == stored[game_id], game_id

        # The lobby's table changes are events too, each version once, the restarted lobby's
        # catch-up (the match's end) and the rematch included.
        async def table_versions() -> list[tuple[int, int, int]]:
            messages = await stream_messages(nats_url, nats_names.names.tables_stream,
                                             nats_names.names.tables_prefix)
            updates = [lobby_pb2.TableUpdate.FromString(data) for table_id, data in messages
                       if table_id == table.table_id]
            return [(update.version, update.kind, update.seat) for update in updates]

        final = (await client.lobby_call("GetTable", lobby_pb2.GetTableRequest(
            table_id=table.table_id))).table

        async def all_published() -> bool:
            versions = await table_versions()
            return bool(versions) and versions[-1][0] == final.version

        await wait_until(all_published, seconds=20)
        versions = await table_versions()
        assert len(versions) == len(set(versions))
        assert sorted({version for version, _, _ in versions}) == list(
            range(1, final.version + 1))
        kinds = [kind for _, kind, _ in versions]
        assert kinds.count(lobby_pb2.TABLE_UPDATE_KIND_GAME_FINISHED) == 2
        assert kinds.count(lobby_pb2.TABLE_UPDATE_KIND_GAME_STARTED) == 2


async def wait_until(predicate: Callable[[], Awaitable[bool]], *, seconds: float = 30) -> None:
    async with asyncio.timeout(seconds):
        while not await predicate():
            await asyncio.sleep(0.1)
