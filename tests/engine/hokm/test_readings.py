"""The engine's readings where docs/rules/hokm.md is silent, one test per reading, each named
after it and documented in docs/rules/hokm.md "Readings"."""

from __future__ import annotations

from typing import Any

from dast.v1 import hokm_pb2, log_pb2
from engine.hokm.state import HokmState

from .notation import first, kinds, play, position, run

HAKEM_TAKES_LAST = ["A♠", "2♥", "3♥", "4♥"]  # seat 0 (trump ace) wins whoever leads
SEAT1_TAKES_LAST = ["2♥", "A♠", "3♥", "4♥"]


def _last_trick(
    hands: list[str], won: tuple[int, ...], **options: Any
) -> tuple[list[log_pb2.Event], HokmState]:
    """Play the last trick of a round, led by seat 0 (the hakem), each seat's first card."""
    state = position(hands, hakem=0, leader=0, tricks_won=won, **options)
    return run(state, *(play(seat, hands[seat].split()[0]) for seat in range(len(hands))))


# ---- three players: the match's end ----


def test_three_players_defenders_reaching_the_target_together_both_win() -> None:
    # "The game ends when a player reaches target_score"; the side that reaches it first
    # wins. Both defenders score in the same round, so both reach it at once and both win,
    # even on different totals (9 and 8 here): the total above the target does not count.
    events, state = _last_trick(
        ["2♥", "A♠", "3♥"], (0, 8, 7), scores=(2, 6, 5), target_score=7
    )
    assert first(events, "round_ended").result == hokm_pb2.ROUND_RESULT_HAKEM_KOT
    ended = first(events, "match_ended")
    assert list(ended.scores) == [2, 9, 8] and list(ended.winners) == [1, 2]
    assert state.winners == (1, 2)


def test_three_players_only_the_defender_reaching_the_target_wins() -> None:
    # The other defender, below the target after the same round, has not won.
    events, _ = _last_trick(["2♥", "A♠", "3♥"], (3, 6, 6), scores=(2, 6, 3))
    ended = first(events, "match_ended")
    assert list(ended.scores) == [2, 7, 4] and list(ended.winners) == [1]


# ---- four players, play_all_tricks: sweeps and kot judged at the end ----


def test_play_all_tricks_thirteen_nil_by_the_hakems_opponents_is_shelem() -> None:
    # All 13 tricks to the team opposing the hakem: a shelem (shelem_points), not also a
    # hakem kot on top of it; the hakem passes on as after any lost round.
    events, state = _last_trick(
        SEAT1_TAKES_LAST, (0, 6, 0, 6), play_all_tricks=True, shelem_points=4
    )
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_SHELEM and list(ended.tricks) == [0, 7, 0, 6]
    assert list(ended.winners) == [1, 3] and list(ended.points) == [0, 4, 0, 4]
    assert state.hakem == 1


def test_play_all_tricks_thirteen_nil_by_the_hakems_side_is_shelem() -> None:
    # All 13 tricks to the hakem's team: shelem (3 by default), not kot (2); the hakem stays.
    events, state = _last_trick(HAKEM_TAKES_LAST, (6, 0, 6, 0), play_all_tricks=True)
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_SHELEM and list(ended.tricks) == [7, 0, 6, 0]
    assert list(ended.winners) == [0, 2] and list(ended.points) == [3, 0, 3, 0]
    assert state.hakem == 0


def test_play_all_tricks_seven_nil_then_a_trick_lost_is_a_plain_win() -> None:
    # "With play_all_tricks, kot is judged at the end of the round": 7–0 (here 11–0) is no
    # kot once the other team takes a later trick; 12–1 scores points_win.
    hands = ["2♥ A♠", "A♥ 3♣", "3♥ 4♣", "4♥ 5♣"]
    state = position(hands, hakem=0, leader=0, tricks_won=(7, 0, 4, 0), play_all_tricks=True)
    # Trick 12: A♥ wins for seat 1, who leads trick 13, which the hakem trumps with A♠.
    plays = [play(0, "2♥"), play(1, "A♥"), play(2, "3♥"), play(3, "4♥"),
             play(1, "3♣"), play(2, "4♣"), play(3, "5♣"), play(0, "A♠")]
    events, _ = run(state, *plays)
    assert kinds(events).count("round_ended") == 1
    ended = first(events, "round_ended")
    assert list(ended.tricks) == [8, 1, 4, 0]
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN and list(ended.points) == [1, 0, 1, 0]


def test_play_all_tricks_seven_nil_no_round_end_before_the_last_trick() -> None:
    # At 7–0 the round goes on: nothing is scored until all 13 tricks are played.
    hands = ["A♠ 5♣", "2♥ 6♣", "3♥ 7♣", "4♥ 8♣"]
    events, state = _last_trick(hands, (6, 0, 0, 0), play_all_tricks=True)
    assert "round_ended" not in kinds(events) and state.tricks_won == (7, 0, 0, 0)


# ---- ties: a majority not reached by either side ----


def test_three_players_eight_all_counts_against_the_hakem() -> None:
    # 16 tricks, majority 9 (tricks_to_win_3p): after 8–8 the hakem has not made 9, so the
    # round is the defenders' (points_defenders_win_3p each) and the hakem passes on.
    events, state = _last_trick(["2♥", "A♠", "3♥"], (8, 4, 3))
    ended = first(events, "round_ended")
    assert list(ended.tricks) == [8, 5, 3] and ended.result == hokm_pb2.ROUND_RESULT_WIN
    assert list(ended.winners) == [1, 2] and list(ended.points) == [0, 1, 1]
    assert state.hakem == 1


def test_three_players_eight_all_counts_against_the_hakem_with_play_all_tricks() -> None:
    events, _ = _last_trick(["2♥", "A♠", "3♥"], (8, 7, 0), play_all_tricks=True)
    ended = first(events, "round_ended")
    assert list(ended.tricks) == [8, 8, 0] and list(ended.winners) == [1, 2]


def test_two_players_thirteen_all_counts_against_the_hakem() -> None:
    # 26 tricks, majority 14 (tricks_to_win_2p): 13–13 is the opponent's round, points_win.
    events, state = _last_trick(["2♥", "A♠"], (13, 12))
    ended = first(events, "round_ended")
    assert list(ended.tricks) == [13, 13] and ended.result == hokm_pb2.ROUND_RESULT_WIN
    assert list(ended.winners) == [1] and list(ended.points) == [0, 1]
    assert state.hakem == 1


def test_two_players_thirteen_all_counts_against_the_hakem_with_play_all_tricks() -> None:
    events, _ = _last_trick(["2♥", "A♠"], (13, 12), play_all_tricks=True)
    ended = first(events, "round_ended")
    assert list(ended.tricks) == [13, 13] and list(ended.winners) == [1]
