"""One Hokm round's trick play as mutable ints: the state a search plays forward.

:class:`FastRound` holds what trick play needs (docs/rules/hokm.md "Playing tricks", "Scoring a
round", "Two players"): a card mask per seat, the trick on the table, tricks won, and
with two players the two piles. Its rules are the kernels of :mod:`engine.hokm._core`
(follow suit, the trick's winner, when a round is decided, how it scores), so they exist
once; ``tests/engine/hokm/test_fast_core.py`` replays its random rounds through the
engine and compares every legal set, trick winner and score.

.. warning::
   Like python-chess's ``push``, :meth:`FastRound.play` and :meth:`FastRound.take_pile`
   trust their input: a card that is not legal, or a move after the round ended, corrupts
   the state. Check with :meth:`FastRound.legal_mask` first.

>>> from engine.core.cards import parse_cards, mask_of, card_name
>>> from engine.hokm.rules import resolve_rules
>>> from dast.v1 import hokm_pb2
>>> hands = [mask_of(parse_cards(text)) for text in ("A♠ 2♥", "K♠ 3♥", "2♠ A♥", "3♠ K♥")]
>>> rnd = FastRound.deal(resolve_rules(hokm_pb2.HokmRules()), hakem=0, trump=1, hands=hands)
>>> for card in parse_cards("A♠ K♠ 2♠"):
...     rnd.play(card)
>>> card_name(rnd.legal_mask().bit_length() - 1)  # seat 3 must follow spades
'3♠'
>>> rnd.play(parse_cards("3♠")[0]); rnd.leader, rnd.tricks_won
(0, [1, 0, 0, 0])
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from engine.core.cards import Card, CardSet
from engine.hokm import _core
from engine.hokm.rules import HokmOptions
from engine.hokm.state import HokmState, Phase


class FastRound:
    """A round from the first lead to its end, mutated in place (``copy`` to branch)."""

    __slots__ = (
        "hakem", "hakem_won", "hands", "leader", "options", "over", "pile_a", "pile_b",
        "piles_drawn", "seats", "taking", "trick", "tricks_won", "trump", "turn",
    )

    options: HokmOptions
    seats: int
    hakem: int
    trump: int
    hands: list[CardSet]
    """Each seat's cards."""
    leader: int
    """Who led the trick on the table (or leads the next one)."""
    turn: int
    """The seat to play, or with ``taking`` the trick's winner choosing a pile."""
    trick: list[Card]
    """The trick on the table, in play order from ``leader``."""
    tricks_won: list[int]
    pile_a: tuple[Card, ...]
    """Two players: pile A from its top; ``piles_drawn`` cards are gone from each pile."""
    pile_b: tuple[Card, ...]
    piles_drawn: int
    taking: bool
    """Two players: the last trick's winner (``turn``) must take a pile's top card."""
    over: bool
    hakem_won: bool
    """Set once ``over``: whether the hakem's side won the round."""

    @classmethod
    def deal(
        cls, options: HokmOptions, hakem: int, trump: int, hands: Sequence[CardSet],
        pile_a: Sequence[Card] = (), pile_b: Sequence[Card] = (),
    ) -> FastRound:
        """A round about to start: the hakem leads the first trick."""
        rnd = cls()
        rnd.options = options
        rnd.seats = options.seats
        rnd.hakem = hakem
        rnd.trump = trump
        rnd.hands = list(hands)
        rnd.leader = rnd.turn = hakem
        rnd.trick = []
        rnd.tricks_won = [0] * options.seats
        rnd.pile_a, rnd.pile_b = tuple(pile_a), tuple(pile_b)
        rnd.piles_drawn = 0
        rnd.taking = rnd.over = rnd.hakem_won = False
        return rnd

    @classmethod
    def from_state(cls, state: HokmState) -> FastRound:
        """The round of an engine state in the ``PLAY`` or ``TAKE_PILE`` phase.

        :raises ValueError: in any other phase.
        """
        if state.phase not in (Phase.PLAY, Phase.TAKE_PILE):
            raise ValueError(f"no trick play in phase {state.phase.name}")
        rnd = cls.deal(state.options, state.hakem, state.trump, state.hands,
                       state.pile_a, state.pile_b)
        rnd.leader, rnd.turn = state.leader, state.turn
        rnd.trick = list(state.trick)
        rnd.tricks_won = list(state.tricks_won)
        rnd.taking = state.phase == Phase.TAKE_PILE
        return rnd

    def copy(self) -> FastRound:
        """An independent copy (hands, trick and tricks won are new lists)."""
        other = FastRound.__new__(FastRound)
        for name in FastRound.__slots__:
            setattr(other, name, getattr(self, name))
        other.hands = self.hands[:]
        other.trick = self.trick[:]
        other.tricks_won = self.tricks_won[:]
        return other

    @property
    def has_piles(self) -> bool:
        """Two players: cards are left in the piles."""
        return self.piles_drawn < len(self.pile_a)

    def legal_mask(self) -> CardSet:
        """The cards the seat to play may play (0 while a pile must be taken or when over)."""
        if self.taking or self.over:
            return 0
        return _core.legal_play_mask(self.hands[self.turn], self.trick)

    def play(self, card: Card) -> None:
        """The seat to play plays ``card`` (trusted; see the module warning)."""
        turn = self.turn
        self.hands[turn] &= ~(1 << card)
        trick = self.trick
        trick.append(card)
        if len(trick) < self.seats:
            self.turn = (turn + 1) % self.seats
            return
        self._finish_trick()

    def _finish_trick(self) -> None:
        winner = (self.leader + _core.winning_index(self.trick, self.trump)) % self.seats
        self.tricks_won[winner] += 1
        self.trick = []
        self.leader = self.turn = winner
        decided = _core.round_winner(self.options, self.hakem, self.tricks_won)
        if decided is not None:
            self.over, self.hakem_won = True, decided
        elif self.piles_drawn < len(self.pile_a):
            self.taking = True

    def take_pile(self, pile: int) -> None:
        """The last trick's winner takes pile ``pile``'s top (0 = A, 1 = B) and the other
        seat the other pile's top (trusted; two players only)."""
        drawn = self.piles_drawn
        tops = (self.pile_a[drawn], self.pile_b[drawn])
        winner = self.turn
        self.hands[winner] |= 1 << tops[pile]
        self.hands[1 - winner] |= 1 << tops[1 - pile]
        self.piles_drawn = drawn + 1
        self.taking = False

    def score(self) -> _core.RoundScore:
        """How the finished round scores (only once ``over``)."""
        return _core.score_round(self.options, self.hakem, self.tricks_won, self.hakem_won)

    def side_of(self, seat: int) -> bool:
        """Whether ``seat`` plays on the hakem's side."""
        return _core.is_hakem_side(self.options, self.hakem, seat)


def random_playout(rnd: FastRound, rng: random.Random) -> int:
    """Play ``rnd`` to its end with uniformly random legal moves; the moves made.

    The benchmark of the core (``bench/bots.py``): one tight loop over the same methods a
    search uses, picking the ``k``-th card of the legal mask by clearing its lowest bits.
    """
    moves = 0
    draw = rng.random
    while not rnd.over:
        if rnd.taking:
            rnd.take_pile(1 if draw() < 0.5 else 0)
            moves += 1
            continue
        mask = rnd.legal_mask()
        for _ in range(int(draw() * mask.bit_count())):
            mask &= mask - 1
        rnd.play((mask & -mask).bit_length() - 1)
        moves += 1
    return moves
