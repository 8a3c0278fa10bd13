"""The games the engine serves, by game type and by name.

Hokm and Hand are registered here; any other game is added with :func:`register` (the tests'
tiny trick game is), which is all a new game needs: the services find games by type, by
name or by the message they carry through this module only, and learn everything else
from the game module (:mod:`engine.core.protocol`).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2
from engine import hand, hokm
from engine.core.control import ControlledGame
from engine.core.errors import Code, InvalidCommand
from engine.core.payload import is_packed_as
from engine.core.protocol import Game

# Every game is served with seat control added (engine/core/control.py): taking a seat over
# for a bot and handing it back are events of its log, whatever the game.
GAMES: Final[dict[int, Game]] = {
    common_pb2.GAME_TYPE_HOKM: ControlledGame(hokm),
    common_pb2.GAME_TYPE_HAND: ControlledGame(hand),
}
DEFAULT_GAME_TYPE: Final = common_pb2.GAME_TYPE_HOKM
"""The game of a request that names none (a quick match without a game type)."""
GAMES_BY_NAME: Final[dict[str, Game]] = {game.NAME: game for game in GAMES.values()}
_TYPED_MEMBERS: Final[dict[str, Game]] = {
    game.SCHEMA.field: game for game in GAMES.values() if not game.SCHEMA.is_packed
}
"""The games of the schema by the oneof member carrying their messages (``hokm``)."""
_PACKED: Final[list[Game]] = []
"""The games registered at run time, whose messages travel packed (``other``)."""


def register(game: Game) -> Game:
    """Serve ``game`` (a module implementing :class:`~engine.core.protocol.Game`) from now on,
    with seat control added; returns the registered game.

    :raises ValueError: if its type, name or messages are another registered game's, or a
        game outside the schema does not travel in the ``other`` member.
    """
    if game.GAME_TYPE in GAMES or game.NAME in GAMES_BY_NAME:
        raise ValueError(f"a game of type {game.GAME_TYPE} or named {game.NAME!r} exists")
    if not game.SCHEMA.is_packed:
        raise ValueError(f"{game.NAME}: a game outside the schema travels packed "
                         f"(Schema.field 'other'), not in {game.SCHEMA.field!r}")
    events = {known.SCHEMA.event.DESCRIPTOR.full_name for known in _PACKED}
    if game.SCHEMA.event.DESCRIPTOR.full_name in events:
        raise ValueError(f"{game.NAME}: another game's events are "
                         f"{game.SCHEMA.event.DESCRIPTOR.full_name}")
    served = ControlledGame(game)
    GAMES[game.GAME_TYPE] = served
    GAMES_BY_NAME[game.NAME] = served
    _PACKED.append(served)
    return served


def unregister(game_type: int) -> None:
    """Stop serving the game of ``game_type`` registered with :func:`register` (tests)."""
    served = GAMES.get(game_type)
    if served is None or served not in _PACKED:
        raise ValueError(f"no game of type {game_type} was registered at run time")
    _PACKED.remove(served)
    del GAMES[game_type]
    del GAMES_BY_NAME[served.NAME]


def is_game_type(game_type: int) -> bool:
    """Whether a game of ``game_type`` (a ``dast.v1.GameType`` number) is served."""
    return game_type in GAMES


def game_of_message(container: Message, oneof: str, slot: str) -> Game | None:
    """The game whose ``slot`` message (``rules``, ``command``, ``event`` or ``view``)
    ``container``'s game ``oneof`` carries (None when it carries none or an unknown one)."""
    member = container.WhichOneof(oneof)
    if member is None:
        return None
    typed = _TYPED_MEMBERS.get(member)
    if typed is not None:
        return typed
    packed = getattr(container, member)
    for game in _PACKED:
        if is_packed_as(packed, getattr(game.SCHEMA, slot)):
            return game
    return None


def game_of_body(message: Message, slot: str) -> Game | None:
    """The game whose ``slot`` message type (``rules``, ``command``, ``event``, ``view``)
    ``message`` is (None for a message of no served game)."""
    for game in GAMES.values():
        if isinstance(message, getattr(game.SCHEMA, slot)):
            return game
    return None


def game_of_event(event: log_pb2.Event) -> Game:
    """The game an event belongs to.

    :raises InvalidCommand: if the event carries no game's payload.
    """
    game = game_of_message(event, "game", "event")
    if game is None:
        raise InvalidCommand(Code.WRONG_GAME, f"event seq {event.seq} carries no known game")
    return game
