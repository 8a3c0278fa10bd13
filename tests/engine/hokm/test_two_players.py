"""docs/rules/hokm.md "Two players" (`000`): the piles with face-up tops, trump from pile A's card
(trump_2p = pile_card) or declared (hakem_declares), taking pile cards after each trick,
26 tricks with a majority of 14 (tricks_to_win_2p)."""

from __future__ import annotations

from typing import TypedDict

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import card_name, parse_card, popcount
from engine.core.errors import Code, InvalidCommand
from engine.hokm.errors import HokmCode
from engine.hokm.state import Phase

from .notation import declare, first, kinds, play, position, run, started, take_pile, violation


def test_pile_card_deals_everything_and_trump_is_pile_a_top() -> None:
    # trump_2p = pile_card (default): "Trump is the suit of pile A's face-up card".
    events, state = started(2)
    assert kinds(events)[-3:] == ["cards_dealt", "piles_laid", "trump_declared"]
    piles = first(events, "piles_laid")
    assert len(piles.pile_a) == len(piles.pile_b) == 13
    assert piles.top_a == piles.pile_a[0] and piles.top_b == piles.pile_b[0]
    declared = first(events, "trump_declared")
    assert declared.from_pile and declared.suit == piles.top_a // 13 + 1
    assert [popcount(h) for h in state.hands] == [13, 13]
    assert state.phase == Phase.PLAY and state.turn == state.hakem  # the hakem leads


def test_hakem_declares_option_deals_five_first() -> None:
    # trump_2p = hakem_declares: "the hakem sees 5 cards and declares as in the four-player
    # game before the rest is dealt".
    _, state = started(2, trump_2p=hokm_pb2.TRUMP_2P_HAKEM_DECLARES)
    assert state.phase == Phase.DECLARE_TRUMP
    assert [popcount(h) for h in state.hands] == [5 if s == state.hakem else 0 for s in (0, 1)]
    events, after = run(state, declare(state.hakem, "♦"))
    assert kinds(events) == ["trump_declared", "cards_dealt", "piles_laid"]
    assert [popcount(h) for h in after.hands] == [13, 13] and after.trump == 3


class _Piles(TypedDict):
    """The two piles' cards, as ``position`` takes them."""

    pile_a: str
    pile_b: str


PILES: _Piles = {"pile_a": "K♣ 2♦ 3♦", "pile_b": "Q♥ 4♦ 5♦"}


def test_trick_winner_chooses_a_pile_and_loser_takes_the_other() -> None:
    # "the trick's winner chooses a pile and takes its face-up card; the loser takes the
    # face-up card of the other pile. The card under each taken card is then turned".
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, **PILES)
    events, after = run(state, play(0, "A♠"), play(1, "2♥"))
    assert kinds(events)[-1] == "trick_taken" and after.phase == Phase.TAKE_PILE
    assert after.turn == 0 and hokm.legal(after, 1) == []
    assert violation(after, take_pile(1, 0)) == Code.NOT_YOUR_TURN
    assert violation(after, play(0, "7♣")) == Code.WRONG_PHASE
    events, after = run(after, take_pile(0, 1))
    taken = first(events, "pile_cards_taken")
    assert (taken.winner, taken.winner_pile) == (0, 1)
    assert card_name(taken.winner_card) == "Q♥" and card_name(taken.loser_card) == "K♣"
    assert card_name(taken.top_a) == "2♦" and card_name(taken.top_b) == "4♦"
    assert taken.has_top_a and taken.has_top_b
    assert after.hands[0] >> parse_card("Q♥") & 1 and after.hands[1] >> parse_card("K♣") & 1
    assert after.phase == Phase.PLAY and after.turn == 0  # the winner leads next


def test_no_such_pile_is_an_invalid_command() -> None:
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, **PILES)
    _, after = run(state, play(0, "A♠"), play(1, "2♥"))
    bad = log_pb2.Command(seat=0)
    bad.hokm.take_pile_card.pile = 2
    try:
        hokm.decide(after, bad)
    except InvalidCommand as error:
        assert error.code == HokmCode.NO_SUCH_PILE
    else:
        raise AssertionError("pile 2 accepted")


def test_no_drawing_once_the_piles_are_empty() -> None:
    # "the last 13 tricks are played from hand without drawing".
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, tricks_won=(7, 6))
    events, after = run(state, play(0, "A♠"), play(1, "2♥"))
    assert after.phase == Phase.PLAY and "pile_cards_taken" not in kinds(events)


def test_last_pile_cards_leave_no_top() -> None:
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, pile_a="K♣", pile_b="Q♥", tricks_won=(6, 6))
    _, after = run(state, play(0, "A♠"), play(1, "2♥"), take_pile(0, 0))
    assert after.pile_a == () and after.pile_b == ()


def test_fourteen_tricks_win_the_round() -> None:
    # "26 tricks in all; a majority is 14"; four-player table, "team" read as "player".
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, tricks_won=(13, 5))
    events, _ = run(state, play(0, "A♠"), play(1, "2♥"))
    ended = first(events, "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_WIN and list(ended.points) == [1, 0]


def test_two_player_kot_and_hakem_kot() -> None:
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, tricks_won=(13, 0))
    assert first(run(state, play(0, "A♠"), play(1, "2♥"))[0], "round_ended").result == (
        hokm_pb2.ROUND_RESULT_KOT
    )
    state = position(["2♥ 7♣", "A♠ 8♣"], hakem=0, tricks_won=(0, 13))
    ended = first(run(state, play(0, "2♥"), play(1, "A♠"))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_HAKEM_KOT and list(ended.points) == [0, 3]


def test_tricks_to_win_2p_option() -> None:
    state = position(["A♠ 7♣", "2♥ 8♣"], hakem=0, tricks_won=(13, 5), tricks_to_win_2p=15)
    events, _ = run(state, play(0, "A♠"), play(1, "2♥"))
    assert "round_ended" not in kinds(events)


def test_two_player_shelem_with_play_all_tricks() -> None:
    state = position(["A♠", "2♥"], hakem=0, tricks_won=(25, 0), play_all_tricks=True)
    ended = first(run(state, play(0, "A♠"), play(1, "2♥"))[0], "round_ended")
    assert ended.result == hokm_pb2.ROUND_RESULT_SHELEM
