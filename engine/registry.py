"""The games the engine serves, by game type and by name."""

from __future__ import annotations

from typing import Final

from dast.v1 import common_pb2, log_pb2
from engine import hand, hokm
from engine.core.errors import Code, InvalidCommand
from engine.core.protocol import Game

GAMES: Final[dict[int, Game]] = {
    common_pb2.GAME_TYPE_HOKM: hokm,
    common_pb2.GAME_TYPE_HAND: hand,
}
GAMES_BY_NAME: Final[dict[str, Game]] = {game.NAME: game for game in GAMES.values()}
_ONEOF_NAMES: Final[dict[str, Game]] = {"hokm": hokm, "hand": hand}


def game_of_event(event: log_pb2.Event) -> Game:
    """The game an event belongs to.

    :raises InvalidCommand: if the event carries no game's payload.
    """
    kind = event.WhichOneof("game")
    game = _ONEOF_NAMES.get(kind or "")
    if game is None:
        raise InvalidCommand(Code.WRONG_GAME, f"event seq {event.seq} carries no known game")
    return game
