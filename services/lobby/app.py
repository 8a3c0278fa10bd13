"""Wiring of the lobby into a gRPC server, and its follower of the games' events.

The composition root (:mod:`services.compose`) mounts the lobby with
:func:`mount_lobby_service`, then runs :meth:`Lobby.run` as a task once the game service's
address is known::

    lobby = mount_lobby_service(server, lobby_store, signer=token_keys.signer("lobby"))
    port = bind(server, settings.listen)
    task = asyncio.create_task(lobby.run(bus, game_target=f"127.0.0.1:{port}"))

The lobby learns how matches go from the games' events only (its durable consumer
``lobby`` on the bus), never from the event store. A lobby that was down catches up twice
over: with NATS its durable consumer resumes where it stopped; and whatever the bus, on
start :meth:`Lobby.catch_up` asks the game service (``ExportLog``, which answers a service
only for a finished match) about every table still playing, so a match that ended while
nobody followed (the in-process bus keeps nothing across a restart) finishes its table.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import structlog

from dast.v1 import lobby_pb2, log_pb2
from engine.registry import GAMES_BY_NAME
from services.lobby import tables
from services.lobby.changes import Tables
from services.lobby.feed import FeedPublisher
from services.lobby.service import GameStarter, GrpcGameStarter, LobbyService
from services.lobby.store import LobbyStore, TableNotFound
from services.lobby.tables import LobbyError
from services.platform.auth import TokenSigner
from services.platform.background import BackgroundTasks
from services.platform.bans import Ban
from services.platform.bus import Bus, Published, cancel_and_wait
from services.platform.clock import Clock, wall_clock_ms
from services.platform.table_feed import TableFeed

SERVICE_NAME = lobby_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name
_log = structlog.get_logger(component="lobby")


class _LateStarter:
    """A :class:`GameStarter` whose gRPC target is known only once the server is bound."""

    def __init__(self, signer: TokenSigner) -> None:
        self.signer = signer
        self.starter: GameStarter | None = None

    def _connected(self) -> GameStarter:
        if self.starter is None:
            raise RuntimeError("the lobby is not connected to a game service yet")
        return self.starter

    async def create(self, request: object) -> None:
        await self._connected().create(request)  # type: ignore[arg-type]

    async def is_over(self, game_id: str) -> bool:
        return await self._connected().is_over(game_id)

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> None:
        await self._connected().control_seat(game_id, seat, bot=bot, bot_level=bot_level,
                                             reason=reason)


@dataclass
class Lobby:
    """The lobby of one process: its servicer and its table writer."""

    service: LobbyService
    tables: Tables
    _starter: _LateStarter = field(repr=False)
    _removals: BackgroundTasks = field(default_factory=BackgroundTasks, repr=False)

    def on_ban(self, player_id: str, ban: Ban | None) -> None:
        """A :data:`~services.platform.bans.BanListener`: take a banned player out of every
        table of theirs (:meth:`remove_player`), in the background."""
        if ban is None:
            return
        self._removals.spawn(self.remove_player(player_id), name=f"lobby-ban:{player_id}")

    async def remove_player(self, player_id: str) -> int:
        """Stand ``player_id`` up from every waiting or playing table they sit at, as when
        they leave (a bot takes their seat in a running match); how many tables. Every
        replica told of a ban does this; a second time changes nothing."""
        removed = 0
        for table in await asyncio.to_thread(self.tables.store.unfinished):
            seat = tables.seat_of(table, player_id)
            if seat is None or table.seats[seat].left:
                continue
            try:
                await self.service.leave_table(table.table_id, player_id)
            except (LobbyError, TableNotFound):
                continue  # stood up meanwhile, or the table went
            except Exception:
                _log.exception("banned_player_not_removed", table_id=table.table_id)
                continue
            removed += 1
        if removed:
            _log.info("banned_player_removed", player_id=player_id, tables=removed)
        return removed

    def connect_games(self, target: str) -> None:
        """Create matches through the game service at ``target`` (host:port)."""
        self._starter.starter = GrpcGameStarter(target, self._starter.signer)

    async def run(self, bus: Bus, *, game_target: str | None = None,
                  durable: str = "lobby", feed: TableFeed | None = None) -> None:
        """Catch up, then follow the games' events on ``bus`` (a finished match finishes its
        table), forever; with a ``feed``, publish the tables' changes to it meanwhile."""
        if game_target is not None:
            self.connect_games(game_target)
        try:
            events = bus.all_events(durable=durable)  # registered before the catch-up
            background: list[asyncio.Task[object]] = [
                asyncio.create_task(self.catch_up(), name="lobby-catch-up")]
            if feed is not None:
                publisher = FeedPublisher(self.tables.store, feed)
                self.tables.add_listener(publisher.wake)
                background.append(asyncio.create_task(publisher.run(), name="lobby-feed"))
            try:
                async for published in events:
                    await self.on_event(published)
            finally:
                await cancel_and_wait(background)
        finally:
            starter = self._starter.starter
            if isinstance(starter, GrpcGameStarter):
                with contextlib.suppress(Exception):
                    await starter.close()

    async def catch_up(self, *, attempts: int = 30, pause_seconds: float = 1.0) -> int:
        """Finish every playing table whose match the game service says is over; return
        how many. Retried while the game service is unreachable (it may be starting too)."""
        for _ in range(attempts):
            try:
                return await self._finish_ended_matches()
            except grpc.aio.AioRpcError as error:
                _log.info("catch_up_waiting", code=error.code().name)
                await asyncio.sleep(pause_seconds)
        _log.warning("catch_up_gave_up", attempts=attempts)
        return 0

    async def _finish_ended_matches(self) -> int:
        finished = 0
        for table in await asyncio.to_thread(self.tables.store.playing):
            if table.game_id and await self._starter.is_over(table.game_id):
                await self.tables.apply(table.table_id, _finishing(table.game_id))
                _log.info("game_finished_while_away", table_id=table.table_id,
                          game_id=table.game_id)
                finished += 1
        return finished

    async def on_event(self, published: Published) -> None:
        """Finish the table of a match whose final event this is, and mark the seats a bot
        took over or gave back (idempotent)."""
        event = published.entry.event
        if event.HasField("seat_control"):
            await self._follow_seat_control(published.game_id, event.seat_control)
            return
        game = GAMES_BY_NAME.get(published.game_type)
        if game is None or game.revealed_seed(published.entry.event) is None:
            return
        try:
            table = await asyncio.to_thread(self.tables.store.by_game, published.game_id)
        except TableNotFound:
            return  # a match created without the lobby
        await self.tables.apply(table.table_id, lambda t: tables.finish(t, published.game_id))
        _log.info("game_finished", table_id=table.table_id, game_id=published.game_id)


    async def _follow_seat_control(self, game_id: str, control: log_pb2.SeatControl) -> None:
        """A seat-control event of the game's log as the table's update:
        ``SEAT_TAKEN_OVER_BY_BOT`` for a takeover, ``SEAT_RETURNED`` for a return."""
        try:
            table = await asyncio.to_thread(self.tables.store.by_game, game_id)
        except TableNotFound:
            return  # a match created without the lobby

        def change(fresh: lobby_pb2.Table) -> tables.Change:
            if fresh.game_id != game_id or control.seat >= len(fresh.seats):
                return tables.Change(fresh)  # the table moved on to another match
            if control.bot:
                return tables.take_over(fresh, [control.seat])
            return tables.give_back(fresh, fresh.seats[control.seat].player_id)

        await self.tables.apply(table.table_id, change)


def _finishing(game_id: str) -> Callable[[lobby_pb2.Table], tables.Change]:
    return lambda table: tables.finish(table, game_id)


def mount_lobby_service(
    server: grpc.aio.Server, store: LobbyStore, *, signer: TokenSigner,
    token_ttl_seconds: int = 24 * 3600, game_target: str | None = None,
    table_writer: Tables | None = None, clock: Clock = wall_clock_ms,
    device_sign_in: bool = False,
) -> Lobby:
    """Add the lobby over ``store`` to ``server``, its tokens signed by ``signer``; return it
    (run :meth:`Lobby.run`). ``device_sign_in`` keeps its retired ``SignInGuest``, where a
    device id alone signs in (``DAST_LOBBY_DEVICE_SIGN_IN``)."""
    starter = _LateStarter(signer)
    writer = table_writer or Tables(store, clock=clock)
    service = LobbyService(writer, starter, signer, token_ttl_seconds=token_ttl_seconds,
                           clock=clock, device_sign_in=device_sign_in)
    from dast.v1 import lobby_pb2_grpc

    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(service, server)
    lobby = Lobby(service, writer, starter)
    if game_target is not None:
        lobby.connect_games(game_target)
    return lobby
