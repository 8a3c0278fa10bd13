"""docs/rules/hokm.md "Scoring a round" and "Next round and end of game" (four players), and the
options points_win, points_kot, points_hakem_kot, shelem_points, play_all_tricks,
hakem_rotation and target_score."""

from __future__ import annotations

from typing import Any

from dast.v1 import hokm_pb2, log_pb2
from engine.hokm.state import HokmState, Phase

from .notation import first, kinds, play, position, run

LAST_TRICK = ["A♠", "2♥", "3♥", "4♥"]  # seat 0 (trump ace) wins whoever leads
SEAT1_WINS = ["2♥", "A♠", "3♥", "4♥"]


def _finish(
    winner_hands: list[str], won: tuple[int, ...], hakem: int = 0, **options: Any
) -> tuple[list[log_pb2.Event], HokmState]:
    state = position(winner_hands, hakem=hakem, leader=0, tricks_won=won, **options)
    return run(state, *(play(s, winner_hands[s].split()[0]) for s in range(4)))


def test_seven_tricks_against_one_to_six_scores_points_win() -> None:
    # | winning 7 tricks while the other team has 1–6 | 1 |
    events, state = _finish(LAST_TRICK, (5, 1, 1, 0))
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN
    assert list(ended.winners) == [0, 2] and list(ended.points) == [1, 0, 1, 0]
    assert list(ended.tricks) == [6, 1, 1, 0] and list(ended.scores) == [1, 0, 1, 0]
    assert state.scores == (1, 0, 1, 0)  # partners share a total


def test_round_stops_as_soon_as_a_team_has_seven_tricks() -> None:
    # play_all_tricks = false (default, `001`): the round ends at 7 even with cards left.
    hands = ["A♠ 5♣", "2♥ 6♣", "3♥ 7♣", "4♥ 8♣"]
    events, state = _finish(hands, (5, 1, 1, 0))
    assert kinds(events)[4:7] == ["trick_taken", "round_ended", "round_started"]
    assert state.round == 2


def test_kot_seven_to_nothing_by_hakem_team_scores_points_kot() -> None:
    # | kot: 7 tricks to 0 by the hakem's team | 2 |
    ended = first(_finish(LAST_TRICK, (6, 0, 0, 0))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_KOT and list(ended.points) == [2, 0, 2, 0]


def test_hakem_kot_seven_to_nothing_against_hakem_scores_points_hakem_kot() -> None:
    # | hakem kot: the team opposing the hakem wins 7 to 0 | 3 |
    ended = first(_finish(SEAT1_WINS, (0, 6, 0, 0))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_HAKEM_KOT
    assert list(ended.winners) == [1, 3] and list(ended.points) == [0, 3, 0, 3]


def test_point_options_change_the_scores() -> None:
    # Options points_win, points_kot, points_hakem_kot.
    win = first(_finish(LAST_TRICK, (5, 1, 1, 0), points_win=4)[0], "round_ended")
    kot = first(_finish(LAST_TRICK, (6, 0, 0, 0), points_kot=5)[0], "round_ended")
    hakem_kot = first(_finish(SEAT1_WINS, (0, 6, 0, 0), points_hakem_kot=6)[0], "round_ended")
    assert (win.points[0], kot.points[0], hakem_kot.points[1]) == (4, 5, 6)


def test_play_all_tricks_goes_on_after_seven() -> None:
    # play_all_tricks = true (`000`): all 13 tricks are played.
    hands = ["A♠ 5♣", "2♥ 6♣", "3♥ 7♣", "4♥ 8♣"]
    events, state = _finish(hands, (5, 1, 1, 4), play_all_tricks=True)
    assert "round_ended" not in kinds(events)
    assert state.tricks_won == (6, 1, 1, 4) and state.phase == Phase.PLAY


def test_play_all_tricks_scores_the_majority_at_the_end() -> None:
    events, _ = _finish(LAST_TRICK, (6, 2, 3, 1), play_all_tricks=True)
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN and list(ended.tricks) == [7, 2, 3, 1]


def test_shelem_all_thirteen_tricks_scores_shelem_points() -> None:
    # | shelem: all 13 tricks, only when play_all_tricks | 3 (option shelem_points) |
    events, _ = _finish(LAST_TRICK, (6, 0, 6, 0), play_all_tricks=True, shelem_points=5)
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_SHELEM and list(ended.points) == [5, 0, 5, 0]


def test_no_shelem_without_play_all_tricks() -> None:
    # Without play_all_tricks the round stops at 7, so 7–0 is kot, never shelem.
    ended = first(_finish(LAST_TRICK, (3, 0, 3, 0))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_KOT


def test_keep_if_won_hakem_stays_when_its_team_wins() -> None:
    # hakem_rotation = keep_if_won (default, `001`).
    events, state = _finish(LAST_TRICK, (5, 1, 1, 0), hakem=2)
    assert [e.hokm.hakem_chosen.seat for e in events if e.hokm.HasField("hakem_chosen")] == [2]
    assert "hakem_cards_shown" not in kinds(events)
    assert state.hakem == 2 and state.phase == Phase.DECLARE_TRUMP and state.round == 2


def test_keep_if_won_hakem_passes_to_next_seat_when_its_team_loses() -> None:
    # "otherwise hakem passes to the next seat in playing order (who is on the other team)".
    events, state = _finish(SEAT1_WINS, (0, 6, 0, 0), hakem=0)
    assert state.hakem == 1 and first(events, "hakem_chosen").seat == 1


def test_redetermine_chooses_the_hakem_again_every_round() -> None:
    # hakem_rotation = redetermine (`000`): hakem_selection runs again (label round/2/…).
    events, state = _finish(
        LAST_TRICK, (5, 1, 1, 0), hakem_rotation=hokm_pb2.HAKEM_ROTATION_REDETERMINE
    )
    shown = first(events, "hakem_cards_shown")
    assert shown.cards[-1].card % 13 == 12 and state.hakem == shown.cards[-1].seat


def test_match_ends_when_a_team_reaches_target_score() -> None:
    # "The game ends when a team reaches target_score"; the final event reveals the seed.
    events, state = _finish(LAST_TRICK, (5, 1, 1, 0), scores=(6, 5, 6, 5))
    assert kinds(events)[-2:] == ["round_ended", "match_ended"]
    ended = first(events, "match_ended")
    assert list(ended.winners) == [0, 2] and list(ended.scores) == [7, 5, 7, 5]
    assert len(ended.server_seed) == 32 and ended.server_seed == state.server_seed
    assert state.phase == Phase.MATCH_OVER and state.winners == (0, 2)


def test_target_score_option() -> None:
    # target_score one of 3, 5, 7 (default), 10.
    events, _ = _finish(LAST_TRICK, (5, 1, 1, 0), scores=(2, 0, 2, 0), target_score=3)
    assert kinds(events)[-1] == "match_ended"
    events, _ = _finish(LAST_TRICK, (5, 1, 1, 0), scores=(6, 0, 6, 0), target_score=10)
    assert kinds(events)[-1] != "match_ended"
