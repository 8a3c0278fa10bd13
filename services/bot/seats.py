"""Who plays a seat: a bot seated from the start, a bot standing in for a person, or a person.

Everything comes from the game's log, as the game service's views carry it: bots seated
from the start are the match's ``is_bot`` players (ids ``bot:<level>:<seat>``), and a seat a
bot took over is one whose latest seat-control event (``GetViewResponse.seat_control``)
gave it to a bot, with the bot's level. So every bot replica and timer knows the same, with
no other service's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.bot.policies import DEFAULT_LEVEL, SeatView, bot_level


@dataclass(frozen=True)
class Control:
    """A bot plays the seat at ``level``; ``automatic`` when it stands in for a person."""

    level: str
    automatic: bool


class SeatDirectory(Protocol):
    """Answers who plays a seat of a match, from a view of it."""

    def bot_control(self, view: SeatView, seat: int) -> Control | None:
        """The bot playing ``seat`` now, or None when a person does."""
        ...

    def timeout_level(self, view: SeatView, seat: int) -> str:
        """The level of the bot that moves for ``seat`` when its time runs out."""
        ...


class LogSeats:
    """:class:`SeatDirectory` from the log: ``is_bot`` players and seat-control events."""

    def bot_control(self, view: SeatView, seat: int) -> Control | None:
        """See :class:`SeatDirectory`."""
        player = view.summary.players[seat]
        if player.is_bot:
            return Control(bot_level(player.player_id), False)
        if seat < len(view.seat_control) and view.seat_control[seat].bot:
            return Control(view.seat_control[seat].bot_level or DEFAULT_LEVEL, True)
        return None

    def timeout_level(self, view: SeatView, seat: int) -> str:
        """See :class:`SeatDirectory` (a person's seat: the level a bot standing in has,
        else the level of the match's bots, else the default)."""
        control = self.bot_control(view, seat)
        return control.level if control is not None else table_bot_level(view)


def table_bot_level(view: SeatView) -> str:
    """The level the match's own bots play at (the table's), or the default without bots:
    the level of a bot taking a person's seat over."""
    for player in view.summary.players:
        if player.is_bot:
            return bot_level(player.player_id)
    return DEFAULT_LEVEL
