"""The gRPC ``dast.v1.LobbyService``: thin methods over :mod:`services.lobby.tables`.

Every method: read the caller (the auth interceptor checked the token; ``SignInGuest`` is
open, and refuses unless the operator kept the device sign-in: :data:`DEVICE_SIGN_IN_RETIRED`),
load → change → save through :class:`~services.lobby.changes.Tables`, reply with
the table as the caller may see it. Matches are created through the game service's gRPC API
with the lobby's service token (:class:`GameStarter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Final, Protocol

import grpc
import structlog

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc, log_pb2
from engine.core.payload import put
from services.lobby import tables
from services.lobby.changes import Tables
from services.lobby.reasons import LobbyReason
from services.lobby.store import StaleTable, TableNotFound
from services.platform.auth import Identity, Role, TokenSigner, current_identity, mint_token
from services.platform.bus import raise_if_cancelling
from services.platform.channels import service_channel
from services.platform.clock import wall_clock_ms
from services.platform.errors import Reason, ServiceError, map_exception
from services.platform.limits import admit_spectator
from services.platform.validation import check_id, clean_display_name, quoted_input

_log = structlog.get_logger(component="lobby")
DEVICE_ID_CHARS: Final = (8, 128)
DEFAULT_LIST_SIZE: Final = 100
MAX_LIST_SIZE: Final = 500
"""The tables one ``ListTables`` page holds, unless asked, and at most."""
"""Length of a device id (lobby.proto): long enough that apps make them unguessable."""
DEVICE_SIGN_IN_RETIRED: Final = (
    "the lobby's SignInGuest is retired on this server (a device id alone is no credential): "
    "sign in with AccountsService.SignInGuest (a device id and the device secret its first "
    "sign-in returns) or AccountsService.SignInWithIdToken, then send that access token "
    "(docs/accounts.md)"
)
"""What the lobby's ``SignInGuest`` answers where ``DAST_LOBBY_DEVICE_SIGN_IN`` is off."""
_GAME_SERVICE_DOWN: Final = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

map_exception(TableNotFound, grpc.StatusCode.NOT_FOUND, LobbyReason.TABLE_NOT_FOUND)
map_exception(StaleTable, grpc.StatusCode.ABORTED, LobbyReason.CONCURRENT_CHANGE)
WATCH_POLL_SECONDS = 1.0
"""How often a watch re-reads its table besides in-process wake-ups (other replicas)."""


def _game_service_down() -> ServiceError:
    """What a caller learns when the game service did not answer the lobby: retry."""
    return ServiceError(grpc.StatusCode.UNAVAILABLE, LobbyReason.GAME_SERVICE_UNAVAILABLE,
                        "the game service did not answer; retry")


class GameStarter(Protocol):
    """Creates a match in the game service, and tells whether one is over."""

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """Create the game (an existing ``game_id`` counts as created: a retry)."""
        ...

    async def is_over(self, game_id: str) -> bool:
        """Whether the match ``game_id`` has ended (a game the service does not know has
        not).

        :raises grpc.aio.AioRpcError: when the game service cannot answer.
        """
        ...

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> None:
        """Record in the game's log that a bot takes ``seat`` over (``bot``) or gives it back.

        :raises grpc.aio.AioRpcError: when the game service cannot answer or refuses.
        """
        ...


class GrpcGameStarter:
    """:class:`GameStarter` over the game service's gRPC API with a service token."""

    def __init__(self, target: str, signer: TokenSigner, *, player_id: str = "lobby") -> None:
        self._target = target
        self._metadata = (
            ("authorization", f"Bearer {mint_token(signer, player_id, Role.SERVICE)}"),
        )
        self._channel: grpc.aio.Channel | None = None

    def _stub(self) -> game_pb2_grpc.GameServiceStub:
        if self._channel is None:
            self._channel = service_channel(self._target)
        return game_pb2_grpc.GameServiceStub(self._channel)

    async def create(self, request: game_pb2.CreateGameRequest) -> None:
        """See :class:`GameStarter`."""
        try:
            await self._stub().CreateGame(request, metadata=self._metadata, timeout=10)
        except grpc.aio.AioRpcError as error:
            if error.code() in _GAME_SERVICE_DOWN:
                raise _game_service_down() from error
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise  # any other refusal is a lobby bug: INTERNAL, its details in the log

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> None:
        """See :class:`GameStarter` (a match that ended meanwhile: nothing to record)."""
        request = game_pb2.ControlSeatRequest(game_id=game_id, seat=seat, bot=bot,
                                              bot_level=bot_level, reason=reason)  # type: ignore[arg-type]
        try:
            await self._stub().ControlSeat(request, metadata=self._metadata, timeout=10)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise

    async def is_over(self, game_id: str) -> bool:
        """See :class:`GameStarter`: the game service exports a match's log to a service
        only once it is over (and then seals it)."""
        try:
            reply = await self._stub().ExportLog(
                game_pb2.ExportLogRequest(game_id=game_id), metadata=self._metadata, timeout=10
            )
        except grpc.aio.AioRpcError as error:
            if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return False
            raise
        return bool(reply.HasField("seal"))

    async def close(self) -> None:
        """Close the channel."""
        if self._channel is not None:
            await self._channel.close()


def create_game_request(table: lobby_pb2.Table) -> game_pb2.CreateGameRequest:
    """The CreateGame request of the match a table is starting (``table.game_id``)."""
    request = game_pb2.CreateGameRequest(
        game_type=table.settings.game_type, game_id=table.game_id,
        # the game service keeps the setting and refuses spectators itself
        spectators_allowed=table.settings.spectators_allowed,
        players=[
            common_pb2.Player(player_id=seat.player_id, display_name=seat.display_name,
                              is_bot=seat.is_bot)
            for seat in table.seats
        ],
    )
    put(request, tables.game_of(table.settings.game_type).SCHEMA,
        tables.game_rules(table.settings))
    return request


_LEGACY_VARIANT_SEATS: Final = {1: 4, 2: 3, 3: 2}
"""The seats of the deprecated ``QuickMatchRequest.hokm_variant`` values (lobby.proto's
HokmVariant FOUR, THREE and TWO_PLAYERS), for apps that predate ``players``."""


def requested_players(request: lobby_pb2.QuickMatchRequest) -> int:
    """The seats a quick match asks for (0: the game's default): ``players``, or what older
    apps sent in the deprecated per-game fields."""
    return (request.players or request.hand_players
            or _LEGACY_VARIANT_SEATS.get(request.hokm_variant, 0))


class LobbyService(lobby_pb2_grpc.LobbyServiceServicer):
    """The servicer."""

    def __init__(
        self, tables_: Tables, games: GameStarter, signer: TokenSigner, *,
        token_ttl_seconds: int = 24 * 3600, clock: Callable[[], int] = wall_clock_ms,
        device_sign_in: bool = False,
    ) -> None:
        self.tables = tables_
        self.games = games
        self._signer = signer
        self._ttl = token_ttl_seconds
        self._clock = clock
        self.device_sign_in = device_sign_in
        """Whether ``SignInGuest`` signs a device in by its id alone
        (``DAST_LOBBY_DEVICE_SIGN_IN``: tests and embedded tools only)."""

    async def SignInGuest(
        self, request: lobby_pb2.SignInGuestRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.SignInGuestResponse:
        if not self.device_sign_in:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                               LobbyReason.DEVICE_SIGN_IN_RETIRED, DEVICE_SIGN_IN_RETIRED)
        low, high = DEVICE_ID_CHARS
        device_id = check_id(request.device_id, "device_id", min_chars=low, max_chars=high)
        display_name = clean_display_name(request.display_name)
        player_id, name = await asyncio.to_thread(
            self.tables.store.guest, device_id, display_name, f"g-{uuid.uuid4().hex[:16]}",
        )
        token = mint_token(self._signer, player_id, Role.PLAYER, ttl_seconds=self._ttl)
        now = self._clock()
        return lobby_pb2.SignInGuestResponse(
            player_id=player_id, display_name=name, token=token,
            expires_at_ms=now + self._ttl * 1000, server_time_ms=now,
        )

    async def CreateTable(
        self, request: lobby_pb2.CreateTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.CreateTableResponse:
        player = current_identity().player_id
        name = await self._name_of(current_identity())
        change = tables.new_table(
            uuid.uuid4().hex[:12], request.settings, player, name, secrets.token_hex(4)
        )
        table = await self.tables.create(change)
        _log.info("table_created", table_id=table.table_id, host=player)
        return lobby_pb2.CreateTableResponse(table=table)

    async def ListTables(
        self, request: lobby_pb2.ListTablesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ListTablesResponse:
        identity = current_identity()
        size = request.page_size or DEFAULT_LIST_SIZE
        if size > MAX_LIST_SIZE:
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST,
                               f"page_size: at most {MAX_LIST_SIZE}")
        after = check_id(request.page_token, "page_token", min_chars=0)
        # One more than the page: whether a next page exists, without a second query.
        listed = await asyncio.to_thread(
            self.tables.store.listed, request.game_type,
            include_playing=request.include_playing, limit=size + 1, after=after,
            include_private=identity.role is Role.ADMIN,
        )
        reply = lobby_pb2.ListTablesResponse(
            tables=[tables.for_viewer(table, identity.player_id) for table in listed[:size]]
        )
        if len(listed) > size:
            reply.next_page_token = listed[size - 1].table_id
        return reply

    async def GetTable(
        self, request: lobby_pb2.GetTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.GetTableResponse:
        player = current_identity().player_id
        if request.table_id:
            table = await self.tables.get(request.table_id)
        else:
            table = await asyncio.to_thread(self.tables.store.by_game, request.game_id)
        return lobby_pb2.GetTableResponse(table=tables.for_viewer(table, player))

    async def JoinTable(
        self, request: lobby_pb2.JoinTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.JoinTableResponse:
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
                raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, LobbyReason.INVITE_REQUIRED,
                                   f"table {quoted_input(table_id)} is private: join with its "
                                   "invite code")
        name = await self._name_of(current_identity())
        seat = request.seat if request.HasField("seat") else None
        joined = await self.tables.apply(
            table_id, lambda table: tables.join(table, player, name, seat)
        )
        await self._record_seat_control(joined, player, log_pb2.SEAT_CONTROL_REASON_REJOINED)
        return lobby_pb2.JoinTableResponse(table=joined)

    async def _name_of(self, identity: Identity) -> str:
        """What the table shows for the caller: the name their token carries (the accounts
        service's), else the name of a guest of the lobby's own sign-in, else their id."""
        if identity.display_name:
            return identity.display_name
        return await asyncio.to_thread(self.tables.store.name_of, identity.player_id)

    async def LeaveTable(
        self, request: lobby_pb2.LeaveTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.LeaveTableResponse:
        player = current_identity().player_id
        table = await self.leave_table(request.table_id, player)
        return lobby_pb2.LeaveTableResponse(table=tables.for_viewer(table, player))

    async def leave_table(self, table_id: str, player: str) -> lobby_pb2.Table:
        """``player`` stands up from ``table_id`` (a bot takes their seat in a running
        match, recorded in its log); the table after.

        :raises LobbyError: if the player is not seated there.
        """
        table = await self.tables.apply(table_id, lambda table: tables.leave(table, player))
        await self._record_seat_control(table, player, log_pb2.SEAT_CONTROL_REASON_LEFT)
        return table

    async def _record_seat_control(self, table: lobby_pb2.Table, player: str,
                                   reason: int) -> None:
        """Tell the game service who now plays ``player``'s seat of the table's running
        match (a bot after a leave, the player after a return), so that its log, which the
        bots follow, says so; a no-op there when the log says so already. A game service
        that cannot be reached is logged: the table stands, and the player's next stream
        gives the seat back anyway."""
        seat = tables.seat_of(table, player)
        if table.status != lobby_pb2.TABLE_STATUS_PLAYING or not table.game_id or seat is None:
            return
        taken = table.seats[seat].taken_over_by_bot
        try:
            await self.games.control_seat(
                table.game_id, seat, bot=taken,
                bot_level=tables.bot_level_name(table.settings.bot_level) if taken else "",
                reason=reason,
            )
        except grpc.aio.AioRpcError as error:
            _log.warning("seat_control_not_recorded", game_id=table.game_id, seat=seat,
                         code=error.code().name)

    async def ChooseSeat(
        self, request: lobby_pb2.ChooseSeatRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.ChooseSeatResponse:
        player = current_identity().player_id
        return lobby_pb2.ChooseSeatResponse(table=await self.tables.apply(
            request.table_id, lambda table: tables.choose_seat(table, player, request.seat)
        ))

    async def AddBot(
        self, request: lobby_pb2.AddBotRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.AddBotResponse:
        player = current_identity().player_id
        return lobby_pb2.AddBotResponse(table=await self.tables.apply(
            request.table_id,
            lambda table: tables.add_bot(table, player, request.seat, request.level),
        ))

    async def SetTableChat(
        self, request: lobby_pb2.SetTableChatRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.SetTableChatResponse:
        player = current_identity().player_id
        return lobby_pb2.SetTableChatResponse(table=await self.tables.apply(
            request.table_id, lambda table: tables.set_chat(table, player, request.chat)))

    async def StartGame(
        self, request: lobby_pb2.StartGameRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.StartGameResponse:
        player = current_identity().player_id
        return lobby_pb2.StartGameResponse(
            table=await self._start(request.table_id, player, tables.start)
        )

    async def Rematch(
        self, request: lobby_pb2.RematchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.RematchResponse:
        player = current_identity().player_id
        return lobby_pb2.RematchResponse(
            table=await self._start(request.table_id, player, tables.rematch)
        )

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
                raise ServiceError(grpc.StatusCode.ABORTED, LobbyReason.CONCURRENT_CHANGE,
                                   f"table {quoted_input(table_id)} changed while starting; "
                                   "retry")
            return starting(fresh, player, game_id)

        table = await self.tables.apply(table_id, commit)
        _log.info("game_started", table_id=table_id, game_id=table.game_id)
        return table

    async def QuickMatch(
        self, request: lobby_pb2.QuickMatchRequest, context: grpc.aio.ServicerContext
    ) -> lobby_pb2.QuickMatchResponse:
        return lobby_pb2.QuickMatchResponse(table=await self._quick_match(request))

    async def _quick_match(self, request: lobby_pb2.QuickMatchRequest) -> lobby_pb2.Table:
        player = current_identity().player_id
        name = await self._name_of(current_identity())
        settings = tables.quick_match_settings(request.game_type, requested_players(request))
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
        change = tables.new_table(
            uuid.uuid4().hex[:12], settings, player, name, secrets.token_hex(4)
        )
        return await self.tables.create(change)

    async def WatchTable(
        self, request: lobby_pb2.WatchTableRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[lobby_pb2.WatchTableResponse]:
        player = current_identity().player_id
        table_id = request.table_id
        wake = self.tables.watchers.register(table_id)
        try:
            table = await self.tables.get(table_id)
            if tables.seat_of(table, player) is None:  # an onlooker: limited like spectators
                admit_spectator(f"table:{table_id}")
            yield lobby_pb2.WatchTableResponse(update=lobby_pb2.TableUpdate(
                kind=lobby_pb2.TABLE_UPDATE_KIND_SNAPSHOT, version=table.version,
                at_ms=self._clock(), table=tables.for_viewer(table, player),
            ))
            version = table.version
            while True:
                raise_if_cancelling()  # wait_for below may swallow a client's cancel (3.11)
                wake.clear()
                updates = await asyncio.to_thread(
                    self.tables.store.updates_after, table_id, version
                )
                if updates:
                    table = tables.for_viewer(await self.tables.get(table_id), player)
                for item in updates:
                    item.table.CopyFrom(table)
                    yield lobby_pb2.WatchTableResponse(update=item)
                    version = item.version
                if not updates:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), WATCH_POLL_SECONDS)
        finally:
            self.tables.watchers.forget(table_id, wake)
