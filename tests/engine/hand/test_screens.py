"""The cheap screens ahead of the exact search never rule out what the search finds
(engine/hand/screens.py: necessary conditions only, or ``legal`` would miss moves)."""

from __future__ import annotations

import random

import pytest

from engine.core.cards import iter_cards, mask_of
from engine.hand.candidates import candidate_melds
from engine.hand.cards import JOKERS, JOKERS_MASK, is_joker
from engine.hand.opening import _cached_hand, _cached_opening
from engine.hand.screens import (
    alive_faces,
    has_partner,
    one_joker_bound,
    opening_value,
    reach,
)
from engine.hand.solver import _alive as solver_alive
from engine.hand.solver import best_opening, can_go_out
from tests.engine.hand.table import cards


def _hands(count: int, seed: int) -> list[list[int]]:
    """Random 14 to 17-card hands, a third with both jokers and a third with one."""
    rng = random.Random(seed)
    hands = []
    for index in range(count):
        naturals = rng.sample(range(104), 17)
        jokers = list(JOKERS[: 2 - index % 3])
        hands.append((jokers + naturals)[: 14 + index % 4])
    return hands


@pytest.mark.parametrize("max_jokers", [1, 2])
def test_the_opening_bound_and_the_dead_cards_never_cut_a_real_opening(max_jokers: int) -> None:
    for hand in _hands(150, max_jokers):
        seen = reach(mask_of(hand), max_jokers)
        best = best_opening(hand, keep=0, max_jokers=max_jokers)
        assert best.total <= seen.opening_bound, hand
        melded = {card for meld in best.melds for card in meld.cards}
        for card in melded:
            assert is_joker(card) or seen.alive >> (card % 52) & 1, (hand, card)
        dead = [c for c in hand if not is_joker(c) and not seen.alive >> (c % 52) & 1]
        assert len(dead) == seen.dead


def test_every_card_of_a_candidate_meld_has_a_partner_in_the_hand() -> None:
    for hand in _hands(100, 7):
        mask = mask_of(hand)
        for meld in candidate_melds(hand):
            for card in meld.cards:
                if not is_joker(card):
                    assert has_partner(mask & ~(1 << card), card % 52), (hand, card)


def test_a_lone_card_has_no_partner_and_runs_wrap_at_the_ace_only() -> None:
    assert not has_partner(mask_of(cards("5♠ 9♥ K♣")), cards("2♦")[0])
    assert has_partner(mask_of(cards("K♠")), cards("A♠")[0])
    assert has_partner(mask_of(cards("2♠")), cards("A♠")[0])
    assert not has_partner(mask_of(cards("3♠' Q♥")), cards("K♠")[0])


@pytest.mark.parametrize("max_jokers", [1, 2])
def test_the_alive_faces_are_the_ones_the_solver_keeps(max_jokers: int) -> None:
    # The solver memo by a hand's live part (engine/hand/opening.py) relies on this: the
    # screen's alive faces are exactly those the search keeps (solver._alive, no table).
    for hand in _hands(300, 10 + max_jokers):
        counts = [0] * 52
        for card in hand:
            if not is_joker(card):
                counts[card % 52] += 1
        jokers = sum(1 for card in hand if is_joker(card))
        expected = solver_alive(counts, jokers, max_jokers, [], [])
        assert alive_faces(mask_of(hand), max_jokers) == expected, hand


def test_the_opening_values_read_off_tables_add_up_card_by_card() -> None:
    rng = random.Random(3)
    for _ in range(500):
        faces, twins = rng.getrandbits(52), rng.getrandbits(52)
        for ace in (11, 12, 15):
            by_card = sum(
                (ace if face % 13 == 12 else min(face % 13 + 2, 10)) * (1 + (twins >> face & 1))
                for face in range(52)
                if faces >> face & 1
            )
            assert opening_value(faces, twins, ace) == by_card


@pytest.mark.parametrize("max_jokers", [1, 2])
def test_hands_with_the_same_live_cards_get_the_solvers_own_answer(max_jokers: int) -> None:
    # A seat that cannot open draws and discards mostly dead cards: the memo answers such
    # hands from the first one searched; every answer must still be the search's own.
    rng = random.Random(40 + max_jokers)
    for hand in _hands(120, 20 + max_jokers):
        mask = mask_of(hand)
        rest = [card for card in range(106) if not mask >> card & 1]
        for _ in range(4):  # the hand, then hands a card apart (a dead one when there is)
            for floor in (0, 51):
                opening = best_opening(mask, max_jokers=max_jokers, keep=1, floor=floor)
                cached = _cached_opening(mask, None, 1, max_jokers, floor)
                assert cached == (opening.total, opening.melds), hand
            must_use = next(iter_cards(mask))
            plan = can_go_out(
                mask, has_opened=False, open_min=51, max_jokers=max_jokers, must_use=must_use
            )
            expected = None if plan is None or not plan.is_hand else (plan.total, plan.melds)
            assert _cached_hand(mask, must_use, 51, 1, max_jokers, True) == expected, hand
            alive = reach(mask, max_jokers).alive
            held = list(iter_cards(mask))
            dead = [c for c in held if not is_joker(c) and not alive >> (c % 52) & 1]
            mask &= ~(1 << rng.choice(dead or held))
            mask |= 1 << rest.pop(rng.randrange(len(rest)))


def _crowded_hands(count: int, seed: int) -> list[list[int]]:
    """Hands of one joker and 13 to 16 naturals from 5 ranks and one whole suit: many
    naturals alive only thanks to the joker, and many melds."""
    rng = random.Random(seed)
    hands = []
    for index in range(count):
        low = rng.randrange(13)
        pool = [c for c in range(104) if (c % 13 - low) % 13 < 5 or c % 52 // 13 == 0]
        hands.append([JOKERS[index % 2], *rng.sample(pool, 13 + index % 4)])
    return hands


@pytest.mark.parametrize("ace_low_value", [1, 11, 13])
def test_the_single_joker_bound_never_cuts_a_real_opening(ace_low_value: int) -> None:
    # With one joker and one joker a meld, the naturals alive only thanks to it count as
    # one meld's worth (screens.one_joker_bound, in reach and inside the search).
    for hand in _crowded_hands(200, ace_low_value):
        mask = mask_of(hand)
        best = best_opening(hand, keep=0, ace_low_value=ace_low_value)
        assert best.total <= reach(mask, 1, ace_low_value).opening_bound, hand
        faces = (mask | mask >> 52) & (1 << 52) - 1
        twins = mask & mask >> 52 & (1 << 52) - 1
        alive = reach(mask, 1).alive
        top = max(11, ace_low_value)
        assert best.total <= one_joker_bound(faces, twins, alive, top), hand


@pytest.mark.parametrize("max_jokers", [1, 2])
def test_a_hands_live_part_lists_the_same_candidate_melds(max_jokers: int) -> None:
    # playable_melds lists and remembers a hand's melds by its live part.
    for hand in _hands(150, 30 + max_jokers) + _crowded_hands(150, 30 + max_jokers):
        mask = mask_of(hand)
        alive = reach(mask, max_jokers).alive
        live = mask & (alive | alive << 52 | JOKERS_MASK)
        assert candidate_melds(live, max_jokers=max_jokers) == candidate_melds(
            mask, max_jokers=max_jokers
        ), hand
