"""Wiring of the lobby into a gRPC server, and its follower of match ends.

``dast serve`` (and the tests) mount the lobby with :func:`mount_lobby_service`, then run
:meth:`Lobby.run` as a task once the game service's address is known::

    lobby = mount_lobby_service(server, lobby_store, secret=settings.jwt_secret)
    port = bind(server, settings.listen)
    task = asyncio.create_task(lobby.run(bus, game_target=f"127.0.0.1:{port}"))
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import grpc
import structlog

from dast.v1 import lobby_pb2
from engine.registry import GAMES_BY_NAME
from services.lobby import tables
from services.lobby.changes import Tables
from services.lobby.service import GameStarter, GrpcGameStarter, LobbyService
from services.lobby.store import LobbyStore, TableNotFound
from services.platform.bus import Bus, Published

SERVICE_NAME = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name
_log = structlog.get_logger(component="lobby")


class _LateStarter:
    """A :class:`GameStarter` whose gRPC target is known only once the server is bound."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.starter: GameStarter | None = None

    async def create(self, request: object) -> None:
        if self.starter is None:
            raise RuntimeError("the lobby is not connected to a game service yet")
        await self.starter.create(request)  # type: ignore[arg-type]


@dataclass
class Lobby:
    """The lobby of one process: its servicer and its table writer."""

    service: LobbyService
    tables: Tables
    _starter: _LateStarter = field(repr=False)

    def connect_games(self, target: str) -> None:
        """Create matches through the game service at ``target`` (host:port)."""
        self._starter.starter = GrpcGameStarter(target, self._starter.secret)

    async def run(self, bus: Bus, *, game_target: str | None = None,
                  durable: str = "lobby") -> None:
        """Follow match ends on ``bus`` (a finished match finishes its table), forever."""
        if game_target is not None:
            self.connect_games(game_target)
        try:
            async for published in bus.all_events(durable=durable):
                await self.on_event(published)
        finally:
            starter = self._starter.starter
            if isinstance(starter, GrpcGameStarter):
                with contextlib.suppress(Exception):
                    await starter.close()

    async def on_event(self, published: Published) -> None:
        """Finish the table of a match whose final event this is (idempotent)."""
        game = GAMES_BY_NAME.get(published.game_type)
        if game is None or game.revealed_seed(published.entry.event) is None:
            return
        try:
            table = await asyncio.to_thread(self.tables.store.by_game, published.game_id)
        except TableNotFound:
            return  # a match created without the lobby
        await self.tables.apply(table.table_id, lambda t: tables.finish(t, published.game_id))
        _log.info("game_finished", table_id=table.table_id, game_id=published.game_id)


def mount_lobby_service(
    server: grpc.aio.Server, store: LobbyStore, *, secret: str,
    token_ttl_seconds: int = 24 * 3600, game_target: str | None = None,
    table_writer: Tables | None = None,
) -> Lobby:
    """Add the lobby over ``store`` to ``server``; return it (run :meth:`Lobby.run`)."""
    starter = _LateStarter(secret)
    writer = table_writer or Tables(store)
    service = LobbyService(writer, starter, secret, token_ttl_seconds=token_ttl_seconds)
    from dast.v1 import lobby_pb2_grpc

    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(service, server)
    lobby = Lobby(service, writer, starter)
    if game_target is not None:
        lobby.connect_games(game_target)
    return lobby
