"""Hand's match state: a frozen record of compact ints, folded from the events.

A hand of cards is a :data:`~engine.core.cards.CardSet` over the 106 card ids (bit ``c``
set when card ``c`` is held); the stock and the discard pile are tuples because their
order matters (the stock's top is its first card, the discard pile's top its last).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import IntEnum
from typing import Any, Final

from dast.v1 import common_pb2, hand_pb2
from engine.core.cards import CardSet
from engine.hand.melds import Meld
from engine.hand.rules import Options


class Phase(IntEnum):
    """Where a round stands (the values of :class:`~dast.v1.hand_pb2.HandPhase`)."""

    BETWEEN_DEALS = hand_pb2.HAND_PHASE_UNSPECIFIED
    """After the match start, a round's end or a void round, before the next deal."""
    FIRST_DISCARD = hand_pb2.HAND_PHASE_FIRST_DISCARD
    """The player after the dealer holds 15 cards and discards only."""
    DRAW = hand_pb2.HAND_PHASE_DRAW
    PLAY = hand_pb2.HAND_PHASE_PLAY
    """The turn's card is drawn: meld, lay off, retrieve jokers, then discard."""
    MATCH_OVER = hand_pb2.HAND_PHASE_MATCH_OVER


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table: its id (its position in :attr:`HandState.melds`), who laid it,
    and the cards with the faces they stand for."""

    id: int
    owner: int
    meld: Meld


@dataclass(frozen=True)
class HandState:
    """Everything the rules need, as of event ``seq`` (``evolve`` copies it with
    :func:`evolved`; without ``__slots__`` on purpose, so that a copy is one dict
    update)."""

    seq: int
    options: Options
    rules: hand_pb2.HandRules
    """The resolved rules as recorded at the match start (never mutated)."""
    players: tuple[common_pb2.Player, ...]
    commitment: bytes
    client_seeds: tuple[bytes, ...]
    server_seed: bytes
    """Known from the stored log's first event; empty in a seat's redacted copy."""
    phase: Phase = Phase.BETWEEN_DEALS
    round: int = 0
    """1-based number of the round being played (void deals keep the number)."""
    deal: int = 0
    """1-based count of deals, void ones included: it names each deal's random stream."""
    dealer: int = 0
    turn: int = 0
    hands: tuple[CardSet, ...] = ()
    stock: tuple[int, ...] = ()
    """Top first."""
    discard: tuple[int, ...] = ()
    """Bottom first: the top card is the last."""
    melds: tuple[TableMeld, ...] = ()
    opened: tuple[bool, ...] = ()
    shown: CardSet = 0
    """Cards of this round seen in public and since taken into a hand (from the discard
    pile, or a joker retrieved from the table): where they are is no secret."""
    must_use: int | None = None
    """The card taken from the discard pile this turn, until a new meld uses it."""
    opened_this_turn: bool = False
    """The seat to act laid its first melds of the round this turn: every lay-down of
    the turn belongs to its opening."""
    opening_total: int = 0
    """The opening value of the melds laid this turn by a seat opening this turn (the
    threshold counts them all, whatever the number of commands)."""
    opening_to_beat: int = 0
    """The round's highest opening when the turn began (``must_beat_previous``)."""
    turn_first_meld: int = 0
    """The id the turn's first new meld gets: melds below it were on the table before."""
    used_older_melds: bool = False
    """The seat laid off on, or took a joker from, a meld that was on the table before
    this turn (another seat's): going out this turn is then no "hand"."""
    highest_opening: int = 0
    restocks: int = 0
    totals: tuple[int, ...] = ()
    rounds_played: int = 0
    deadline_ms: int = 0
    winners: tuple[int, ...] = ()

    @property
    def seats(self) -> int:
        """The number of seats."""
        return self.options.players

    def next_seat(self, seat: int) -> int:
        """The seat that plays after ``seat`` (rules: "next seat = seat + 1 mod n")."""
        return (seat + 1) % self.options.players


def team_of(seat: int) -> int:
    """A seat's partnership: seats 0 and 2 are team 0, seats 1 and 3 team 1."""
    return seat % 2


_FIELDS: Final = frozenset(field.name for field in fields(HandState))
_new = object.__new__


def evolved(state: HandState, **changes: Any) -> HandState:
    """``state`` with ``changes``: what :func:`dataclasses.replace` does, several times
    faster on a record this wide (one dict copy instead of ``__init__`` setting each of
    the fields through ``object.__setattr__``). ``evolve`` copies the state once per
    event, the hottest copy of the engine.

    :raises TypeError: for a name that is not a field.
    """
    if not changes.keys() <= _FIELDS:
        raise TypeError(f"HandState has no field {sorted(changes.keys() - _FIELDS)}")
    return copied(state, changes)


def copied(state: HandState, changes: dict[str, Any]) -> HandState:
    """:func:`evolved` for callers whose ``changes`` name fields only (``evolve``'s
    handlers, which spell them out): no check, no keyword arguments to gather."""
    new = _new(HandState)
    attributes = new.__dict__
    attributes.update(state.__dict__)
    attributes.update(changes)
    return new
