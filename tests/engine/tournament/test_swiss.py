"""Swiss pairing: equal match points meet, no rematch while one can be avoided, the planned
number of rounds, random partners for individuals, seats filled exactly once."""

from __future__ import annotations

import itertools
import math

import pytest

from engine.tournament import Entry, Format, Phase, hand_spec, hokm_spec
from engine.tournament.pairing import group_swiss

from .support import best_seed_wins, make_run, play_round


def test_swiss_round_two_seats_winners_with_winners() -> None:
    run = make_run(8, ratings=[2000 - 10 * i for i in range(8)])
    play_round(run, best_seed_wins(run))
    records = run.state.records
    for table in run.state.tables:
        points = {records[e].match_points for e in table.entrants}
        assert len(points) == 1, f"table {table.table} mixes match points {points}"


def test_swiss_round_one_seats_top_half_against_bottom_half_by_rating() -> None:
    run = make_run(8, ratings=[1000 + 10 * i for i in range(8)])
    # e7 is rated highest; the top half (e7..e4) meets the bottom half in order.
    tables = {frozenset(t.entrants) for t in run.state.tables}
    assert tables == {
        frozenset({"e7", "e3"}),
        frozenset({"e6", "e2"}),
        frozenset({"e5", "e1"}),
        frozenset({"e4", "e0"}),
    }


def test_swiss_plays_ceil_log2_rounds_by_default() -> None:
    run = make_run(9)
    assert run.state.rounds_planned == math.ceil(math.log2(9))


def test_swiss_ends_after_the_planned_rounds() -> None:
    run = make_run(6, rounds=3)
    for _ in range(3):
        assert run.state.phase is Phase.RUNNING
        play_round(run, best_seed_wins(run))
    assert run.state.phase is Phase.FINISHED
    assert run.state.round == 3


@pytest.mark.parametrize("entrants", [6, 8, 10])
def test_swiss_never_rematches_when_avoidable(entrants: int) -> None:
    """Every round of a field playing n-1 rounds with two per table: a rematch-free pairing
    exists in every round (a round robin does it), and the engine finds one."""
    run = make_run(entrants, rounds=entrants - 1)
    met: set[frozenset[str]] = set()
    while run.state.phase is Phase.RUNNING:
        for table in run.state.tables:
            pair = frozenset(table.entrants)
            assert pair not in met, f"round {run.state.round}: rematch {sorted(pair)}"
        met.update(frozenset(t.entrants) for t in run.state.tables)
        play_round(run, best_seed_wins(run))


def _rematch_free_exists(order: list[str], size: int, met: dict[str, frozenset[str]]) -> bool:
    if not order:
        return True
    head, rest = order[0], order[1:]
    for others in itertools.combinations(rest, size - 1):
        group = (head, *others)
        if all(b not in met.get(a, frozenset()) for a, b in itertools.combinations(group, 2)):
            remaining = [e for e in rest if e not in others]
            if _rematch_free_exists(remaining, size, met):
                return True
    return False


@pytest.mark.parametrize("size", [2, 3, 4])
def test_swiss_grouping_avoids_rematches_whenever_brute_force_can(size: int) -> None:
    """Against an exhaustive search on small fields with dense histories."""
    from engine.core.rng import DeterministicRandom

    rng = DeterministicRandom(b"grouping", f"size/{size}")
    for trial in range(60):
        count = size * (2 + rng.randbelow(3))
        order = [f"x{i}" for i in range(count)]
        met: dict[str, set[str]] = {e: set() for e in order}
        for a, b in itertools.combinations(order, 2):
            if rng.randbelow(100) < 45:
                met[a].add(b)
                met[b].add(a)
        frozen = {e: frozenset(s) for e, s in met.items()}
        groups = group_swiss(order, [size] * (count // size), frozen)
        assert sorted(e for g in groups for e in g) == sorted(order)
        rematches = sum(
            1 for g in groups for a, b in itertools.combinations(g, 2) if b in frozen[a]
        )
        if _rematch_free_exists(order, size, frozen):
            assert rematches == 0, f"trial {trial}: {groups}"


def test_swiss_keeps_pairing_when_a_rematch_is_unavoidable() -> None:
    run = make_run(4, rounds=4)
    for _ in range(4):
        play_round(run, best_seed_wins(run))
    assert run.state.phase is Phase.FINISHED
    assert all(s.played == 4 for s in run.state.standings)


def test_swiss_individuals_draw_partners_at_random_each_round() -> None:
    run = make_run(16, entry=Entry.INDIVIDUALS, rounds=4)
    partnerships: list[set[frozenset[str]]] = []
    while run.state.phase is Phase.RUNNING:
        pairs = set()
        for table in run.state.tables:
            for side in range(2):
                pairs.add(frozenset(table.side_entrants(side)))
            assert len(table.entrants) == 4
        partnerships.append(pairs)
        play_round(run, best_seed_wins(run))
    assert all(len(p) == 8 for p in partnerships)
    assert len(set.union(*partnerships)) > 8, "partners never changed"


def test_swiss_individuals_share_the_sides_result() -> None:
    run = make_run(8, entry=Entry.INDIVIDUALS, rounds=1)
    play_round(run, lambda table: 0)
    for table in run.state.tables:
        winners = table.side_entrants(0)
        losers = table.side_entrants(1)
        assert all(run.state.records[e].match_points == 2 for e in winners)
        assert all(run.state.records[e].match_points == 0 for e in losers)


@pytest.mark.parametrize(
    "variant", [hokm_spec(3), hokm_spec(2), hand_spec(2), hand_spec(3), hand_spec(4)]
)
def test_swiss_for_every_variant_seats_one_entrant_per_seat(variant: object) -> None:
    from engine.tournament import VariantSpec

    assert isinstance(variant, VariantSpec)
    run = make_run(variant.seats * 5, variant=variant, rounds=3)
    while run.state.phase is Phase.RUNNING:
        seated = [s.entrant_id for t in run.state.tables for s in t.seats]
        assert sorted(seated) == sorted(run.state.alive)
        assert all(len(t.seats) == variant.seats for t in run.state.tables)
        play_round(run, lambda table: 0)


def test_swiss_equal_match_points_are_ordered_by_the_seed() -> None:
    """Pairings among equals come from the seed: two seeds, different round-2 tables."""
    tables = []
    for seed in (b"a" * 32, b"b" * 32):
        run = make_run(16, seed=seed, format=Format.SWISS, rounds=2)
        play_round(run, lambda table: 0)
        tables.append({frozenset(t.entrants) for t in run.state.tables})
    assert tables[0] != tables[1]
