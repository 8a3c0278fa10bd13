"""docs/rules/hokm.md "Three players" (`000`): the kitty, the set-aside, 16 tricks, the 9-trick
majority (tricks_to_win_3p) and the per-player scores (points_*_3p)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import iter_cards, popcount
from engine.core.errors import Code, InvalidCommand
from engine.core.fairness import deck_key
from engine.core.legal import LegalEntries
from engine.core.rng import DeterministicRandom
from engine.hokm.errors import HokmCode
from engine.hokm.state import HokmState, Phase

from .notation import SEED, first, kinds, play, position, run, set_aside, started, violation
from .notation import declare as declare_cmd


def _declared() -> tuple[list[log_pb2.Event], HokmState]:
    _, state = started(3)
    events, state = run(state, declare_cmd(state.hakem, "♥"))
    return events, state


def test_hakem_declares_from_five_then_takes_the_four_card_kitty() -> None:
    # "declares trump from the first 5 cards. Then the hakem takes the kitty (20 cards)".
    _, state = started(3)
    assert [popcount(h) for h in state.hands] == [5 if s == state.hakem else 0 for s in range(3)]
    events, after = _declared()
    assert kinds(events) == ["trump_declared", "cards_dealt", "kitty_taken"]
    sizes = {d.seat: d.count for d in first(events, "cards_dealt").hands}
    assert sizes == {s: 11 if s == after.hakem else 16 for s in range(3)}
    kitty = first(events, "kitty_taken")
    assert kitty.seat == after.hakem and kitty.count == 4
    # "the engine deals the whole shuffled deck, 16 each, and the last 4 become the kitty"
    deck = DeterministicRandom(deck_key(SEED, [b""] * 3), "round/1/deal").shuffle(
        list(range(52))
    )
    assert list(kitty.cards) == deck[48:]
    assert popcount(after.hands[after.hakem]) == 20
    assert after.phase == Phase.SET_ASIDE and after.turn == after.hakem


def test_hakem_lays_four_cards_aside_and_leads() -> None:
    # "lays 4 cards aside face down, back to 16".
    _, state = _declared()
    hakem = state.hakem
    chosen = list(iter_cards(state.hands[hakem]))[:4]
    command = set_aside(hakem, " ".join(_name(c) for c in chosen))
    events, after = run(state, command)
    assert kinds(events) == ["cards_set_aside"]
    assert list(first(events, "cards_set_aside").cards) == chosen
    assert popcount(after.hands[hakem]) == 16 and after.set_aside == sum(1 << c for c in chosen)
    assert after.phase == Phase.PLAY and after.turn == hakem


def _name(card: int) -> str:
    from engine.core.cards import card_name

    return card_name(card)


def test_set_aside_violations() -> None:
    _, state = _declared()
    hakem = state.hakem
    held = [_name(c) for c in iter_cards(state.hands[hakem])]
    other = next(c for c in range(52) if not state.hands[hakem] >> c & 1)
    assert violation(state, set_aside(hakem, " ".join(held[:3]))) == HokmCode.WRONG_SET_ASIDE_COUNT
    assert violation(state, set_aside(hakem, " ".join(held[:5]))) == HokmCode.WRONG_SET_ASIDE_COUNT
    assert violation(state, set_aside((hakem + 1) % 3, " ".join(held[:4]))) == HokmCode.NOT_HAKEM
    not_held = " ".join([*held[:3], _name(other)])
    assert violation(state, set_aside(hakem, not_held)) == HokmCode.CARD_NOT_IN_HAND
    try:
        hokm.decide(state, set_aside(hakem, " ".join([held[0], *held[:3]])))
    except InvalidCommand as error:
        assert error.code == HokmCode.DUPLICATE_CARD
    else:
        raise AssertionError("duplicate accepted")
    assert violation(state, play(hakem, held[0])) == Code.WRONG_PHASE


def test_set_aside_is_legal_only_for_the_hakem_in_its_phase() -> None:
    _, state = _declared()
    options = hokm.legal(state, state.hakem)
    hand = list(iter_cards(state.hands[state.hakem]))
    # One choice entry, "any 4 of these", the whole hand sorted; not C(20, 4) commands.
    assert len(options) == 1 and list(options[0].hokm.set_aside_cards.cards) == hand
    assert hokm.legal(state, (state.hakem + 1) % 3) == []


def test_set_aside_entry_stands_for_every_four_card_combination_in_order() -> None:
    # The entry's commands are the sorted 4-card combinations of the hand, lexicographic.
    _, state = _declared()
    entries = LegalEntries(hokm)
    listed = hokm.legal(state, state.hakem)
    commands = list(entries.commands(listed))
    hand = list(iter_cards(state.hands[state.hakem]))
    assert entries.count(listed) == len(commands) == 4845
    assert [list(c.hokm.set_aside_cards.cards) for c in commands] == [
        list(combo) for combo in combinations(hand, 4)
    ]
    assert all(c.seat == state.hakem for c in commands)
    for index in (0, 1, 2024, 4844):
        assert hokm.entry_command(listed[0], index) == commands[index]
        assert hokm.decide(state, commands[index])
    with pytest.raises(IndexError):
        hokm.entry_command(listed[0], 4845)


def test_set_aside_entry_covers_any_order_of_four_held_cards_only() -> None:
    _, state = _declared()
    hakem = state.hakem
    entries = LegalEntries(hokm)
    listed = hokm.legal(state, hakem)
    held = [_name(c) for c in iter_cards(state.hands[hakem])]
    other = _name(next(c for c in range(52) if not state.hands[hakem] >> c & 1))
    assert entries.covers(listed, set_aside(hakem, " ".join(reversed(held[:4]))))
    assert not entries.covers(listed, set_aside(hakem, " ".join(held[:3])))
    assert not entries.covers(listed, set_aside(hakem, " ".join([*held[:3], other])))
    assert not entries.covers(listed, set_aside(hakem, " ".join([held[0], *held[:3]])))
    assert not entries.covers(listed, set_aside((hakem + 1) % 3, " ".join(held[:4])))
    assert not entries.covers(listed, play(hakem, held[0]))


def test_random_set_aside_is_uniform_over_the_combinations() -> None:
    # Drawing index i of the entry gives the i-th combination: uniform draws of i give
    # uniform set-asides, and each is accepted.
    _, state = _declared()
    listed = hokm.legal(state, state.hakem)
    rng = DeterministicRandom(SEED, "set-aside")
    drawn = [LegalEntries(hokm).random(listed, rng.randbelow) for _ in range(20)]
    assert len({tuple(c.hokm.set_aside_cards.cards) for c in drawn}) > 15
    assert all(kinds(hokm.decide(state, c)) == ["cards_set_aside"] for c in drawn)


def _finish3(
    hands: list[str], won: tuple[int, int, int], **options: Any
) -> tuple[list[log_pb2.Event], HokmState]:
    state = position(hands, hakem=0, leader=0, tricks_won=won, **options)
    return run(state, *(play(s, hands[s].split()[0]) for s in range(3)))


def test_hakem_reaching_nine_tricks_scores_two_for_the_hakem() -> None:
    # "the hakem winning gives the hakem 2 points"; a side needs 9 tricks.
    ended = first(_finish3(["A♠", "2♥", "3♥"], (8, 3, 2))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN
    assert list(ended.winners) == [0] and list(ended.points) == [2, 0, 0]


def test_defenders_reaching_nine_score_one_each() -> None:
    # "the defenders winning gives each defender 1 point"; the defenders' tricks add up.
    ended = first(_finish3(["2♥", "A♠", "3♥"], (3, 4, 4))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN
    assert list(ended.winners) == [1, 2] and list(ended.points) == [0, 1, 1]


def test_hakem_kot_three_players_scores_three_each() -> None:
    # "the defenders winning while the hakem has taken no trick at all ... 3 points".
    ended = first(_finish3(["2♥", "A♠", "3♥"], (0, 4, 4))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_HAKEM_KOT and list(ended.points) == [0, 3, 3]


def test_three_player_point_options() -> None:
    # Options points_hakem_win_3p, points_defenders_win_3p, points_hakem_kot_3p.
    win = first(_finish3(["A♠", "2♥", "3♥"], (8, 3, 2), points_hakem_win_3p=5)[0], "round_ended")
    lose = first(_finish3(["2♥", "A♠", "3♥"], (3, 4, 4), points_defenders_win_3p=4)[0],
                 "round_ended")
    kot = first(_finish3(["2♥", "A♠", "3♥"], (0, 4, 4), points_hakem_kot_3p=7)[0], "round_ended")
    assert (win.points[0], lose.points[1], kot.points[2]) == (5, 4, 7)


def test_tricks_to_win_3p_option() -> None:
    # Option tricks_to_win_3p: with 10 the hakem's ninth trick does not end the round.
    events, _ = _finish3(["A♠ 5♣", "2♥ 6♣", "3♥ 7♣"], (8, 3, 2), tricks_to_win_3p=10)
    assert "round_ended" not in kinds(events)


def test_set_aside_cards_are_revealed_when_the_round_ends() -> None:
    # "only the hakem may see them until the round ends".
    events, _ = _finish3(["A♠", "2♥", "3♥"], (8, 3, 2), set_aside="2♣ 3♣ 4♣ 5♣")
    assert [_name(c) for c in first(events, "round_ended").set_aside] == ["2♣", "3♣", "4♣", "5♣"]


def test_points_are_kept_per_player_and_match_ends_at_target() -> None:
    # "Points are kept per player"; "The game ends when a player reaches target_score".
    events, state = _finish3(["2♥", "A♠", "3♥"], (3, 4, 4), scores=(4, 6, 5))
    assert state.scores == (4, 7, 6)
    assert list(first(events, "match_ended").winners) == [1]
