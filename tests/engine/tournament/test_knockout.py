"""Knockout by tables: the winning side goes on, everyone else is out, the final table's
winners are champions; shared wins and wins by bots are settled so one side of entrants
goes on."""

from __future__ import annotations

from engine.tournament import Entry, Format, Phase, ResultSource, hand_spec

from .support import best_seed_wins, make_run, play_round, result, side_of


def test_knockout_round_one_seats_the_best_seed_against_the_weakest() -> None:
    run = make_run(8, format=Format.KNOCKOUT, ratings=[1000 + 10 * i for i in range(8)])
    tables = {frozenset(t.entrants) for t in run.state.tables}
    assert frozenset({"e7", "e0"}) in tables
    assert frozenset({"e6", "e1"}) in tables


def test_knockout_winning_pair_goes_on_and_the_losers_are_out() -> None:
    run = make_run(8, format=Format.KNOCKOUT)
    winners: set[str] = set()
    for table in run.state.tables:
        winners.update(table.side_entrants(1))
        run.apply(result(run.state, table, [1]))
    assert set(run.state.alive) == winners
    assert all(
        run.state.eliminated[e] == 1 for e in (f"e{i}" for i in range(8)) if e not in winners
    )


def test_knockout_ends_when_one_pair_is_left_and_ranks_it_first() -> None:
    run = make_run(8, format=Format.KNOCKOUT)
    rounds = 0
    while run.state.phase is Phase.RUNNING:
        rounds += 1
        play_round(run, best_seed_wins(run))
    assert rounds == 3
    standings = run.state.standings
    assert standings[0].entrant_id == run.state.seed_order[0]
    assert standings[0].eliminated_in_round == 0
    out_rounds = [s.eliminated_in_round for s in standings[1:]]
    assert out_rounds == sorted(out_rounds, reverse=True)
    assert out_rounds[0] == 3


def test_knockout_of_individuals_sends_the_winning_partners_on_together() -> None:
    run = make_run(16, format=Format.KNOCKOUT, entry=Entry.INDIVIDUALS)
    assert len(run.state.tables) == 4
    play_round(run, lambda table: 0)
    assert len(run.state.alive) == 8
    play_round(run, lambda table: 0)
    assert len(run.state.alive) == 4
    (final,) = run.state.tables
    champions = set(final.side_entrants(1))
    play_round(run, lambda table: 1)
    assert run.state.phase is Phase.FINISHED
    assert {s.entrant_id for s in run.state.standings[:2]} == champions


def test_knockout_shared_win_is_settled_by_the_tie_rule() -> None:
    run = make_run(6, format=Format.KNOCKOUT, variant=hand_spec(3))
    (table, *_rest) = run.state.tables
    # Sides 0 and 1 share the win on equal penalties: a seeded draw picks one.
    run.apply(result(run.state, table, [0, 1], points=[40, 40, 120]))
    recorded = run.state.results[table.table]
    assert recorded.reported_winners == (0, 1)
    assert recorded.source is ResultSource.DRAW
    assert len(recorded.winners) == 1 and recorded.winners[0] in (0, 1)


def test_knockout_side_of_bots_cannot_go_on() -> None:
    run = make_run(3, format=Format.KNOCKOUT, fill_with_bots=True)
    bot_table = next(t for t in run.state.tables if any(s.is_bot for s in t.seats))
    bot_side = next(s.side for s in bot_table.seats if s.is_bot)
    human_side = 1 - bot_side
    run.apply(result(run.state, bot_table, [bot_side]))
    recorded = run.state.results[bot_table.table]
    assert recorded.winners == (human_side,)


def test_knockout_with_a_bye_reaches_a_single_champion() -> None:
    run = make_run(5, format=Format.KNOCKOUT)
    seen_byes: list[str] = []
    while run.state.phase is Phase.RUNNING:
        seen_byes.extend(run.state.byes)
        play_round(run, best_seed_wins(run))
    assert len(seen_byes) == len(set(seen_byes)), "a bye was given twice"
    assert run.state.standings[0].eliminated_in_round == 0
    assert sum(s.eliminated_in_round == 0 for s in run.state.standings) == 1


def test_knockout_winner_is_the_side_the_game_named() -> None:
    run = make_run(2, format=Format.KNOCKOUT)
    (table,) = run.state.tables
    run.apply(result(run.state, table, [side_of(table, "e1")]))
    assert run.state.standings[0].entrant_id == "e1"
    assert run.state.phase is Phase.FINISHED
