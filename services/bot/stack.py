"""Wiring of the play stack: lobby, presence-tracking game service, bots and turn timers.

:class:`PlayStack` adds the lobby and the game service (with presence) to a gRPC server
and, once the server listens, runs the background tasks of one process: the lobby's follower
of match ends, the bot service, the turn timers and the presence sweep. ``dast serve``
mounts it next to the store, bus and relay it already runs; :func:`running_stack` builds a
whole process (store, bus, relay, server) for tests and benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import grpc

from dast.v1 import game_pb2, lobby_pb2
from services.bot.client import GrpcGameApi
from services.bot.presence import Presence, PresenceGameService, mount_game_service_with_presence
from services.bot.seats import LobbySeats
from services.bot.service import BotService
from services.bot.timers import TurnTimers
from services.lobby.app import SERVICE_NAME as LOBBY_SERVICE_NAME
from services.lobby.app import Lobby, mount_lobby_service
from services.lobby.changes import Tables
from services.lobby.store import LobbyStore
from services.lobby.tables import Update
from services.platform.bus import Bus, open_bus
from services.platform.metrics import GameMetrics
from services.platform.relay import Relay
from services.platform.server import add_health_and_reflection, bind, make_server
from services.platform.store import OutboxStore, open_store

GAME_SERVICE_NAME = game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name


@dataclass(frozen=True)
class StackOptions:
    """Tunables of the play stack (tests shorten the times)."""

    grace_ms: int = 15_000
    """How long a player's game stream may be gone before a bot takes the seat."""
    timer_shift_ms: int = 0
    """Added to every deadline before it fires (tests: negative, so turns run out fast)."""
    bots: bool = True
    timers: bool = True
    presence: bool = True
    token_ttl_seconds: int = 24 * 3600
    durable_prefix: str = ""
    """Prefix of the bus durable names (``<prefix>bots`` …), so test runs stay apart."""


@dataclass
class PlayStack:
    """The lobby, game, bot and timer services of one process."""

    secret: str
    store: OutboxStore
    bus: Bus
    lobby_store: LobbyStore
    options: StackOptions = field(default_factory=StackOptions)
    restore_url: str | None = None
    """The event store URL the timers rebuild pending deadlines from."""
    tables: Tables = field(init=False)
    presence: Presence = field(init=False)
    lobby: Lobby | None = field(init=False, default=None)
    game: PresenceGameService | None = field(init=False, default=None)
    bots: BotService | None = field(init=False, default=None)
    timers: TurnTimers | None = field(init=False, default=None)
    _channel: grpc.aio.Channel | None = field(init=False, default=None)
    _tasks: list[asyncio.Task[None]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.tables = Tables(self.lobby_store)
        self.presence = Presence(self.tables, grace_ms=self.options.grace_ms)

    def mount(self, server: grpc.aio.Server, notify: Callable[[], None], *,
              metrics: GameMetrics | None = None) -> list[str]:
        """Add the game service (with presence) and the lobby to ``server``; their names."""
        self.game = mount_game_service_with_presence(
            server, self.store, self.bus, notify, self.presence, metrics=metrics
        )
        self.lobby = mount_lobby_service(
            server, self.lobby_store, secret=self.secret,
            token_ttl_seconds=self.options.token_ttl_seconds, table_writer=self.tables,
        )
        return [str(GAME_SERVICE_NAME), str(LOBBY_SERVICE_NAME)]

    async def start(self, target: str) -> None:
        """Run the background tasks, calling the game service at ``target`` (host:port)."""
        assert self.lobby is not None, "mount() first"
        self._channel = grpc.aio.insecure_channel(target)
        api = GrpcGameApi(self._channel, self.secret)
        seats = LobbySeats(self.lobby_store)
        prefix = self.options.durable_prefix
        self._spawn(self.lobby.run(self.bus, game_target=target, durable=f"{prefix}lobby"))
        if self.options.bots:
            self.bots = BotService(api, seats)
            self.presence.set_on_takeover(self.bots.kick)
            self.tables.add_listener(self._kick_on_takeover)
            self._spawn(self.bots.sweep_takeovers(self.lobby_store))
            self._spawn(self.bots.run(self.bus, durable=f"{prefix}bots",
                                      restore_from=self.restore_url))
        if self.options.timers:
            self.timers = TurnTimers(api, seats, shift_ms=self.options.timer_shift_ms)
            self._spawn(self.timers.run(self.bus, durable=f"{prefix}timers",
                                        restore_from=self.restore_url))
        if self.options.presence:
            self._spawn(self.presence.sweep_forever())

    def _kick_on_takeover(self, table: lobby_pb2.Table, updates: list[Update]) -> None:
        """A seat a bot took over (the player left) may be the one to act: look now."""
        taken = lobby_pb2.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT
        if self.bots is not None and table.game_id and any(u.kind == taken for u in updates):
            self.bots.kick(table.game_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.append(asyncio.ensure_future(work))

    async def stop(self) -> None:
        """Cancel the background tasks and close the channel."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        if self._channel is not None:
            await self._channel.close()


@dataclass
class Running:
    """A whole play stack serving on loopback (tests and benchmarks)."""

    address: str
    stack: PlayStack
    store: OutboxStore


@contextlib.asynccontextmanager
async def running_stack(
    secret: str, *, store_url: str | None = None, nats_url: str | None = None,
    options: StackOptions | None = None, listen: str = "127.0.0.1:0",
    metrics: GameMetrics | None = None, **nats_options: object,
) -> AsyncIterator[Running]:
    """Serve store, bus, relay, game, lobby, bots and timers in this process until exit."""
    store = await asyncio.to_thread(open_store, store_url)
    lobby_store = await asyncio.to_thread(LobbyStore.open, store_url)
    bus = open_bus(nats_url, **nats_options)
    await bus.start()
    relay = Relay(store, bus, poll_seconds=0.2)
    relay_task = asyncio.create_task(relay.run())
    stack = PlayStack(secret, store, bus, lobby_store, options or StackOptions(),
                      restore_url=store_url)
    server = make_server(secret)
    names = stack.mount(server, relay.notify, metrics=metrics)
    await add_health_and_reflection(server, names)
    port = bind(server, listen)
    await server.start()
    address = f"127.0.0.1:{port}"
    await stack.start(address)
    try:
        yield Running(address, stack, store)
    finally:
        await stack.stop()  # first, so that no bot call meets a stopped server
        await server.stop(None)
        relay_task.cancel()
        with contextlib.suppress(BaseException):
            await relay_task
        await bus.close()
        await asyncio.to_thread(lobby_store.close)
        await asyncio.to_thread(store.close)
