"""Who plays a seat: a bot seated from the start, a bot standing in for a player, or a person.

:class:`SeatDirectory` is the question the bot service and the timers ask;
:class:`LobbySeats` answers it from the match's players (bots are ``is_bot`` players with
ids ``bot:<level>:<seat>``) and the lobby's table record (seats taken over by a bot).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from dast.v1 import common_pb2
from services.bot.policies import DEFAULT_LEVEL, bot_level
from services.lobby.store import LobbyStore, TableNotFound
from services.lobby.tables import bot_level_name


@dataclass(frozen=True)
class Control:
    """A bot plays the seat at ``level``; ``automatic`` when it stands in for a person."""

    level: str
    automatic: bool


class SeatDirectory(Protocol):
    """Answers who plays a seat of a match."""

    async def bot_control(self, game_id: str, seat: int, player: common_pb2.Player
                          ) -> Control | None:
        """The bot playing ``seat`` now, or None when a person does."""
        ...

    async def timeout_level(self, game_id: str, seat: int, player: common_pb2.Player) -> str:
        """The level of the bot that moves for ``seat`` when its time runs out."""
        ...


class PlayerSeats:
    """Bots are the match's ``is_bot`` players; nobody else is ever taken over."""

    async def bot_control(self, game_id: str, seat: int, player: common_pb2.Player
                          ) -> Control | None:
        """See :class:`SeatDirectory`."""
        return Control(bot_level(player.player_id), False) if player.is_bot else None

    async def timeout_level(self, game_id: str, seat: int, player: common_pb2.Player) -> str:
        """See :class:`SeatDirectory`."""
        return bot_level(player.player_id) if player.is_bot else DEFAULT_LEVEL


class LobbySeats(PlayerSeats):
    """:class:`PlayerSeats` plus the lobby's takeovers (read from the lobby store)."""

    def __init__(self, store: LobbyStore) -> None:
        self._store = store

    async def bot_control(self, game_id: str, seat: int, player: common_pb2.Player
                          ) -> Control | None:
        """See :class:`SeatDirectory`."""
        if player.is_bot:
            return Control(bot_level(player.player_id), False)
        try:
            table = await asyncio.to_thread(self._store.by_game, game_id)
        except TableNotFound:
            return None
        if seat < len(table.seats) and table.seats[seat].taken_over_by_bot:
            return Control(bot_level_name(table.settings.bot_level), True)
        return None

    async def timeout_level(self, game_id: str, seat: int, player: common_pb2.Player) -> str:
        """See :class:`SeatDirectory`."""
        if player.is_bot:
            return bot_level(player.player_id)
        try:
            table = await asyncio.to_thread(self._store.by_game, game_id)
        except TableNotFound:
            return DEFAULT_LEVEL
        return bot_level_name(table.settings.bot_level)
