"""docs/rules/hokm.md options: defaults, resolution into the start event, invalid options."""

from __future__ import annotations

import pytest

from dast.v1 import hokm_pb2
from engine import hokm
from engine.core.errors import Code, InvalidCommand
from engine.hokm.rules import resolve_rules, rules_proto

from .notation import SEED, first, players, rules, started


def test_defaults_reproduce_the_online_app() -> None:
    # "the defaults reproduce `001` (the online app) unless stated".
    options = resolve_rules(hokm_pb2.HokmRules())
    assert options.seats == 4
    assert options.hakem_selection == hokm_pb2.HAKEM_SELECTION_FIRST_ACE
    assert options.play_all_tricks is False
    assert (options.points_win, options.points_kot, options.points_hakem_kot) == (1, 2, 3)
    assert options.shelem_points == 3
    assert options.hakem_rotation == hokm_pb2.HAKEM_ROTATION_KEEP_IF_WON
    assert options.target_score == 7 and options.random_partners is False
    assert (options.tricks_to_win_3p, options.points_hakem_win_3p) == (9, 2)
    assert (options.points_defenders_win_3p, options.points_hakem_kot_3p) == (1, 3)
    assert options.tricks_to_win_2p == 14 and options.trump_2p == hokm_pb2.TRUMP_2P_PILE_CARD
    assert options.turn_seconds == 30


def test_start_records_fully_resolved_rules() -> None:
    # hokm.proto: "the MatchStarted event always records the fully resolved options".
    events, _ = started(3, target_score=5)
    recorded = first(events, "match_started").rules
    for field in hokm_pb2.HokmRules.DESCRIPTOR.fields:
        if field.has_presence:
            assert recorded.HasField(field.name), field.name
    assert resolve_rules(recorded) == resolve_rules(rules(3, target_score=5))
    assert recorded.variant == hokm_pb2.HOKM_VARIANT_THREE_PLAYERS and recorded.target_score == 5


def test_explicit_zero_points_are_kept() -> None:
    assert resolve_rules(hokm_pb2.HokmRules(points_win=0, turn_seconds=0)).points_win == 0
    assert resolve_rules(rules_proto(resolve_rules(hokm_pb2.HokmRules(turn_seconds=0)))) \
        .turn_seconds == 0


@pytest.mark.parametrize(
    "bad",
    [
        hokm_pb2.HokmRules(target_score=0),
        hokm_pb2.HokmRules(tricks_to_win_3p=8),
        hokm_pb2.HokmRules(tricks_to_win_3p=17),
        hokm_pb2.HokmRules(tricks_to_win_2p=13),
        hokm_pb2.HokmRules(turn_seconds=100_000),
        hokm_pb2.HokmRules(variant=9),  # type: ignore[arg-type]
        hokm_pb2.HokmRules(hakem_selection=9),  # type: ignore[arg-type]
    ],
)
def test_out_of_range_options_are_invalid_rules(bad: hokm_pb2.HokmRules) -> None:
    with pytest.raises(InvalidCommand) as caught:
        hokm.start(bad, SEED, players(4))
    assert caught.value.code == Code.INVALID_RULES


def test_wrong_number_of_players_is_refused() -> None:
    with pytest.raises(InvalidCommand) as caught:
        hokm.start(rules(3), SEED, players(4))
    assert caught.value.code == Code.INVALID_PLAYERS


def test_seed_must_be_32_bytes() -> None:
    with pytest.raises(InvalidCommand):
        hokm.start(rules(4), b"short", players(4))
