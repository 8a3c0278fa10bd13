"""Hand's match state: a frozen record of compact ints, folded from the events.

A hand of cards is a :data:`~engine.core.cards.CardSet` over the 106 card ids (bit ``c``
set when card ``c`` is held); the stock and the discard pile are tuples because their
order matters (the stock's top is its first card, the discard pile's top its last).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

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


@dataclass(frozen=True, slots=True)
class HandState:
    """Everything the rules need, as of event ``seq``."""

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
    laid_off_this_turn: bool = False
    """The seat laid off or retrieved a joker this turn (a "hand" then is impossible)."""
    laying_hand: bool = False
    """The seat's opening left it one card: it may only discard it (rules "Hand")."""
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
