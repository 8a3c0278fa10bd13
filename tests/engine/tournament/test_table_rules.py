"""A table's match is created in the team form of the tournament's spec: the engine, not the
service, says which rules field gives a game its partnerships."""

from __future__ import annotations

import pytest

from dast.v1 import hand_pb2, hokm_pb2
from engine.registry import GAMES_BY_NAME
from engine.tournament import hand_spec, hokm_spec
from engine.tournament.variants import table_rules


def test_hand_in_partnerships_is_created_with_partnerships_and_the_turn_time() -> None:
    rules = table_rules(GAMES_BY_NAME["hand"], hand_spec(4, partnerships=True),
                        target_score=0, turn_seconds=20)
    assert isinstance(rules, hand_pb2.HandRules)
    assert rules.players == 4 and rules.partnerships and rules.turn_seconds == 20


@pytest.mark.parametrize("seats", [4, 3, 2])
def test_hand_each_for_themselves_leaves_partnerships_unset(seats: int) -> None:
    rules = table_rules(GAMES_BY_NAME["hand"], hand_spec(seats), target_score=0,
                        turn_seconds=0)
    assert isinstance(rules, hand_pb2.HandRules)
    assert rules.players == seats and not rules.HasField("partnerships")


@pytest.mark.parametrize("seats", [4, 3, 2])
def test_hokm_tables_keep_the_variant_of_their_seats_and_the_target_score(seats: int) -> None:
    game = GAMES_BY_NAME["hokm"]
    rules = table_rules(game, hokm_spec(seats), target_score=3, turn_seconds=15)
    expected = game.table_rules(game.rules_for_players(seats), target_score=3,
                                turn_seconds=15)
    assert isinstance(rules, hokm_pb2.HokmRules) and rules == expected
    assert game.seat_count(rules) == seats


def test_a_spec_of_another_game_is_refused() -> None:
    with pytest.raises(ValueError, match="does not describe"):
        table_rules(GAMES_BY_NAME["hokm"], hand_spec(4), target_score=0, turn_seconds=0)
