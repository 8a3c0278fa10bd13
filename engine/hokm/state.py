"""The state of a Hokm match: compact ints and card masks behind clear names.

A :class:`HokmState` is an immutable :class:`~typing.NamedTuple` (cheap to copy with
``_replace``, compared field by field). Seats are ints ``0..seats-1``; cards are
``suit * 13 + rank`` and sets of cards are int masks (:mod:`engine.core.cards`); suits are
engine suits ``0 ♠ .. 3 ♦`` (the proto ``Suit`` is engine suit + 1); ``-1`` means "none".
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from dast.v1 import common_pb2, hokm_pb2
from engine.core.cards import Card, CardSet
from engine.hokm.rules import HokmOptions

NO_SEAT = -1
NO_SUIT = -1


class Phase(IntEnum):
    """What the match waits for. Values 1..5 equal :class:`~dast.v1.hokm_pb2.HokmPhase`."""

    DEALING = 0
    """Inside a batch: a round has started and the hakem is not yet dealt to."""
    DECLARE_TRUMP = hokm_pb2.HOKM_PHASE_DECLARE_TRUMP
    """The hakem holds 5 cards and must declare trump."""
    SET_ASIDE = hokm_pb2.HOKM_PHASE_SET_ASIDE
    """Three players: the hakem holds 20 cards and must lay 4 aside."""
    PLAY = hokm_pb2.HOKM_PHASE_PLAY
    """``turn`` must play a card."""
    TAKE_PILE = hokm_pb2.HOKM_PHASE_TAKE_PILE
    """Two players: the last trick's winner (``turn``) must take a pile's face-up card."""
    MATCH_OVER = hokm_pb2.HOKM_PHASE_MATCH_OVER
    """A side reached the target score."""
    ROUND_OVER = 6
    """Inside a batch: a round was scored and the next has not started."""


ACTING_PHASES = frozenset({Phase.DECLARE_TRUMP, Phase.SET_ASIDE, Phase.PLAY, Phase.TAKE_PILE})


class FinishedTrick(NamedTuple):
    """A trick of the current round that has been taken."""

    leader: int
    cards: tuple[Card, ...]
    """In play order, starting with the leader's card."""
    winner: int


class HokmState(NamedTuple):
    """Everything the rules need, rebuilt from the log by :func:`engine.hokm.replay`."""

    seq: int
    """The seq of the last event applied."""
    options: HokmOptions
    rules: hokm_pb2.HokmRules
    """The resolved rules as recorded in the start event (for views)."""
    players: tuple[common_pb2.Player, ...]
    """The players in seat order (after ``random_partners``)."""
    commitment: bytes
    server_seed: bytes
    """Empty when the log was redacted; needed to deal the next cards and for the reveal."""
    deck_key: bytes
    """Key of every shuffle of the match (:func:`engine.core.fairness.deck_key`)."""
    phase: Phase
    round: int
    """1-based number of the current round (0 before the first)."""
    hakem: int
    trump: int
    turn: int
    """The seat to act, or ``NO_SEAT``."""
    deadline_ms: int
    """When the seat to act must have acted (0: no deadline)."""
    hands: tuple[CardSet, ...]
    leader: int
    """Who led (or leads) the current trick."""
    trick: tuple[Card, ...]
    """Cards of the current trick in play order from ``leader``."""
    tricks: tuple[FinishedTrick, ...]
    """Finished tricks of the current round."""
    tricks_won: tuple[int, ...]
    played: CardSet
    """Cards played in this round (finished tricks and the current one)."""
    set_aside: CardSet
    """Three players: the cards the hakem laid aside this round."""
    pile_a: tuple[Card, ...]
    """Two players: pile A, top (face-up) card first."""
    pile_b: tuple[Card, ...]
    public: CardSet
    """Cards in hands that every seat has seen (two players: cards taken from the piles)."""
    scores: tuple[int, ...]
    winners: tuple[int, ...]
    """Set when the match is over."""

    @property
    def seats(self) -> int:
        """Number of seats."""
        return len(self.hands)

    def __repr__(self) -> str:
        from engine.core.cards import cards_text, iter_cards

        hands = " | ".join(cards_text(iter_cards(h)) for h in self.hands)
        return (
            f"<HokmState seq={self.seq} round={self.round} phase={self.phase.name} "
            f"hakem={self.hakem} trump={self.trump} turn={self.turn} hands=[{hands}] "
            f"trick=[{cards_text(self.trick)}] tricks_won={self.tricks_won} "
            f"scores={self.scores}>"
        )
