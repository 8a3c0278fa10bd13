"""What table talk and reports need to know of a table: who sits there, whether it takes
spectators, what its talk allows, which match it plays.

The lobby owns the tables; no service package imports another's, so this package states
what it needs (:class:`TableDirectory`) and the composition root (:mod:`services.compose`)
answers it from the lobby's store of the same process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from dast.v1 import lobby_pb2


@dataclass(frozen=True, slots=True)
class TableFacts:
    """A table as table talk sees it."""

    table_id: str
    game_id: str
    """The match it plays or played last ("" before its first)."""
    seated: frozenset[str]
    """The people sitting at it now (not bots, not players who left mid-match)."""
    players: frozenset[str]
    """Every person on a seat of its current (or last) match, those who left included (of
    the match asked for, from :meth:`TableDirectory.match`)."""
    spectators_allowed: bool
    chat: lobby_pb2.ChatMode.ValueType

    @classmethod
    def of(cls, table: lobby_pb2.Table) -> TableFacts:
        """The facts of the lobby's ``table``."""
        people = [seat for seat in table.seats if seat.player_id and not seat.is_bot]
        return cls(table.table_id, table.game_id,
                   frozenset(seat.player_id for seat in people if not seat.left),
                   frozenset(seat.player_id for seat in people),
                   table.settings.spectators_allowed, table.settings.chat)

    def may_watch(self, player_id: str) -> bool:
        """Whether ``player_id`` is one of the table's people: seated, or a spectator of a
        table that takes them."""
        return player_id in self.seated or self.spectators_allowed


class TableDirectory(Protocol):
    """Where table talk finds tables."""

    async def table(self, table_id: str) -> TableFacts | None:
        """The table ``table_id``, None when there is none."""
        ...

    async def table_of_game(self, game_id: str) -> TableFacts | None:
        """The table playing (or that last played) the match ``game_id``, None when none
        does."""
        ...

    async def match(self, game_id: str) -> TableFacts | None:
        """The table of the match ``game_id`` as it stood when the match started (its
        ``players`` are the match's, whatever the table played since), None when no table
        played it."""
        ...
