"""Seating, hakem selection and dealing, all drawn from the match's deterministic stream.

Every shuffle is ``DeterministicRandom(deck_key, label).shuffle(range(52))`` (or one
``randbelow``) with its own label, so each can be re-derived on its own:

- ``match/seating``: ``random_partners`` permutes the players once, before round 1.
- ``round/<r>/hakem/<attempt>``: the deck shown to choose the hakem (``first_ace``,
  ``ace_in_five``; a new attempt when nobody holds an ace in five).
- ``round/<r>/hakem``: ``random`` selection, one ``randbelow(seats)``.
- ``round/<r>/deal``: the deal of round ``r`` (the deck is always shuffled again for the
  deal, after a face-up selection; docs/rules/hokm.md "Choosing the hakem").

The deal of a shuffled deck (docs/rules/hokm.md "Dealing and trump", "Three players", "Two
players") takes cards from the front of the deck in this fixed order:

1. the hakem's first packet of 5 (the only cards the hakem sees before declaring trump);
2. a packet of 5 to every other seat, in playing order from the seat after the hakem;
3. packets of 4 round the table in playing order starting with the hakem, a packet cut
   to what the seat still needs, until every seat holds its hand (13; 16 with three
   players: 5+4+4+3);
4. what is left: with three players the 4-card kitty, with two players pile A (the next
   13 cards, the first being its face-up top) then pile B (the last 13).

With four players that is 5 + 5·3 + 4·4 + 4·4 = 52 cards.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from dast.v1 import hokm_pb2
from engine.core.cards import PACK_SIZE, RANKS_PER_SUIT, Card, Rank
from engine.core.rng import DeterministicRandom
from engine.hokm.rules import FIRST_PACKET, PACKET, HokmOptions


def seating(deck_key: bytes, seats: int) -> tuple[int, ...]:
    """``random_partners``: ``result[seat]`` is the index in the given players of who sits
    at ``seat`` (docs/rules/hokm.md "Seats and teams")."""
    return tuple(DeterministicRandom(deck_key, "match/seating").shuffle(list(range(seats))))


class HakemDraw(NamedTuple):
    """The cards shown to choose the hakem (one tuple of (seat, card) per attempt)."""

    attempts: tuple[tuple[tuple[int, Card], ...], ...]
    hakem: int


def _shuffled(deck_key: bytes, label: str) -> list[Card]:
    return DeterministicRandom(deck_key, label).shuffle(list(range(PACK_SIZE)))


def draw_hakem(options: HokmOptions, deck_key: bytes, round_no: int) -> HakemDraw:
    """Choose the hakem with ``hakem_selection`` (docs/rules/hokm.md "Choosing the hakem").

    - ``first_ace``: cards face up one at a time to seats 0, 1, 2, … until the first ace.
    - ``ace_in_five``: five cards to each seat, one at a time round the table; the holder of
      the highest ace by ♠ > ♥ > ♣ > ♦ is hakem; nobody has one: a new shuffle.
    - ``random``: a uniform seat.
    """
    seats = options.seats
    if options.hakem_selection == hokm_pb2.HAKEM_SELECTION_RANDOM:
        rng = DeterministicRandom(deck_key, f"round/{round_no}/hakem")
        return HakemDraw((), rng.randbelow(seats))
    attempts: list[tuple[tuple[int, Card], ...]] = []
    while True:
        deck = _shuffled(deck_key, f"round/{round_no}/hakem/{len(attempts) + 1}")
        if options.hakem_selection == hokm_pb2.HAKEM_SELECTION_ACE_IN_FIVE:
            shown = tuple((i % seats, deck[i]) for i in range(FIRST_PACKET * seats))
            aces = [(card, seat) for seat, card in shown if card % RANKS_PER_SUIT == Rank.ACE]
            attempts.append(shown)
            if aces:
                # The lowest card id is the ace of the highest suit (♠ is suit 0).
                return HakemDraw(tuple(attempts), min(aces)[1])
            continue
        for i, card in enumerate(deck):
            if card % RANKS_PER_SUIT == Rank.ACE:
                attempts.append(tuple((j % seats, deck[j]) for j in range(i + 1)))
                return HakemDraw(tuple(attempts), i % seats)


class Deal(NamedTuple):
    """One round's deal, in the order of the module docstring."""

    first: tuple[Card, ...]
    """The hakem's first 5 cards."""
    rest: tuple[tuple[Card, ...], ...]
    """Per seat, the cards dealt after the first packet (in dealing order)."""
    leftover: tuple[Card, ...]
    """Three players: the kitty; two players: pile A then pile B."""

    def full_hand(self, seat: int, hakem: int) -> tuple[Card, ...]:
        """Every card ``seat`` receives."""
        return (self.first if seat == hakem else ()) + self.rest[seat]


@lru_cache(maxsize=256)
def deal_round(options: HokmOptions, deck_key: bytes, round_no: int, hakem: int) -> Deal:
    """Shuffle and deal round ``round_no`` (label ``round/<r>/deal``).

    A pure function of its arguments, kept for the last rounds dealt: a round's opening
    deals the hakem's first packet and the trump declaration the rest of the same deal,
    and the shuffle (about 13 HMAC blocks) is the dearest step of a round.
    """
    deck = _shuffled(deck_key, f"round/{round_no}/deal")
    seats, size = options.seats, options.hand_size
    first = tuple(deck[:FIRST_PACKET])
    position = FIRST_PACKET
    rest: list[list[Card]] = [[] for _ in range(seats)]
    order = [(hakem + k) % seats for k in range(seats)]
    for seat in order[1:]:
        rest[seat].extend(deck[position : position + FIRST_PACKET])
        position += FIRST_PACKET
    held = [FIRST_PACKET] * seats
    while any(count < size for count in held):
        for seat in order:
            take = min(PACKET, size - held[seat])
            rest[seat].extend(deck[position : position + take])
            position += take
            held[seat] += take
    return Deal(first, tuple(tuple(cards) for cards in rest), tuple(deck[position:]))


def split_piles(leftover: tuple[Card, ...]) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
    """Two players: pile A and pile B from the 26 undealt cards (top card first)."""
    half = len(leftover) // 2
    return leftover[:half], leftover[half:]
