"""The game protocol (DESIGN.md "The game protocol"): the surface every game offers.

A game is a module (``engine.hokm``, ``engine.hand``) with these functions; the services
and the audit use nothing else, so adding a game means adding one such module and
registering it in :data:`engine.registry`.

- ``start(rules, seed, players, *, at_ms)`` gives the first events of a match.
- ``decide(state, command)`` gives the events a command causes, or raises
  :class:`~engine.core.errors.RuleViolation`. Pure and total.
- ``evolve(state, event)`` applies one event (``state`` is None for the first). Trusts its
  input: it checks only that ``event.seq`` follows ``state.seq``.
- ``replay(events)`` folds ``evolve`` over a log.
- ``legal(state, seat)`` lists the seat's legal commands (empty when it is not to act).
- ``view(state, seat)`` is what ``seat`` may see (``None``: a spectator).
- ``redact(event, seat)`` is ``event`` with every card hidden from ``seat`` removed.
- ``to_act(state)`` is the seat that must act now (None when nobody must).
- ``is_over(state)`` tells whether the match has ended.
- ``setup_of(first_event)`` gives back the arguments of ``start`` recorded in a log's first
  event, and ``command_for(event)`` the command a player-caused event records (None for
  events the rules cause by themselves). Together they let an auditor re-run a whole match.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import Message

from dast.v1 import common_pb2, log_pb2


@dataclass(frozen=True, slots=True)
class MatchSetup:
    """What ``start`` was given, as recorded in a log's first event."""

    rules: Message
    players: tuple[common_pb2.Player, ...]
    server_seed_commitment: bytes
    server_seed: bytes
    """Empty in a copy of the log that was redacted for a seat."""


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
