"""Round robin for small fields: every two entrants share a table; an odd field sits one
out per round; the schedule is fixed at the start."""

from __future__ import annotations

import itertools

import pytest

from engine.tournament import Entry, Format, Phase, VariantSpec, hand_spec, hokm_spec
from engine.tournament.pairing import round_robin_schedule

from .support import make_run, play_round


def _meetings(run_tables: list[list[tuple[str, ...]]]) -> dict[frozenset[str], int]:
    met: dict[frozenset[str], int] = {}
    for tables in run_tables:
        for group in tables:
            for a, b in itertools.combinations(group, 2):
                key = frozenset((a, b))
                met[key] = met.get(key, 0) + 1
    return met


@pytest.mark.parametrize("entrants", [4, 5, 8])
def test_round_robin_of_pairs_meets_every_opponent_exactly_once(entrants: int) -> None:
    run = make_run(entrants, format=Format.ROUND_ROBIN)
    expected_rounds = entrants - 1 if entrants % 2 == 0 else entrants
    assert run.state.rounds_planned == expected_rounds
    played: list[list[tuple[str, ...]]] = []
    while run.state.phase is Phase.RUNNING:
        played.append([t.entrants for t in run.state.tables])
        if entrants % 2:
            assert len(run.state.byes) == 1
        play_round(run, lambda table: 0)
    met = _meetings(played)
    assert set(met.values()) == {1}
    assert len(met) == entrants * (entrants - 1) // 2


def test_round_robin_odd_field_sits_everyone_out_once() -> None:
    run = make_run(5, format=Format.ROUND_ROBIN)
    byes: list[str] = []
    while run.state.phase is Phase.RUNNING:
        byes.extend(run.state.byes)
        play_round(run, lambda table: 0)
    assert sorted(byes) == [f"e{i}" for i in range(5)]


@pytest.mark.parametrize(
    ("variant", "entrants"), [(hokm_spec(3), 6), (hand_spec(4), 8), (hand_spec(3), 7)]
)
def test_round_robin_at_bigger_tables_seats_every_two_together(
    variant: VariantSpec, entrants: int
) -> None:
    run = make_run(entrants, variant=variant, format=Format.ROUND_ROBIN)
    played: list[list[tuple[str, ...]]] = []
    while run.state.phase is Phase.RUNNING:
        played.append([t.entrants for t in run.state.tables])
        play_round(run, lambda table: 0)
    assert len(_meetings(played)) == entrants * (entrants - 1) // 2


def test_round_robin_of_individuals_with_random_partners_covers_every_pair() -> None:
    run = make_run(8, entry=Entry.INDIVIDUALS, format=Format.ROUND_ROBIN)
    played: list[list[tuple[str, ...]]] = []
    while run.state.phase is Phase.RUNNING:
        played.append([t.entrants for t in run.state.tables])
        play_round(run, lambda table: 0)
    assert len(_meetings(played)) == 28


def test_round_robin_schedule_is_a_function_of_the_seed_order() -> None:
    order = [f"x{i}" for i in range(7)]
    assert round_robin_schedule(order, 3) == round_robin_schedule(order, 3)
    assert round_robin_schedule(order, 2) != round_robin_schedule(order[::-1], 2)


@pytest.mark.parametrize("size", [2, 3, 4, 5, 6, 7, 8])
def test_round_robin_schedule_covers_every_pair_for_every_allowed_field(size: int) -> None:
    """The schedule depends only on the field's size (names only label positions), so
    checking every size up to the round-robin limit proves it always ends and covers."""
    for count in range(2, 17):
        order = [f"x{i}" for i in range(count)]
        rounds = round_robin_schedule(order, size)
        assert len(rounds) <= 64
        met = _meetings([list(tables) for tables in rounds])
        assert len(met) == count * (count - 1) // 2, f"{count} entrants, {size} a table"
