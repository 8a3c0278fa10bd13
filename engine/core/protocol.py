"""The game protocol (docs/architecture.md "The game protocol"): the surface every game offers.

A game is a module (``engine.hokm``, ``engine.hand``) with these functions; the services
and the audit use nothing else, so adding a game means adding one such module and
registering it in :data:`engine.registry`.

- ``start(rules, seed, players, *, at_ms, server_seed_chosen)`` gives the first events of
  a match (``server_seed_chosen``: an admin chose the seed; the fairness record says so).
- ``decide(state, command)`` gives the events a command causes, or raises
  :class:`~engine.core.errors.RuleViolation`. Pure and total.
- ``evolve(state, event)`` applies one event (``state`` is None for the first). Trusts its
  input: it checks only that ``event.seq`` follows ``state.seq``.
- ``replay(events)`` folds ``evolve`` over a log.
- ``legal(state, seat)`` lists the seat's legal commands (empty when it is not to act).
  A game may list a *choice entry* that stands for many commands at once instead of
  listing them all (Hokm's three-player set-aside: "any 4 of these 20 cards", not 4,845
  commands); such a game also implements :class:`ChoiceEntries`, and callers turn entries
  into commands with :mod:`engine.core.legal`. In a game without it every entry is a
  command.
- ``view(state, seat)`` is what ``seat`` may see (``None``: a spectator).
- ``redact(event, seat)`` is ``event`` with every card hidden from ``seat`` removed.
- ``to_act(state)`` is the seat that must act now (None when nobody must).
- ``is_over(state)`` tells whether the match has ended.
- ``setup_of(first_event)`` gives back the arguments of ``start`` recorded in a log's first
  event, and ``command_for(event)`` the command a player-caused event records (None for
  events the rules cause by themselves). Together they let an auditor re-run a whole match.

What the services need to know about a game comes from the same module, so that no service
names a game (docs/architecture.md "Adding a game"):

- ``SCHEMA`` (:class:`Schema`): the game's rules, command, event and view messages and the
  member of the protos' game oneofs that carries them (its typed member, or
  :data:`OTHER_FIELD` for a game outside the schema, packed in ``google.protobuf.Any``;
  :mod:`engine.core.payload` puts them in and takes them out).
- ``PLAYER_COUNTS``: the seat counts a table may have, the default first;
  ``seat_count(rules)`` the seats a rules message asks for, and
  ``rules_for_players(players)`` the default rules of a match of ``players`` (0: the
  default count), both raising :class:`~engine.core.errors.RuleViolation`
  (``invalid_players``) for a count the game does not have.
- ``table_rules(rules, *, target_score, turn_seconds)``: the rules of a match from a
  table's rules message and the app's two table settings (0: the game's default score,
  untimed).
- ``TURN_STEPS``: how many decisions one turn may take (1 in a trick game; Hand's draw,
  melds, lay-offs and discard are many), so that a timer plays a timed-out seat's whole
  turn.
- ``bot_policies(budget)``: the bot policies by level (``random``, ``greedy``, ``basic``,
  ``expert``; :data:`BOT_LEVELS`), each a pure function of a seat's view and a seeded
  generator; ``budget`` bounds a searching level's decision.
- ``summarize(view)`` (:class:`ViewSummary`): the seat, the seat to act, whether the match
  is over and whether the view lists legal commands, read from any of the game's views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2
from engine.core.budget import Budget
from engine.core.rng import DeterministicRandom

OTHER_FIELD: Final = "other"
"""The member of every game oneof of the protos that carries a game outside the schema, its
message packed in ``google.protobuf.Any`` (log.proto "Games outside the schema")."""
BOT_LEVELS: Final = ("random", "greedy", "basic", "expert")
"""The bot levels every game offers, weakest first (``bot_policies`` returns one policy each)."""

Policy = Callable[[Any, DeterministicRandom], Any]
"""A bot: a seat's view and a seeded generator in, one of the view's legal commands out."""


@dataclass(frozen=True, slots=True)
class Schema:
    """Where a game's messages travel in the shared protos."""

    field: str
    """The member of the game oneofs (``Command.game``, ``Event.game``, the requests' rules,
    command and view) that carries them: the game's typed member, or :data:`OTHER_FIELD`."""
    rules: type[Message]
    command: type[Message]
    event: type[Message]
    view: type[Message]

    @property
    def is_packed(self) -> bool:
        """Whether the messages travel packed in ``google.protobuf.Any``."""
        return self.field == OTHER_FIELD


@dataclass(frozen=True, slots=True)
class ViewSummary:
    """What a service reads from a seat's view without knowing the game."""

    seat: int | None
    """The seat the view is for (None: a spectator's, public view)."""
    turn: int | None
    """The seat to act now, if any."""
    is_over: bool
    can_act: bool
    """The view lists legal commands for its seat."""
    players: tuple[common_pb2.Player, ...]


@dataclass(frozen=True, slots=True)
class MatchSetup:
    """What ``start`` was given, as recorded in a log's first event."""

    rules: Message
    players: tuple[common_pb2.Player, ...]
    server_seed_commitment: bytes
    server_seed: bytes
    """Empty in a copy of the log that was redacted for a seat."""
    server_seed_chosen: bool = False
    """Whether an admin chose the server seed (the operator knew every deal)."""


class Game(Protocol):
    """The protocol a game module implements (checked structurally by mypy)."""

    GAME_TYPE: common_pb2.GameType.ValueType
    NAME: str

    def start(
        self,
        rules: Any,
        seed: bytes,
        players: Sequence[common_pb2.Player],
        *,
        at_ms: int = 0,
        server_seed_chosen: bool = False,
    ) -> list[log_pb2.Event]: ...

    def decide(self, state: Any, command: log_pb2.Command) -> list[log_pb2.Event]: ...

    def evolve(self, state: Any, event: log_pb2.Event) -> Any: ...

    def replay(self, events: Iterable[log_pb2.Event]) -> Any: ...

    def legal(self, state: Any, seat: int) -> list[log_pb2.Command]: ...

    def view(self, state: Any, seat: int | None) -> Message: ...

    def redact(self, event: log_pb2.Event, seat: int | None) -> log_pb2.Event: ...

    def to_act(self, state: Any) -> int | None: ...

    def is_over(self, state: Any) -> bool: ...

    def setup_of(self, first_event: log_pb2.Event) -> MatchSetup: ...

    def command_for(self, event: log_pb2.Event) -> log_pb2.Command | None: ...

    def revealed_seed(self, event: log_pb2.Event) -> bytes | None: ...

    SCHEMA: Schema
    PLAYER_COUNTS: tuple[int, ...]
    TURN_STEPS: int

    def seat_count(self, rules: Any) -> int: ...

    def rules_for_players(self, players: int) -> Message: ...

    def table_rules(self, rules: Any, *, target_score: int, turn_seconds: int) -> Message: ...

    def bot_policies(self, budget: Budget) -> Mapping[str, Policy]: ...

    def summarize(self, view: Any) -> ViewSummary: ...


@runtime_checkable
class ChoiceEntries(Protocol):
    """What a game whose ``legal`` may list choice entries adds to :class:`Game`.

    An entry's commands have a fixed order, so that they can be counted, listed, drawn
    uniformly and looked up without being built all at once. A plain entry stands for
    itself alone.
    """

    def entry_size(self, entry: log_pb2.Command) -> int:
        """How many commands ``entry`` stands for (1 for a plain command)."""
        ...

    def entry_command(self, entry: log_pb2.Command, index: int) -> log_pb2.Command:
        """The command at ``index`` (``0 <= index < entry_size(entry)``) of ``entry``."""
        ...

    def entry_covers(self, entry: log_pb2.Command, command: log_pb2.Command) -> bool:
        """Whether ``command`` is one of the commands ``entry`` stands for."""
        ...
