"""The search's start read off masks (the solver's fast path) matches the one read off the
counts (engine/hand/_search.py), and the screen's alive faces agree whichever way a hand
is given (engine/hand/screens.py)."""

from __future__ import annotations

import random
from typing import Any

from engine.core.cards import mask_of
from engine.hand._search import Search
from engine.hand.screens import alive_faces, alive_of_faces, faces_of


def _search(counts: list[int], mode: str, **masks: Any) -> Search:
    return Search(
        counts=list(counts), jokers=1, mode=mode, max_jokers=1, ace_low_value=1,
        joker_penalty=15, keep=1, exact_left=False, runs=[], sets=[], spare_joker_room=0,
        **masks,
    )


def test_the_masks_given_by_the_solver_are_the_ones_read_off_the_counts() -> None:
    rng = random.Random(5)
    for _ in range(300):
        cards = rng.sample(range(104), rng.randint(1, 17))
        counts = [0] * 52
        present = twins = 0
        for card in cards:
            counts[card % 52] += 1
            if present >> card % 52 & 1:
                twins |= 1 << card % 52
            present |= 1 << card % 52
        for mode in ("open", "penalty", "none"):
            read = _search(counts, mode)
            given = _search(counts, mode, present=present, twins=twins)
            packed = sum(count << 2 * face for face, count in enumerate(counts))
            assert (read.present, read.twins, read.key) == (present, twins, packed)
            assert (given.key, given.points) == (read.key, read.points)
            weights = read.face_points
            assert read.points == sum(c * w for c, w in zip(counts, weights, strict=True))


def test_the_alive_faces_of_a_mask_and_of_its_faces_agree() -> None:
    rng = random.Random(6)
    for _ in range(500):
        jokers = rng.randint(0, 2)
        hand = mask_of(rng.sample(range(104), rng.randint(1, 17)) + [104, 105][:jokers])
        for max_jokers in (1, 2):
            assert alive_faces(hand, max_jokers) == alive_of_faces(
                faces_of(hand), jokers, max_jokers
            )
