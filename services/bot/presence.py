"""Presence: a seated player whose game stream is gone too long is replaced by a bot.

The game service knows when a Subscribe stream opens and closes. :class:`PresenceGameService`
is the game servicer with that hook (a subclass: the servicer itself is untouched): it
reports each player's streams to :class:`Presence`. When a player's last stream of a match
closes, the player is *away*; :meth:`Presence.sweep_forever` gives the seat of a player away
longer than ``grace_ms`` to the table's bot (a ``SEAT_TAKEN_OVER_BY_BOT`` update on the
lobby's table record and stream) and kicks the bot service so that the bot moves at once if
it is that seat's turn. A new stream of the player gives the seat back
(``SEAT_RETURNED``).

Scope: presence is tracked per game-service replica (in memory); the table record it writes
is shared (SQL, version-checked), so any replica's lobby and bots see the takeover. A player
who reconnects to another replica gets the seat back there, but the first replica still
counts the old stream as gone; route a match's streams to one replica (or share presence
through the bus) when running several.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import grpc
import structlog

from dast.v1 import game_pb2, game_pb2_grpc, lobby_pb2
from services.game.repository import GameRepository
from services.game.service import GameService, wall_clock_ms
from services.lobby import tables
from services.lobby.changes import Tables
from services.lobby.store import TableNotFound
from services.platform.auth import Role, current_identity
from services.platform.bus import Bus
from services.platform.errors import ServiceError, abort_with
from services.platform.metrics import GameMetrics, game_metrics
from services.platform.store import EventStore

_log = structlog.get_logger(component="presence")
Key = tuple[str, str]
"""(game_id, player_id)"""


class Presence:
    """Counts each player's open streams per match; hands away players' seats to bots."""

    def __init__(
        self, table_writer: Tables, *, grace_ms: int = 15_000,
        clock: Callable[[], int] = wall_clock_ms,
        on_takeover: Callable[[str], None] | None = None,
    ) -> None:
        self.tables = table_writer
        self.grace_ms = grace_ms
        self._clock = clock
        self._on_takeover = on_takeover
        self._streams: dict[Key, int] = {}
        self.away_since: dict[Key, int] = {}
        self._background: set[asyncio.Task[None]] = set()

    def set_on_takeover(self, on_takeover: Callable[[str], None]) -> None:
        """Call ``on_takeover(game_id)`` after each takeover (the bot service's kick)."""
        self._on_takeover = on_takeover

    def opened(self, game_id: str, player_id: str) -> None:
        """A stream of ``player_id`` on ``game_id`` opened: they are here (seat given back)."""
        key = (game_id, player_id)
        self._streams[key] = self._streams.get(key, 0) + 1
        self.away_since.pop(key, None)
        task = asyncio.create_task(self._give_back(game_id, player_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def closed(self, game_id: str, player_id: str) -> None:
        """A stream closed; with none left the player is away from now."""
        key = (game_id, player_id)
        left = self._streams.get(key, 0) - 1
        if left > 0:
            self._streams[key] = left
            return
        self._streams.pop(key, None)
        self.away_since[key] = self._clock()

    async def _give_back(self, game_id: str, player_id: str) -> None:
        with contextlib.suppress(TableNotFound):
            table = await asyncio.to_thread(self.tables.store.by_game, game_id)
            if any(s.player_id == player_id and s.taken_over_by_bot for s in table.seats):
                await self.tables.apply(table.table_id,
                                        lambda fresh: tables.give_back(fresh, player_id))
                _log.info("seat_returned", game_id=game_id, player_id=player_id)

    async def sweep(self) -> int:
        """Take over the seats of players away longer than the grace; return how many."""
        now = self._clock()
        taken = 0
        for key, since in list(self.away_since.items()):
            if now - since < self.grace_ms:
                continue
            del self.away_since[key]
            game_id, player_id = key
            try:
                table = await asyncio.to_thread(self.tables.store.by_game, game_id)
            except TableNotFound:
                continue
            seat = tables.seat_of(table, player_id)
            if seat is None or table.status != lobby_pb2.TABLE_STATUS_PLAYING:
                continue
            after = await self.tables.apply(table.table_id, _taking_over(game_id, seat))
            if after.seats[seat].taken_over_by_bot:
                taken += 1
                _log.info("seat_taken_over", game_id=game_id, player_id=player_id, seat=seat)
                if self._on_takeover is not None:
                    self._on_takeover(game_id)
        return taken

    async def sweep_forever(self, period_seconds: float | None = None) -> None:
        """Sweep every ``period_seconds`` (a quarter of the grace by default), forever."""
        period = period_seconds or max(self.grace_ms / 4000, 0.05)
        while True:
            try:
                await self.sweep()
            except Exception:
                _log.exception("presence_sweep_failed")
            await asyncio.sleep(period)


def _taking_over(game_id: str, seat: int) -> Callable[[lobby_pb2.Table], tables.Change]:
    def change(fresh: lobby_pb2.Table) -> tables.Change:
        if fresh.game_id != game_id:
            return tables.Change(fresh)  # the table moved on to another match
        return tables.take_over(fresh, [seat])

    return change


def _calling_player() -> str | None:
    """The player id of a player-role caller (None for services, admins, or no identity)."""
    with contextlib.suppress(Exception):
        identity = current_identity()
        if identity.role is Role.PLAYER:
            return identity.player_id
    return None


class PresenceGameService(GameService):
    """The game servicer with the lobby's table rules: it reports players' Subscribe streams
    to :class:`Presence`, and keeps players not seated at a table whose settings refuse
    spectators from watching its match (PERMISSION_DENIED, reason
    ``spectators_not_allowed``)."""

    def __init__(self, *args: object, presence: Presence, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.presence = presence
        self._watchers: dict[str, tuple[bool, frozenset[str]]] = {}

    async def _may_watch(self, game_id: str, player: str) -> bool:
        known = self._watchers.get(game_id)
        if known is None:
            try:
                table = await asyncio.to_thread(self.presence.tables.store.by_game, game_id)
            except TableNotFound:
                return True  # a match without a table: the game service's own rules
            known = (table.settings.spectators_allowed,
                     frozenset(seat.player_id for seat in table.seats))
            self._watchers[game_id] = known  # a match's seats never change
        spectators_allowed, seated = known
        return spectators_allowed or player in seated

    async def _refuse_spectator(self, context: grpc.aio.ServicerContext, game_id: str) -> None:
        await abort_with(context, ServiceError(
            grpc.StatusCode.PERMISSION_DENIED, "spectators_not_allowed",
            f"the table of game {game_id} allows no spectators",
        ))

    async def GetView(
        self, request: game_pb2.GetViewRequest, context: grpc.aio.ServicerContext
    ) -> game_pb2.GetViewResponse:
        player = _calling_player()
        if player is not None and not await self._may_watch(request.game_id, player):
            await self._refuse_spectator(context, request.game_id)
        return await super().GetView(request, context)

    async def Subscribe(
        self, request: game_pb2.SubscribeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[game_pb2.SubscribeResponse]:
        player = _calling_player()
        if player is not None:
            if not await self._may_watch(request.game_id, player):
                await self._refuse_spectator(context, request.game_id)
            self.presence.opened(request.game_id, player)
        try:
            async for reply in super().Subscribe(request, context):
                yield reply
        finally:
            if player is not None:
                self.presence.closed(request.game_id, player)


def mount_game_service_with_presence(
    server: grpc.aio.Server, store: EventStore, bus: Bus, notify: Callable[[], None],
    presence: Presence, *, metrics: GameMetrics | None = None,
    clock: Callable[[], int] = wall_clock_ms,
) -> PresenceGameService:
    """As :func:`services.game.app.mount_game_service`, with presence tracking."""
    service = PresenceGameService(
        GameRepository(store), bus, notify, metrics or game_metrics(), clock=clock,
        presence=presence,
    )
    game_pb2_grpc.add_GameServiceServicer_to_server(service, server)
    return service
