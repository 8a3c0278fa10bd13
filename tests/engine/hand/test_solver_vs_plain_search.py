"""The exact solver agrees with the plain exact search of the benchmark on full-size hands.

The brute-force tests (test_solver_brute.py) cover small hands exhaustively; this one takes
random 14- and 15-card hands from the whole 106-card deck, as dealt in play, and checks
``best_opening`` against :mod:`bench.baselines.plain_meld_search`, an independent, naive
but exact search (docs/rules/hand.md "What the bot and the client need from the engine").
"""

from __future__ import annotations

import random

import pytest

from bench.baselines.plain_meld_search import best_opening_total
from engine.hand.cards import DECK_SIZE
from engine.hand.solver import best_opening


@pytest.mark.parametrize("seed", range(4))
def test_best_opening_equals_the_plain_exact_search_on_dealt_hands(seed: int) -> None:
    rng = random.Random(seed)
    for index in range(40):
        deck = list(range(DECK_SIZE))
        rng.shuffle(deck)
        hand = deck[: 14 + index % 2]
        assert best_opening(hand).total == best_opening_total(hand), hand


def test_greedy_trap_is_solved_by_both_searches() -> None:
    # docs/rules/hand.md: 6♠7♠8♠ + 6♣7♣8♣ + 8♦ — taking 8♠8♣8♦ as a set strands the rest.
    from engine.hand.cards import parse_hand_cards

    hand = parse_hand_cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 2♥")
    assert best_opening(hand).total == best_opening_total(hand) == 42
