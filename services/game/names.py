"""The display names of a game's seats: kept beside its signed log, never in it.

A finished log is sealed and cannot change, and a player who deletes their account takes
their name with them; so a name has no place in a log. ``CreateGame`` writes the players'
names to the store (``game_seat_names``, in the transaction that creates the game) and the
log's first event names each player by its opaque id only (:func:`log_players`). What the
service serves puts the names back (:func:`name_players`): GetView, the views that
SubmitCommand, Subscribe and Play send, and replay frames; events go out as the log holds
them. An account's erasure blanks the player's names and marks them deleted
(:meth:`SeatNames.erase`). A game created before names left the logs has no names here:
its views show what its log recorded.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Final

from google.protobuf.message import Message

from dast.v1 import common_pb2
from engine.core.protocol import Game
from services.platform.store import EventStore, SeatName

NO_NAMES: Final[Mapping[str, SeatName]] = {}
"""The names of a game stored without any (its log holds them)."""


def log_players(
    players: Iterable[common_pb2.Player],
) -> tuple[list[common_pb2.Player], list[SeatName]]:
    """The players as a new game's log records them (their display names emptied), and the
    names kept beside the log, by seat."""
    logged: list[common_pb2.Player] = []
    names: list[SeatName] = []
    for seat, player in enumerate(players):
        anonymous = common_pb2.Player()
        anonymous.CopyFrom(player)
        anonymous.display_name = ""
        logged.append(anonymous)
        names.append(SeatName(seat, player.player_id, player.display_name))
    return logged, names


def by_player(names: Iterable[SeatName]) -> dict[str, SeatName]:
    """``names`` by player id (the first seat of a player id named twice)."""
    found: dict[str, SeatName] = {}
    for name in names:
        found.setdefault(name.player_id, name)
    return found


def name_players(game: Game, view: Message, names: Mapping[str, SeatName]) -> None:
    """Put the seats' names into ``view`` (one of ``game``'s views), by player id; a player
    without a kept name keeps the name its log recorded. The players a view's summary lists
    are the view's own messages (:func:`engine.core.summary.summary_of`)."""
    if not names:
        return
    for player in game.summarize(view).players:
        name = names.get(player.player_id)
        if name is not None:
            player.display_name = name.display_name
            player.deleted = name.deleted


class SeatNames:
    """The seat names of the games a replica serves, read from the store once per game and
    kept (the most recently used ``max_cached``); an erasure drops what it changed."""

    def __init__(self, store: EventStore, *, max_cached: int = 20_000) -> None:
        self._store = store
        self._max_cached = max_cached
        self._cache: OrderedDict[str, Mapping[str, SeatName]] = OrderedDict()

    def remember(self, game_id: str, names: Iterable[SeatName]) -> Mapping[str, SeatName]:
        """Keep ``names`` as the game's (a game this replica creates)."""
        kept = by_player(names) or NO_NAMES
        self._cache[game_id] = kept
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._max_cached:
            self._cache.popitem(last=False)
        return kept

    def known(self, game_id: str) -> Mapping[str, SeatName]:
        """The game's names if this replica holds them (:data:`NO_NAMES` otherwise): for
        code that cannot wait on the store (a stream's shared responses), after
        :meth:`of` loaded them."""
        return self._cache.get(game_id, NO_NAMES)

    async def of(self, game_id: str) -> Mapping[str, SeatName]:
        """The game's names by player id (read from the store when not held)."""
        names = self._cache.get(game_id)
        if names is not None:
            self._cache.move_to_end(game_id)
            return names
        stored = await asyncio.to_thread(self._store.seat_names, game_id)
        return self.remember(game_id, stored)

    async def erase(self, player_id: str) -> int:
        """Blank ``player_id``'s names in every game (an erased account), in the store and
        in what this replica holds (the streams open on it show the change with their next
        view); how many seats changed in the store."""
        changed = await asyncio.to_thread(self._store.erase_names, player_id)
        for game_id, names in list(self._cache.items()):
            name = names.get(player_id)
            if name is not None:
                self._cache[game_id] = {
                    **names, player_id: SeatName(name.seat, player_id, "", deleted=True)}
        return changed
