"""The service reads a match's result the way the games' own events tell it, for every
served game and seat count, finished or cut short by a round's time limit."""

from __future__ import annotations

import pytest

from engine.core.testing import play_bots
from engine.registry import GAMES_BY_NAME
from engine.tournament import hand_spec, hokm_spec
from engine.tournament.variants import table_rules
from services.tournament.results import UnreadableResult, match_report


@pytest.mark.parametrize("seats", [4, 3, 2])
def test_a_finished_hokm_match_reports_its_sides_scores_tricks_and_winners(seats: int
                                                                           ) -> None:
    game = GAMES_BY_NAME["hokm"]
    rules = game.table_rules(game.rules_for_players(seats), target_score=2, turn_seconds=0)
    bots = game.bot_policies(None)  # type: ignore[arg-type]
    log = play_bots(game, bots, rules, bytes(32), ["random"] * seats, seats)
    spec = hokm_spec(seats)
    report = match_report(game, log, spec)
    ended = log[-1].hokm.match_ended
    tricks = [0] * seats
    for event in log:
        if event.HasField("hokm") and event.hokm.WhichOneof("kind") == "round_ended":
            tricks = [a + b for a, b in zip(tricks, event.hokm.round_ended.tricks, strict=True)]
    assert report.over
    assert [side.points for side in report.sides] == [ended.scores[s[0]] for s in spec.sides]
    assert [side.tricks for side in report.sides] == [
        sum(tricks[seat] for seat in side) for side in spec.sides]
    assert report.winners == tuple(index for index, side in enumerate(spec.sides)
                                   if set(side) & set(ended.winners))
    # Cut short (a round's time limit): the score so far, no winners yet.
    cut = log[: len(log) // 2]
    partial = match_report(game, cut, spec)
    assert not partial.over and partial.winners == ()
    assert all(side.points <= final.points for side, final in zip(partial.sides, report.sides,
                                                                   strict=True))


def test_a_finished_hand_match_reports_its_penalty_totals_and_no_tricks() -> None:
    game = GAMES_BY_NAME["hand"]
    rules = game.table_rules(game.rules_for_players(2), target_score=0, turn_seconds=0)
    bots = game.bot_policies(None)  # type: ignore[arg-type]
    log = play_bots(game, bots, rules, bytes(32), ["greedy"] * 2, 7)
    report = match_report(game, log, hand_spec(2))
    ended = log[-1].hand.match_ended
    assert report.over
    assert [side.points for side in report.sides] == list(ended.totals)
    assert all(side.tricks == 0 for side in report.sides)
    assert report.winners == tuple(sorted(ended.winners))


def test_a_hand_partnership_match_reports_one_result_per_partnership() -> None:
    game = GAMES_BY_NAME["hand"]
    spec = hand_spec(4, partnerships=True)
    rules = table_rules(game, spec, target_score=0, turn_seconds=0)
    bots = game.bot_policies(None)  # type: ignore[arg-type]
    log = play_bots(game, bots, rules, bytes(32), ["greedy"] * 4, 11)
    assert log[0].hand.match_started.rules.partnerships
    report = match_report(game, log, spec)
    ended = log[-1].hand.match_ended
    # Partners share a total; the sides are seats 0+2 and 1+3.
    assert report.over and len(report.sides) == 2
    assert [side.points for side in report.sides] == [ended.totals[0], ended.totals[1]]
    assert ended.totals[0] == ended.totals[2] and ended.totals[1] == ended.totals[3]
    assert report.winners == tuple(sorted({seat % 2 for seat in ended.winners}))


def test_an_empty_log_has_no_result() -> None:
    with pytest.raises(UnreadableResult):
        match_report(GAMES_BY_NAME["hokm"], [], hokm_spec(4))
