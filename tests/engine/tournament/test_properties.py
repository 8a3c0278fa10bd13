"""Properties over random tournaments (every format, entry and served variant; random
results with shared wins, time-outs, absences and withdrawals): every entrant still in is
seated exactly once per round or has a bye; every seat is filled once; the standings add up
to the results; replay equals the state; the log verifies and survives the codec."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.rng import DeterministicRandom
from engine.tournament import (
    Entry,
    Format,
    Phase,
    ReportResult,
    ResultRecorded,
    RoundStarted,
    SetAbsent,
    SideResult,
    Start,
    TournamentOptions,
    TournamentState,
    VariantSpec,
    Withdraw,
    decode_event,
    encode_event,
    hand_spec,
    hokm_spec,
    replay,
    verify,
)
from engine.tournament.sim import TournamentRun

VARIANTS = [
    hokm_spec(4),
    hokm_spec(3),
    hokm_spec(2),
    hand_spec(2),
    hand_spec(3),
    hand_spec(4),
    hand_spec(4, partnerships=True),
]
ROUND_MS = 60_000


def _random_report(state: TournamentState, table: int, rng: DeterministicRandom) -> ReportResult:
    variant = state.options.variant
    count = variant.side_count
    points = [rng.randbelow(8) for _ in range(count)]
    tricks = [rng.randbelow(30) if variant.has_tricks else 0 for _ in range(count)]
    roll = rng.randbelow(10)
    if roll == 0:
        return ReportResult(
            round=state.round,
            table=table,
            sides=tuple(SideResult(p, t) for p, t in zip(points, tricks, strict=True)),
            timed_out=True,
            at_ms=state.deadline_ms,
        )
    winners: tuple[int, ...] = (rng.randbelow(count),)
    if roll == 1 and count > 2:
        winners = tuple(sorted({winners[0], (winners[0] + 1) % count}))
    return ReportResult(
        round=state.round,
        table=table,
        sides=tuple(SideResult(p, t) for p, t in zip(points, tricks, strict=True)),
        winners=winners,
        at_ms=state.deadline_ms - 1,
    )


def _check_round(state: TournamentState) -> None:
    variant = state.options.variant
    active = [e for e in state.alive if e not in state.withdrawn]
    seated = [e for table in state.tables for e in table.entrants]
    assert len(seated) == len(set(seated)), "an entrant sits at two tables"
    assert not set(seated) & set(state.byes), "an entrant both plays and has a bye"
    assert sorted([*seated, *state.byes]) == sorted(active), "someone still in was left out"
    players = [s.player_id for t in state.tables for s in t.seats if s.player_id]
    assert len(players) == len(set(players)), "a player sits twice"
    for table in state.tables:
        assert len(table.seats) == variant.seats
        for seat_index, seat in enumerate(table.seats):
            assert seat_index in variant.sides[seat.side]
        if state.options.entry is Entry.PAIRS:
            for side in range(variant.side_count):
                assert len(table.side_entrants(side)) <= 1, "a side mixes registered pairs"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(VARIANTS),
    format_=st.sampled_from(list(Format)),
    entry=st.sampled_from(list(Entry)),
    entrants=st.integers(2, 14),
    fill_with_bots=st.booleans(),
    rounds=st.integers(0, 4),
    seed=st.binary(min_size=16, max_size=32),
    withdraw=st.integers(-1, 13),
    absent=st.integers(-1, 13),
)
def test_random_tournaments_keep_every_invariant(
    variant: VariantSpec,
    format_: Format,
    entry: Entry,
    entrants: int,
    fill_with_bots: bool,
    rounds: int,
    seed: bytes,
    withdraw: int,
    absent: int,
) -> None:
    options = TournamentOptions(
        variant=variant,
        format=format_,
        entry=entry,
        rounds=rounds,
        fill_with_bots=fill_with_bots,
        round_seconds=ROUND_MS // 1000,
    )
    if format_ is Format.KNOCKOUT and entry is Entry.INDIVIDUALS:
        entrants = max(entrants, variant.side_size + 1)  # more than the final side
    run = TournamentRun("prop", options, seed, at_ms=0)
    run.register_field(entrants)
    run.apply(Start(at_ms=0))
    rng = DeterministicRandom(seed, "results")
    rounds_played = 0
    while run.state.phase is Phase.RUNNING:
        _check_round(run.state)
        rounds_played += 1
        assert rounds_played <= 64, "the tournament does not end"
        if rounds_played == 1 and 0 <= absent < entrants:
            run.apply(SetAbsent(run.state.entrants[f"e{absent}"].members[0], True, at_ms=1))
        if rounds_played == 2 and 0 <= withdraw < entrants and f"e{withdraw}" not in (
            run.state.withdrawn
        ):
            run.apply(Withdraw(f"e{withdraw}", at_ms=1))
        for table in run.state.tables:
            run.apply(_random_report(run.state, table.table, rng))
    state = run.state
    standings = state.standings
    assert sorted(s.entrant_id for s in standings) == sorted(state.seed_order)
    assert [s.rank for s in standings] == list(range(1, len(standings) + 1))
    awarded = 0
    for event in run.events:
        body = event.body
        if isinstance(body, RoundStarted):
            awarded += len(body.byes) * state.options.bye_points
        if isinstance(body, ResultRecorded):
            assert body.winners
            table = next(
                t
                for e in run.events
                if isinstance(e.body, RoundStarted) and e.body.round == body.round
                for t in e.body.tables
                if t.table == body.table
            )
            for side in range(variant.side_count):
                if side in body.winners:
                    points = (
                        options.win_points if len(body.winners) == 1 else options.shared_win_points
                    )
                else:
                    points = options.loss_points
                awarded += points * len(table.side_entrants(side))
    assert sum(s.match_points for s in standings) == awarded
    if format_ is Format.KNOCKOUT:
        champions = [s for s in standings if s.eliminated_in_round == 0 and not s.withdrawn]
        assert len(champions) <= (1 if entry is Entry.PAIRS else variant.side_size)
    assert replay(run.events) == state
    assert verify(run.events) == []
    assert all(decode_event(encode_event(event)) == event for event in run.events)
