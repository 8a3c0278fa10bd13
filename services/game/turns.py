"""Who acts next, as the replies and stream messages tell each seat (game.proto "Whose turn").

Every game answers ``to_act(state)`` and ``view(state, seat)`` (the view lists the seat's
legal commands), so the service tells a client whose turn it is, and hands the seat to act
its view, without knowing the game. A client then needs no GetView after each event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dast.v1 import game_pb2
from engine.core.payload import put
from engine.core.protocol import Game
from services.game.names import NO_NAMES, name_players
from services.platform.store import SeatName

NextToAct = tuple[int, ...]
"""The seats that must act next, in seat order (empty: nobody, the match is over)."""


def next_to_act(game: Game, state: Any) -> NextToAct:
    """The seats that must act in ``state``."""
    if game.is_over(state):
        return ()
    seat = game.to_act(state)
    return () if seat is None else (seat,)


def turn_for(seats: NextToAct, viewer: int | None) -> game_pb2.Turn:
    """The ``Turn`` message ``viewer`` (a seat, or None for a spectator) receives."""
    return game_pb2.Turn(next_to_act=seats, your_turn=viewer is not None and viewer in seats)


def fill_turn(
    reply: game_pb2.SubscribeResponse | game_pb2.SubmitCommandResponse,
    game: Game, state: Any, viewer: int | None, seats: NextToAct, *, always_view: bool,
    names: Mapping[str, SeatName] = NO_NAMES,
) -> None:
    """Set ``reply``'s ``turn`` for ``viewer``, and its ``view`` (with the seats' ``names``)
    when ``always_view`` or the viewer is to act (the view's legal commands are what it may
    do)."""
    turn = turn_for(seats, viewer)
    reply.turn.CopyFrom(turn)
    if always_view or turn.your_turn:
        put(reply, game.SCHEMA, named_view(game, state, viewer, names))


def named_view(game: Game, state: Any, viewer: int | None,
               names: Mapping[str, SeatName]) -> Any:
    """``game``'s view of ``state`` for ``viewer``, with the seats' ``names`` in it."""
    view = game.view(state, viewer)
    name_players(game, view, names)
    return view
