"""Seeding: by rating (equal ratings in the lot's order), or in a seeded random order."""

from __future__ import annotations

from engine.tournament import Seeding

from .support import make_run


def test_seed_order_follows_the_ratings() -> None:
    run = make_run(5, ratings=[1200, 1800, 1500, 900, 2000])
    assert run.state.seed_order == ("e4", "e1", "e2", "e0", "e3")


def test_equal_ratings_are_ordered_by_the_lot() -> None:
    run = make_run(6, ratings=[1500] * 6)
    assert run.state.seed_order == run.state.lot


def test_the_lot_depends_on_the_seed_only() -> None:
    lots = {make_run(8, seed=bytes([n]) * 32).state.lot for n in range(4)}
    assert len(lots) > 1
    assert make_run(8).state.lot == make_run(8).state.lot


def test_random_seeding_ignores_the_ratings() -> None:
    ratings = [1000 + 100 * i for i in range(8)]
    orders = {
        make_run(8, ratings=ratings, seeding=Seeding.RANDOM, seed=bytes([n]) * 32).state.seed_order
        for n in range(4)
    }
    assert len(orders) > 1
