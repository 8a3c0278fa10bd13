"""docs/rules/hokm.md "Playing tricks": leading, following suit, cutting, winning tricks; and
the violation codes of every illegal play."""

from __future__ import annotations

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import parse_card
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.hokm.errors import HokmCode
from engine.hokm.state import HokmState, Phase

from .notation import declare, first, kinds, play, position, run, started, violation

FOUR = ("A♠ 2♥", "K♠ 3♥", "Q♠ 4♥", "J♠ 5♦")


def test_must_follow_suit_when_holding_led_suit() -> None:
    # "Follow suit": a player holding a card of the led suit must play one of them.
    state = position(["2♥ 3♣", "3♥ A♣", "4♥ 5♣", "5♥ 6♣"], trick="10♥", leader=3, turn=0)
    assert violation(state, play(0, "3♣")) == HokmCode.MUST_FOLLOW_SUIT
    events = hokm.decide(state, play(0, "2♥"))
    assert kinds(events) == ["card_played"]


def test_void_player_may_cut_with_trump_or_discard() -> None:
    # "A player with no card of the led suit may play any card": trump or any other card.
    state = position(["2♠ 3♣", "3♥ A♣", "4♥ 5♣", "5♥ 6♣"], trick="10♥", leader=3, turn=0)
    assert {c.hokm.play_card.card for c in hokm.legal(state, 0)} == {
        parse_card("2♠"), parse_card("3♣")
    }
    assert kinds(hokm.decide(state, play(0, "3♣"))) == ["card_played"]  # not obliged to trump


def test_nobody_is_obliged_to_play_higher() -> None:
    # "Nobody is ever obliged to play higher."
    state = position(["2♥ A♥", "3♥", "4♥", "5♥"], trick="10♥", leader=3, turn=0)
    assert kinds(hokm.decide(state, play(0, "2♥"))) == ["card_played"]


def test_highest_trump_wins_the_trick() -> None:
    # "A trick is won by the highest trump in it."
    state = position(["A♥ 2♦", "2♠ 3♦", "3♠ 4♦", "K♥ 5♦"], trick="", hakem=0, trump="♠",
                     tricks_won=(1, 0, 0, 0))
    events, after = run(state, play(0, "A♥"), play(1, "2♠"), play(2, "3♠"), play(3, "K♥"))
    assert first(events, "trick_taken") == hokm_pb2.TrickTaken(seat=2, trick=2)
    assert after.turn == 2 and after.leader == 2  # the winner leads the next trick


def test_highest_card_of_led_suit_wins_without_trump() -> None:
    # "If it holds no trump, by the highest card of the led suit" (off-suit aces lose).
    state = position(["10♥ 2♦", "A♣ 3♦", "Q♥ 4♦", "J♥ 5♦"], trump="♠")
    events, _ = run(state, play(0, "10♥"), play(1, "A♣"), play(2, "Q♥"), play(3, "J♥"))
    assert first(events, "trick_taken").seat == 2


def test_hakem_leads_the_first_trick() -> None:
    # "The hakem leads the first trick."
    _, state = started_and_declared()
    assert state.phase == Phase.PLAY and state.turn == state.hakem
    hakem = state.hakem
    assert violation(state, play((hakem + 1) % 4, "2♠")) == Code.NOT_YOUR_TURN


def started_and_declared() -> tuple[list[log_pb2.Event], HokmState]:
    events, state = started()
    more, state = run(state, declare(state.hakem, "♥"))
    return events + more, state


def test_card_not_in_hand_is_refused() -> None:
    state = position(list(FOUR))
    assert violation(state, play(0, "3♣")) == HokmCode.CARD_NOT_IN_HAND


def test_playing_out_of_turn_is_refused() -> None:
    state = position(list(FOUR))
    assert violation(state, play(1, "K♠")) == Code.NOT_YOUR_TURN


def test_playing_before_trump_is_declared_is_refused() -> None:
    # "Dealing and trump": the hakem declares before any card is played.
    _, state = started()
    assert violation(state, play(state.hakem, "2♠")) == HokmCode.TRUMP_NOT_DECLARED


def test_malformed_commands_are_invalid_commands() -> None:
    state = position(list(FOUR))
    bad_card = log_pb2.Command(seat=0)
    bad_card.hokm.play_card.card = 52
    empty = log_pb2.Command(seat=0)
    empty.hokm.SetInParent()
    other_game = log_pb2.Command(seat=0)
    bad_seat = play(4, "A♠")
    for command, code in [
        (bad_card, Code.INVALID_CARD),
        (empty, Code.MALFORMED_COMMAND),
        (other_game, Code.WRONG_GAME),
        (bad_seat, Code.INVALID_SEAT),
    ]:
        try:
            hokm.decide(state, command)
        except InvalidCommand as error:
            assert error.code == code
        else:
            raise AssertionError(f"{command} accepted")


def test_commands_after_the_match_are_refused() -> None:
    state = position(list(FOUR))._replace(phase=Phase.MATCH_OVER, turn=-1)
    assert violation(state, play(0, "A♠")) == Code.GAME_OVER
    assert hokm.legal(state, 0) == []


def test_declaring_trump_during_play_is_wrong_phase() -> None:
    state = position(list(FOUR))
    assert violation(state, declare(0, "♥")) == Code.WRONG_PHASE


def test_messages_name_the_card_and_the_seq() -> None:
    state = position(["2♥ 3♣", "3♥ A♣", "4♥ 5♣", "5♥ 6♣"], trick="10♥", leader=3, turn=0)
    try:
        hokm.decide(state, play(0, "3♣"))
    except RuleViolation as error:
        assert "3♣" in error.message and f"seq {state.seq}" in error.message
    else:
        raise AssertionError("accepted")
