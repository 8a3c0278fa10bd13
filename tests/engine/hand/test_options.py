"""Resolving the rules options (docs/rules/hand.md: every option with its default)."""

from __future__ import annotations

import pytest

from dast.v1 import hand_pb2
from engine import hand
from engine.core.errors import Code, RuleViolation
from engine.hand.rules import DealerRotation, options_of, resolve_rules
from tests.engine.hand.table import SEED, players


def test_unset_options_take_the_defaults_of_the_rules_file() -> None:
    options = options_of(resolve_rules(hand_pb2.HandRules(), 3))
    assert options.players == 3 and not options.partnerships
    assert options.ace_low_value == 1 and options.joker_penalty == 15
    assert options.dealer_rotation is DealerRotation.LOSER_DEALS
    assert options.open_min == 51 and not options.must_beat_previous
    assert options.max_jokers_per_meld == 1 and options.hand_waives_open_min
    assert options.max_restocks == 2 and not options.partner_of_winner_scores
    assert options.rounds == 5 and options.turn_seconds == 0


def test_set_options_are_kept_even_when_zero_or_false() -> None:
    rules = hand_pb2.HandRules(open_min=0, max_restocks=0, hand_waives_open_min=False,
                               ace_low_value=11, joker_penalty=25, rounds=3)
    options = options_of(resolve_rules(rules, 2))
    assert (options.open_min, options.max_restocks, options.hand_waives_open_min) == (0, 0, False)
    assert (options.ace_low_value, options.joker_penalty, options.rounds) == (11, 25, 3)


@pytest.mark.parametrize(("rules", "seated", "code"), [
    (hand_pb2.HandRules(), 1, Code.INVALID_PLAYERS),
    (hand_pb2.HandRules(), 5, Code.INVALID_PLAYERS),
    (hand_pb2.HandRules(players=3), 4, Code.INVALID_PLAYERS),
    (hand_pb2.HandRules(partnerships=True), 3, Code.INVALID_RULES),
    (hand_pb2.HandRules(max_jokers_per_meld=0), 2, Code.INVALID_RULES),
    (hand_pb2.HandRules(rounds=0), 2, Code.INVALID_RULES),
])
def test_players_and_options_out_of_range_are_refused(
    rules: hand_pb2.HandRules, seated: int, code: str
) -> None:
    # docs/rules/hand.md "Players": 2, 3 or 4 players, partnerships only with 4.
    with pytest.raises(RuleViolation) as caught:
        hand.start(rules, SEED, players(seated))
    assert caught.value.code == code


def test_the_match_start_records_the_resolved_rules() -> None:
    events = hand.start(hand_pb2.HandRules(partnerships=True), SEED, players(4))
    recorded = events[0].hand.match_started.rules
    assert recorded == resolve_rules(hand_pb2.HandRules(partnerships=True), 4)
    assert recorded.HasField("open_min") and recorded.players == 4


def test_the_server_seed_must_be_32_bytes() -> None:
    with pytest.raises(RuleViolation) as caught:
        hand.start(hand_pb2.HandRules(), b"short", players(2))
    assert caught.value.code == Code.INVALID_RULES
