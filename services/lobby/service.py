"""The gRPC ``dast.v1.LobbyService``: thin methods over :mod:`services.lobby.tables`.

Every method: read the caller (the auth interceptor checked the token; ``SignInGuest`` is
open), load → change → save through :class:`~services.lobby.changes.Tables`, reply with
the table as the caller may see it. Matches are created through the game service's gRPC API
with the lobby's service token (:class:`GameStarter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from typing import NoReturn, Protocol

import grpc
import structlog

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2, lobby_pb2, lobby_pb2_grpc
from services.lobby import tables
from services.lobby.changes import Tables, wall_clock_ms
from services.lobby.store import TableNotFound
from services.platform.auth import Role, current_identity, mint_token
from services.platform.errors import Reason, ServiceError, abort_with

_log = structlog.get_logger(component="lobby")
WATCH_POLL_SECONDS = 1.0
"""How often a watch re-reads its table besides in-process wake-ups (other replicas)."""


class GameStarter(Protocol):
    """Creates a match in the game service."""

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """Create the game (an existing ``game_id`` counts as created: a retry)."""
        ...


class GrpcGameStarter:
    """:class:`GameStarter` over the game service's gRPC API with a service token."""

    def __init__(self, target: str, secret: str, *, player_id: str = "lobby") -> None:
        self._target = target
        self._metadata = (
            ("authorization", f"Bearer {mint_token(secret, player_id, Role.SERVICE)}"),
        )
        self._channel: grpc.aio.Channel | None = None

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """See :class:`GameStarter`."""
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(self._target)
        stub = game_pb2_grpc.GameServiceStub(self._channel)
        try:
            await stub.CreateGame(request, metadata=self._metadata, timeout=10)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise

    async def close(self) -> None:
        """Close the channel."""
        if self._channel is not None:
            await self._channel.close()


def _invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message)


def create_game_request(table: lobby_pb2.Table) -> game_pb2.CreateGameRequest:
    """The CreateGame request of the match a table is starting (``table.game_id``)."""
    request = game_pb2.CreateGameRequest(
        game_type=table.settings.game_type, game_id=table.game_id,
        players=[
            common_pb2.Player(player_id=seat.player_id, display_name=seat.display_name,
                              is_bot=seat.is_bot)
            for seat in table.seats
        ],
    )
    rules = tables.game_rules(table.settings)
    if isinstance(rules, hokm_pb2.HokmRules):
        request.hokm.CopyFrom(rules)
    else:
        request.hand.CopyFrom(rules)
    return request


class LobbyService(lobby_pb2_grpc.LobbyServiceServicer):
    """The servicer."""

    def __init__(
        self, tables_: Tables, games: GameStarter, secret: str, *,
        token_ttl_seconds: int = 24 * 3600, clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.tables = tables_
        self.games = games
        self._secret = secret
        self._ttl = token_ttl_seconds
        self._clock = clock

    async def SignInGuest(
        self, request: lobby_pb2.SignInGuestRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.SignInGuestResponse:
        try:
            if not 8 <= len(request.device_id) <= 128:
                raise _invalid("device_id must have 8 to 128 characters")
            if len(request.display_name) > 32:
                raise _invalid("display_name: at most 32 characters")
            player_id, name = await asyncio.to_thread(
                self.tables.store.guest, request.device_id, request.display_name.strip(),
                f"g-{uuid.uuid4().hex[:16]}",
            )
            token = mint_token(self._secret, player_id, Role.PLAYER, ttl_seconds=self._ttl)
            return lobby_pb2.SignInGuestResponse(
                player_id=player_id, display_name=name, token=token,
                expires_at_ms=self._clock() + self._ttl * 1000,
            )
        except Exception as exc:
            await self._fail(context, exc)

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            name = await asyncio.to_thread(self.tables.store.name_of, player)
            change = tables.new_table(
                uuid.uuid4().hex[:12], request.settings, player, name, secrets.token_hex(4)
            )
            table = await self.tables.create(change)
            _log.info("table_created", table_id=table.table_id, host=player)
            return table
        except Exception as exc:
            await self._fail(context, exc)

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ListTablesResponse:
        try:
            player = current_identity().player_id
            listed = await asyncio.to_thread(
                self.tables.store.listed, request.game_type,
                include_playing=request.include_playing,
            )
            return lobby_pb2.ListTablesResponse(
                tables=[tables.for_viewer(table, player) for table in listed]
            )
        except Exception as exc:
            await self._fail(context, exc)

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            if request.table_id:
                table = await self.tables.get(request.table_id)
            else:
                table = await asyncio.to_thread(self.tables.store.by_game, request.game_id)
            return tables.for_viewer(table, player)
        except Exception as exc:
            await self._fail(context, exc)

    async def JoinTable(
        self, request: lobby_pb2.JoinTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            table_id = request.table_id
            if not table_id:
                found = await asyncio.to_thread(self.tables.store.by_invite, request.invite_code)
                table_id = found.table_id
            else:
                found = await self.tables.get(table_id)
                if found.settings.private and request.invite_code != found.invite_code and (
                    tables.seat_of(found, player) is None
                ):
                    raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, "invite_required",
                                       f"table {table_id} is private: join with its invite code")
            name = await asyncio.to_thread(self.tables.store.name_of, player)
            seat = request.seat if request.HasField("seat") else None
            return await self.tables.apply(
                table_id, lambda table: tables.join(table, player, name, seat)
            )
        except Exception as exc:
            await self._fail(context, exc)

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            table = await self.tables.apply(
                request.table_id, lambda table: tables.leave(table, player)
            )
            return tables.for_viewer(table, player)
        except Exception as exc:
            await self._fail(context, exc)

    async def ChooseSeat(
        self, request: lobby_pb2.ChooseSeatRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            return await self.tables.apply(
                request.table_id, lambda table: tables.choose_seat(table, player, request.seat)
            )
        except Exception as exc:
            await self._fail(context, exc)

    async def AddBot(
        self, request: lobby_pb2.AddBotRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            return await self.tables.apply(
                request.table_id,
                lambda table: tables.add_bot(table, player, request.seat, request.level),
            )
        except Exception as exc:
            await self._fail(context, exc)

    async def StartGame(
        self, request: lobby_pb2.StartGameRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            return await self._start(request.table_id, player, tables.start)
        except Exception as exc:
            await self._fail(context, exc)

    async def Rematch(
        self, request: lobby_pb2.RematchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            return await self._start(request.table_id, player, tables.rematch)
        except Exception as exc:
            await self._fail(context, exc)

    async def _start(
        self, table_id: str, player: str,
        starting: Callable[[lobby_pb2.Table, str, str], tables.Change],
    ) -> lobby_pb2.Table:
        loaded = await self.tables.get(table_id)
        # The game id names the table's version, so a retried start of an unchanged table
        # creates the game once (ALREADY_EXISTS counts as created), and a table that changed
        # meanwhile (someone sat down) never gets a game made for its old seats.
        game_id = f"{table_id}-{loaded.matches + 1}-v{loaded.version}"
        planned = starting(loaded, player, game_id).table
        await self.games.create(create_game_request(planned))

        def commit(fresh: lobby_pb2.Table) -> tables.Change:
            if fresh.game_id == game_id:
                return tables.Change(fresh)  # a concurrent start of the same version won
            if fresh.version != loaded.version:
                raise ServiceError(grpc.StatusCode.ABORTED, "concurrent_change",
                                   f"table {table_id} changed while starting; retry")
            return starting(fresh, player, game_id)

        table = await self.tables.apply(table_id, commit)
        _log.info("game_started", table_id=table_id, game_id=table.game_id)
        return table

    async def QuickMatch(
        self, request: lobby_pb2.QuickMatchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.Table:
        try:
            player = current_identity().player_id
            name = await asyncio.to_thread(self.tables.store.name_of, player)
            settings = lobby_pb2.TableSettings(game_type=request.game_type or
                                               common_pb2.GAME_TYPE_HOKM)
            if settings.game_type == common_pb2.GAME_TYPE_HOKM:
                settings.hokm.variant = request.hokm_variant
            else:
                settings.hand.players = request.hand_players or 4
            wanted = tables.seat_count(settings)
            for table in await asyncio.to_thread(
                self.tables.store.listed, settings.game_type, include_playing=False
            ):
                if len(table.seats) != wanted:
                    continue
                try:
                    return await self.tables.apply(
                        table.table_id, lambda fresh: tables.join(fresh, player, name, None)
                    )
                except ServiceError as refused:
                    if refused.code != grpc.StatusCode.FAILED_PRECONDITION:
                        raise
            settings.turn_seconds = 30
            change = tables.new_table(
                uuid.uuid4().hex[:12], settings, player, name, secrets.token_hex(4)
            )
            return await self.tables.create(change)
        except Exception as exc:
            await self._fail(context, exc)

    async def WatchTable(
        self, request: lobby_pb2.WatchTableRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[lobby_pb2.TableUpdate]:
        try:
            player = current_identity().player_id
            table_id = request.table_id
            wake = self.tables.watchers.register(table_id)
            try:
                table = await self.tables.get(table_id)
                yield lobby_pb2.TableUpdate(
                    kind=lobby_pb2.TABLE_UPDATE_KIND_SNAPSHOT, version=table.version,
                    at_ms=self._clock(), table=tables.for_viewer(table, player),
                )
                version = table.version
                while True:
                    wake.clear()
                    updates = await asyncio.to_thread(
                        self.tables.store.updates_after, table_id, version
                    )
                    if updates:
                        table = tables.for_viewer(await self.tables.get(table_id), player)
                    for item in updates:
                        item.table.CopyFrom(table)
                        yield item
                        version = item.version
                    if not updates:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(wake.wait(), WATCH_POLL_SECONDS)
            finally:
                self.tables.watchers.forget(table_id, wake)
        except Exception as exc:
            await self._fail(context, exc)

    async def _fail(self, context: grpc.aio.ServicerContext, exc: Exception) -> NoReturn:
        if isinstance(exc, TableNotFound):
            exc = ServiceError(grpc.StatusCode.NOT_FOUND, "table_not_found", str(exc))
        elif isinstance(exc, grpc.aio.AioRpcError):
            exc = ServiceError(exc.code(), Reason.INTERNAL, f"game service: {exc.details()}")
        elif not isinstance(exc, ServiceError):
            _log.exception("internal_error")
        await abort_with(context, exc)
