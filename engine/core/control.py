"""Seat control in the log: which seats a bot plays in a person's place, for every game.

A seat taken over by a bot (its player disconnected, timed out or left) and handed back is
an event of the game's log like any other (``Event.seat_control``), so a replay, an audit,
the stats and every bot replica know from the log alone who controls each seat and which
moves a person made. The rules of a game never see these events: :class:`ControlledGame`
wraps a game module (``engine.registry`` wraps every registered game) and handles them
itself, so each game's ``decide``/``evolve`` stays as it is.

How the wrapper keeps the game unaware:

- The state is :class:`ControlledState`: the game's own state, the log's seq, and who
  controls each seat. The game's state counts only its own events; a game event at log seq
  ``n`` reaches the game as seq ``n - shift`` (``shift``: the seat-control events before
  it), and the events the game decides are renumbered back. While no seat changed hands
  (``shift`` 0, nearly every match) events pass through untouched.
- A seat-control event repeats the log's pending ``deadline_ms`` (the last event's), so
  "the last event carries the pending deadline" still holds for the timers and the turn
  runs out when it would have.
- :func:`decide_control` is the rule: a seat exists, is a person's (a bot seated from the
  start is the bot's for good), the match is not over, a takeover names the bot's level;
  a takeover of a seat a bot already plays, or a return of a seat its player holds, decides
  nothing (an empty list), which makes requests idempotent and two replicas' requests at
  the same moment one event (the store's ``(game_id, seq)`` arbitrates, the loser decides
  again and finds nothing to do).
- ``redact`` leaves seat-control events whole (they hide nothing), ``command_for`` gives
  back the command an event records, so :func:`engine.core.audit.audit_log` re-derives them
  like any move.

>>> from engine import hokm
>>> game = ControlledGame(hokm)
>>> game.NAME
'hokm'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.core.protocol import Game, MatchSetup

MAX_BOT_LEVEL = 32
"""Characters a bot level's name may have."""


class ControlCode(StrEnum):
    """Violation codes of seat-control commands."""

    SEAT_IS_A_BOT = "seat_is_a_bot"
    """The seat's player is a bot from the start: nobody takes it over or gives it back."""
    BOT_LEVEL_REQUIRED = "bot_level_required"


@dataclass(frozen=True, slots=True)
class SeatHolder:
    """Who plays a seat: its player (``bot`` False) or a bot standing in at ``bot_level``."""

    bot: bool = False
    bot_level: str = ""
    reason: int = log_pb2.SEAT_CONTROL_REASON_UNSPECIFIED
    """A ``SeatControlReason`` value: why the seat last changed hands."""
    requested_by: str = ""
    since_seq: int = 0
    """The seq of the event that gave the seat to its holder (0: from the start)."""

    def as_message(self, seat: int) -> log_pb2.SeatControl:
        """The holder as the ``SeatControl`` message views carry."""
        return log_pb2.SeatControl(
            seat=seat, bot=self.bot, bot_level=self.bot_level, reason=self.reason,  # type: ignore[arg-type]
            requested_by=self.requested_by,
        )


class ControlledState(NamedTuple):
    """A game's state with the log's seat control (see the module docstring).

    A named tuple rather than a frozen dataclass: one is built for every event replayed,
    and a tuple is built several times faster.
    """

    inner: Any
    """The game's own state (it has seen ``seq - shift`` events)."""
    seq: int
    shift: int
    holders: tuple[SeatHolder, ...]
    """Per seat, who plays it now."""
    bot_seats: frozenset[int]
    """Seats whose player is a bot from the start."""
    deadline_ms: int = 0
    """The pending deadline the log's last event carries (repeated by seat-control events)."""


def is_seat_control(event: log_pb2.Event | log_pb2.Command) -> bool:
    """Whether ``event`` (or a command) is about seat control rather than the game."""
    return event.HasField("seat_control")


def seat_control_command(
    seat: int, *, bot: bool, bot_level: str = "", reason: int, requested_by: str,
    at_ms: int = 0,
) -> log_pb2.Command:
    """The command handing ``seat`` to a bot at ``bot_level`` (``bot``) or back to its player.

    >>> seat_control_command(2, bot=True, bot_level="basic", reason=1,
    ...                      requested_by="service:presence").seat_control.bot_level
    'basic'
    """
    return log_pb2.Command(seat=seat, at_ms=at_ms, seat_control=log_pb2.SeatControl(
        seat=seat, bot=bot, bot_level=bot_level if bot else "", reason=reason,  # type: ignore[arg-type]
        requested_by=requested_by,
    ))


def decide_control(state: ControlledState | None, command: log_pb2.Command
                   ) -> list[log_pb2.Event]:
    """The seat-control event ``command`` causes: one event, or none when the seat is
    already so controlled.

    :raises InvalidCommand: for a seat the match lacks, or a takeover without a bot level.
    :raises RuleViolation: before the match starts, or for a bot's own seat (after it ends:
        :meth:`ControlledGame.decide`, which knows the game).
    """
    if state is None:
        raise RuleViolation(Code.WRONG_PHASE, "no match to control a seat of")
    wanted = command.seat_control
    if wanted.seat >= len(state.holders):
        raise InvalidCommand(Code.INVALID_SEAT, f"the match has no seat {wanted.seat}")
    if wanted.seat in state.bot_seats:
        raise RuleViolation(ControlCode.SEAT_IS_A_BOT,
                            f"seat {wanted.seat} is a bot's from the start (at seq {state.seq})")
    if wanted.bot and not 0 < len(wanted.bot_level) <= MAX_BOT_LEVEL:
        raise InvalidCommand(ControlCode.BOT_LEVEL_REQUIRED,
                             f"a takeover names the bot's level (1 to {MAX_BOT_LEVEL} characters)")
    if state.holders[wanted.seat].bot == wanted.bot:
        return []  # already so: nothing to record
    event = log_pb2.Event(seq=state.seq + 1, at_ms=command.at_ms,
                          deadline_ms=state.deadline_ms)
    event.seat_control.CopyFrom(wanted)
    if not wanted.bot:
        event.seat_control.bot_level = ""
    return [event]


def _renumbered(event: log_pb2.Event, seq: int) -> log_pb2.Event:
    copy = log_pb2.Event()
    copy.CopyFrom(event)
    copy.seq = seq
    return copy


class ControlledGame:
    """A game module with seat control added (implements :class:`~engine.core.protocol.Game`).

    Every name the wrapper does not define (a game's extra hooks, ``ChoiceEntries``) is the
    game module's own.
    """

    def __init__(self, game: Game) -> None:
        self.game = game
        self.GAME_TYPE: common_pb2.GameType.ValueType = game.GAME_TYPE
        self.NAME: str = game.NAME

    def __getattr__(self, name: str) -> Any:
        return getattr(self.game, name)

    def __repr__(self) -> str:
        return f"ControlledGame({self.NAME})"

    def start(self, rules: Any, seed: bytes, players: Sequence[common_pb2.Player], *,
              at_ms: int = 0, server_seed_chosen: bool = False) -> list[log_pb2.Event]:
        """The game's ``start`` (no seat has changed hands yet)."""
        return self.game.start(rules, seed, players, at_ms=at_ms,
                               server_seed_chosen=server_seed_chosen)

    def decide(self, state: ControlledState | None, command: log_pb2.Command
               ) -> list[log_pb2.Event]:
        """:func:`decide_control` for a seat-control command, else the game's ``decide``."""
        if is_seat_control(command):
            if state is not None and self.game.is_over(state.inner):
                raise RuleViolation(Code.GAME_OVER,
                                    f"the match is over (at seq {state.seq}): no seat changes")
            return decide_control(state, command)
        if state is None:
            return self.game.decide(None, command)
        events = self.game.decide(state.inner, command)
        if state.shift:
            for event in events:  # freshly made by the game: renumbered in place
                event.seq += state.shift
        return events

    def evolve(self, state: ControlledState | None, event: log_pb2.Event) -> ControlledState:
        """Apply one event: a seat-control one to the holders, any other to the game.

        :raises ValueError: if ``event.seq`` does not follow ``state.seq`` (the game's own
            check, for its events).
        """
        if state is None:
            setup = self.game.setup_of(event)
            players = setup.players
            return ControlledState(
                inner=self.game.evolve(None, event), seq=event.seq, shift=0,
                holders=tuple(SeatHolder() for _ in players),
                bot_seats=frozenset(s for s, player in enumerate(players) if player.is_bot),
                deadline_ms=event.deadline_ms,
            )
        if event.HasField("seat_control"):
            if event.seq != state.seq + 1:
                raise ValueError(f"event seq {event.seq} does not follow seq {state.seq}")
            change = event.seat_control
            holders = list(state.holders)
            holders[change.seat] = SeatHolder(
                change.bot, change.bot_level, change.reason, change.requested_by, event.seq
            )
            return ControlledState(state.inner, event.seq, state.shift + 1, tuple(holders),
                                   state.bot_seats, event.deadline_ms)
        # The game checks that the event follows its own state (renumbered, it follows
        # exactly when it follows this one).
        shift = state.shift
        own = _renumbered(event, event.seq - shift) if shift else event
        return ControlledState(self.game.evolve(state.inner, own), event.seq, shift,
                               state.holders, state.bot_seats, event.deadline_ms)

    def replay(self, events: Iterable[log_pb2.Event]) -> ControlledState | None:
        """Fold :meth:`evolve` over a log."""
        state: ControlledState | None = None
        for event in events:
            state = self.evolve(state, event)
        return state

    def legal(self, state: ControlledState, seat: int) -> list[log_pb2.Command]:
        """The game's legal commands of ``seat``."""
        return self.game.legal(state.inner, seat)

    def view(self, state: ControlledState, seat: int | None) -> Message:
        """The game's view for ``seat`` (who controls each seat: :func:`holders_of`)."""
        return self.game.view(state.inner, seat)

    def redact(self, event: log_pb2.Event, seat: int | None) -> log_pb2.Event:
        """A seat-control event whole (it hides nothing), any other as the game redacts it."""
        return event if is_seat_control(event) else self.game.redact(event, seat)

    def to_act(self, state: ControlledState) -> int | None:
        """The seat the game waits for."""
        return self.game.to_act(state.inner)

    def is_over(self, state: ControlledState) -> bool:
        """Whether the match has ended."""
        return self.game.is_over(state.inner)

    def setup_of(self, first_event: log_pb2.Event) -> MatchSetup:
        """The game's ``setup_of``."""
        return self.game.setup_of(first_event)

    def command_for(self, event: log_pb2.Event) -> log_pb2.Command | None:
        """The command an event records: a seat-control one's, or the game's."""
        if is_seat_control(event):
            return log_pb2.Command(seat=event.seat_control.seat, at_ms=event.at_ms,
                                   seat_control=event.seat_control)
        return self.game.command_for(event)

    def revealed_seed(self, event: log_pb2.Event) -> bytes | None:
        """The server seed the game's final event reveals (never a seat-control event)."""
        return None if is_seat_control(event) else self.game.revealed_seed(event)


def holders_of(state: Any) -> tuple[SeatHolder, ...]:
    """Who plays each seat in ``state`` (a :class:`ControlledState`; empty otherwise)."""
    return state.holders if isinstance(state, ControlledState) else ()
