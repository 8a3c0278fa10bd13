"""The random-simulation harness (engine/core/testing.py) catches what it promises to
catch: a card leaked to a seat, duplicate legal commands, a replay that differs, a legal
command refused; and a failure names the seed and the commands to replay it."""

from __future__ import annotations

import types
from typing import Any

import pytest

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.testing import SimulationFailure, Visibility, play_match, random_sim, sim_seeds
from engine.hokm.bots import BOTS
from engine.hokm.views import event_cards, hidden_mask, view_cards

VISIBILITY = Visibility(hidden_mask=hidden_mask, event_cards=event_cards, view_cards=view_cards)
RULES = hokm_pb2.HokmRules(target_score=1)
PLAYERS = [common_pb2.Player(player_id=f"p{i}") for i in range(4)]


def _game(**overrides: Any) -> Any:
    names = ["GAME_TYPE", "NAME", "start", "decide", "evolve", "replay", "legal", "view",
             "redact", "to_act", "is_over", "setup_of", "command_for", "revealed_seed"]
    game = types.SimpleNamespace(**{name: getattr(hokm, name) for name in names})
    for name, value in overrides.items():
        setattr(game, name, value)
    return game


def _sim(game: Any) -> None:
    random_sim(game, RULES, PLAYERS, sim_seeds(1, "harness"), VISIBILITY)


def test_the_real_game_passes() -> None:
    report = random_sim(hokm, RULES, PLAYERS, sim_seeds(2, "harness"), VISIBILITY)
    assert report.matches == 2 and report.commands > 0 and report.events > report.commands


def test_a_redaction_that_leaks_cards_is_caught_with_seed_and_commands() -> None:
    with pytest.raises(SimulationFailure) as caught:
        _sim(_game(redact=lambda event, seat: event))
    message = str(caught.value)
    assert "hidden cards" in message and sim_seeds(1, "harness")[0].hex() in message
    assert "commands:" in message


def test_duplicate_legal_commands_are_caught() -> None:
    with pytest.raises(SimulationFailure, match="not unique"):
        _sim(_game(legal=lambda state, seat: hokm.legal(state, seat) * 2))


def test_legal_commands_for_a_seat_not_to_act_are_caught() -> None:
    def legal(state: Any, seat: int) -> list[log_pb2.Command]:
        return hokm.legal(state, hokm.to_act(state) or 0) if seat != hokm.to_act(state) else \
            hokm.legal(state, seat)

    with pytest.raises(SimulationFailure, match="has legal commands"):
        _sim(_game(legal=legal))


def test_a_replay_that_differs_is_caught() -> None:
    def replay(events: Any) -> Any:
        return hokm.replay(events)._replace(deadline_ms=-1)

    with pytest.raises(SimulationFailure, match="replaying"):
        random_sim(_game(replay=replay), RULES, PLAYERS, sim_seeds(1), VISIBILITY)


def test_an_accepted_illegal_command_is_caught() -> None:
    def fuzz(rng: Any, seats: int) -> log_pb2.Command:
        command = log_pb2.Command(seat=0)
        command.hokm.play_card.card = 0
        return command

    def decide(state: Any, command: log_pb2.Command) -> list[log_pb2.Event]:
        if command.hokm.HasField("play_card") and command.hokm.play_card.card == 0:
            return []  # accepts (with no event) whatever the state
        return hokm.decide(state, command)

    with pytest.raises(SimulationFailure, match="illegal command was accepted"):
        random_sim(_game(decide=decide), RULES, PLAYERS, sim_seeds(1, "x"), VISIBILITY, fuzz=fuzz)


def test_play_match_follows_the_policies_and_stamps_times() -> None:
    events = play_match(hokm, RULES, bytes(32), PLAYERS, [BOTS["greedy"]] * 4, 5, at_ms=100,
                        step_ms=10)
    commands = [e for e in events if hokm.command_for(e) is not None]
    assert [e.at_ms for e in commands] == [100 + 10 * (i + 1) for i in range(len(commands))]
    assert hokm.is_over(hokm.replay(events))
