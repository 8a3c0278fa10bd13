"""engine/core/legal.py: the commands behind a game's legal entries, the same way for a game
whose entries are all commands and for one that lists choice entries (Hokm's set-aside)."""

from __future__ import annotations

import types

import pytest

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.legal import LegalEntries
from engine.core.protocol import ChoiceEntries
from engine.core.testing import Visibility, bot_players, random_sim, sim_seeds
from engine.hokm.views import event_cards, hidden_mask, view_cards

GAME_FIELDS = ["GAME_TYPE", "NAME", "start", "decide", "evolve", "replay", "legal", "view",
               "redact", "to_act", "is_over", "setup_of", "command_for", "revealed_seed"]


def _plain_game() -> types.SimpleNamespace:
    """Hokm's protocol without the choice-entry functions: every entry is one command."""
    return types.SimpleNamespace(**{name: getattr(hokm, name) for name in GAME_FIELDS})


def _plays(*cards: int) -> list[log_pb2.Command]:
    commands = []
    for card in cards:
        command = log_pb2.Command(seat=2)
        command.hokm.play_card.card = card
        commands.append(command)
    return commands


def test_only_a_game_with_every_choice_function_lists_choice_entries() -> None:
    assert isinstance(hokm, ChoiceEntries)
    assert not isinstance(_plain_game(), ChoiceEntries)


def test_entries_of_a_game_without_choices_are_its_commands() -> None:
    entries = LegalEntries(_plain_game())
    listed = _plays(3, 17, 40)
    assert entries.count(listed) == 3 and [entries.size(e) for e in listed] == [1, 1, 1]
    assert list(entries.commands(listed)) == listed
    assert entries.random(listed, lambda n: 1) is listed[1]
    assert entries.covers(listed, _plays(17)[0]) and not entries.covers(listed, _plays(18)[0])


def test_random_draws_an_entry_then_a_command_of_it() -> None:
    # A choice entry of 5 cards stands for C(5, 4) = 5 set-asides; index 4 is the last.
    entry = log_pb2.Command(seat=0)
    entry.hokm.set_aside_cards.cards.extend([1, 2, 3, 4, 5])
    draws = iter([0, 4])
    command = LegalEntries(hokm).random([entry], lambda n: next(draws))
    assert list(command.hokm.set_aside_cards.cards) == [2, 3, 4, 5]
    assert LegalEntries(hokm).count([entry, *_plays(9)]) == 6


def test_random_refuses_an_empty_list() -> None:
    with pytest.raises(ValueError, match="no legal entry"):
        LegalEntries(hokm).random([], lambda n: 0)


def test_the_harness_plays_a_set_aside_drawn_from_the_choice_entry() -> None:
    # random_sim decides drawn commands, never the entry itself (which names 20 cards).
    rules = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=1)
    visibility = Visibility(hidden_mask=hidden_mask, event_cards=event_cards,
                            view_cards=view_cards)
    report = random_sim(hokm, rules, bot_players(3), sim_seeds(1, "legal"), visibility,
                        keep_logs=True)
    set_asides = [e.hokm.cards_set_aside for e in report.logs[0]
                  if e.hokm.HasField("cards_set_aside")]
    assert set_asides and all(len(aside.cards) == 4 for aside in set_asides)
    assert report.matches == 1
