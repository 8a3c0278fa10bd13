"""A match's result as the tournament engine wants it, read from the match's events.

The tournament engine knows no game: it wants each side's points and tricks and the sides
the game named winners (:class:`engine.tournament.SideResult`). This module reads them from
a log of any registered game, without naming one, through the game's public protocol:

- the log is replayed by the game's own ``replay`` and shown as the public (spectator)
  ``view``; every game's view lists, per seat, its running match score and, once the match
  is over, the winning seats (``winners``). The score is the view's one repeated integer
  field among :data:`SCORE_FIELDS` (the games' own words for it);
- tricks are those the game's round-ending events count per seat (a repeated integer field
  ``tricks`` of one entry per seat); a game without tricks counts none.

Partners share a total in every served game, so a side's points are its first seat's score
(not a sum), and its tricks the sum over its seats. A seat-control event (a bot standing
in) counts nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from dast.v1 import log_pb2
from engine.core.payload import take
from engine.core.protocol import Game
from engine.tournament import SideResult, VariantSpec

SCORE_FIELDS: Final = ("scores", "totals")
"""The names the games' views give the per-seat running match score."""
WINNERS_FIELD: Final = "winners"
TRICKS_FIELD: Final = "tricks"
_INTEGERS: Final = frozenset({
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
})


class UnreadableResult(ValueError):
    """The log is not one this module can read a result from (empty, or a game whose view
    lists no score)."""


@dataclass(frozen=True, slots=True)
class MatchReport:
    """A match's standing as the tournament engine takes it."""

    sides: tuple[SideResult, ...]
    winners: tuple[int, ...]
    """The winning sides (empty while the match is on)."""
    over: bool


def _per_seat(message: Message, name: str, seats: int) -> list[int] | None:
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None or not _is_repeated(field) or field.type not in _INTEGERS:
        return None
    values = [int(value) for value in getattr(message, name)]
    return values if len(values) == seats else None


def _is_repeated(field: FieldDescriptor) -> bool:
    repeated = getattr(field, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _game_message(event: log_pb2.Event, game: Game) -> Message | None:
    """The game's own event inside ``event`` (its kind's message), or None."""
    if event.HasField("seat_control") or event.WhichOneof("game") is None:
        return None
    body: Any = take(event, "game", game.SCHEMA, game.SCHEMA.event)
    kind = body.WhichOneof("kind") if "kind" in body.DESCRIPTOR.oneofs_by_name else None
    return getattr(body, kind) if kind else None


def match_report(game: Game, events: Sequence[log_pb2.Event], spec: VariantSpec
                 ) -> MatchReport:
    """The sides' points and tricks and the winning sides of the match ``events`` log.

    :raises UnreadableResult: for an empty log or a game whose view lists no score.
    """
    if not events:
        raise UnreadableResult("an empty log has no result")
    seats = spec.seats
    state = game.replay(events)
    view = game.view(state, None)
    scores = next((found for name in SCORE_FIELDS
                   if (found := _per_seat(view, name, seats)) is not None), None)
    if scores is None:
        raise UnreadableResult(f"the view of {game.NAME} lists no per-seat score")
    tricks = [0] * seats
    for event in events:
        message = _game_message(event, game)
        if message is None:
            continue
        counted = _per_seat(message, TRICKS_FIELD, seats)
        if counted is not None:
            tricks = [total + more for total, more in zip(tricks, counted, strict=True)]
    over = game.is_over(state)
    winner_seats = set(getattr(view, WINNERS_FIELD, ())) if over else set()
    sides = tuple(
        SideResult(points=scores[side[0]], tricks=sum(tricks[seat] for seat in side))
        for side in spec.sides
    )
    winners = tuple(index for index, side in enumerate(spec.sides)
                    if any(seat in winner_seats for seat in side))
    return MatchReport(sides, winners, over)
