"""The deal and a turn's steps (docs/rules/hand.md "Players, seats and the deal", "A turn")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dast.v1 import hand_pb2, hokm_pb2, log_pb2
from engine import hand
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.hand.errors import HandCode
from engine.hand.state import Phase
from tests.engine.hand.table import SEED, act, cards, kinds, lay, players, spec, table, turn_of

DRAW = {"draw_from_stock": hand_pb2.DrawFromStock()}
TAKE = {"take_discard": hand_pb2.TakeDiscard()}


def discard(text: str) -> dict[str, object]:
    return {"discard": hand_pb2.Discard(card=cards(text)[0])}


def violation(state: hand.HandState, seat: int, **move: object) -> str:
    with pytest.raises(RuleViolation) as caught:
        act(state, seat, **move)
    return caught.value.code


@pytest.mark.parametrize("count", [2, 3, 4])
def test_deal_gives_fourteen_cards_and_a_fifteenth_to_the_player_after_the_dealer(
    count: int,
) -> None:
    # docs/rules/hand.md "the deal": 14 each, 15 to the player after the dealer (seat 0 deals
    # first), the rest is the stock and the discard pile starts empty.
    events = hand.start(hand_pb2.HandRules(), SEED, players(count))
    assert kinds(events) == ["match_started", "round_started", "cards_dealt"]
    state = hand.replay(events)
    assert [h.bit_count() for h in state.hands] == [14, 15, *[14] * (count - 2)]
    assert len(state.stock) == 106 - 14 * count - 1
    assert state.discard == ()
    assert state.dealer == 0 and hand.to_act(state) == 1 and state.phase is Phase.FIRST_DISCARD
    every = 0
    for cards_held in state.hands:
        every |= cards_held
    for card in state.stock:
        every |= 1 << card
    assert every == (1 << 106) - 1  # 106 identified cards, each dealt once


def test_first_player_starts_by_discarding_only() -> None:
    # docs/rules/hand.md "the deal": the player after the dealer starts by discarding only.
    state = hand.replay(hand.start(hand_pb2.HandRules(), SEED, players(2)))
    options = hand.legal(state, 1)
    assert {c.hand.WhichOneof("kind") for c in options} == {"discard"}
    assert len(options) == 15
    assert violation(state, 1, **DRAW) == HandCode.FIRST_TURN_DISCARD_ONLY
    assert violation(state, 1, lay_melds=lay(spec("2♠ 3♠ 4♠"))) == HandCode.FIRST_TURN_DISCARD_ONLY


@pytest.mark.parametrize("count", [2, 3, 4])
def test_play_passes_to_the_next_seat(count: int) -> None:
    # docs/rules/hand.md "the deal": next seat = seat + 1 mod n.
    state = hand.replay(hand.start(hand_pb2.HandRules(), SEED, players(count)))
    first = hand.legal(state, 1)[0]
    events, state = act(state, 1, discard=first.hand.discard)
    assert kinds(events) == ["card_discarded"]
    assert hand.to_act(state) == 2 % count and state.phase is Phase.DRAW
    assert hand.legal(state, 1) == []


def test_a_turn_starts_with_one_draw() -> None:
    # docs/rules/hand.md "A turn" 1: draw one card, then meld, then discard.
    state = turn_of(table(["7♠ 8♠ 9♠ K♦", "2♥ 3♥ 4♥"]), 0, discard="5♣")
    assert violation(state, 0, **discard("K♦")) == HandCode.MUST_DRAW_FIRST
    _, drawn = act(state, 0, **DRAW)
    assert violation(drawn, 0, **DRAW) == HandCode.ALREADY_DREW
    assert violation(drawn, 0, **TAKE) == HandCode.ALREADY_DREW


def test_drawing_from_the_stock_takes_its_top_card_hidden_from_the_others() -> None:
    # docs/rules/hand.md "A turn" 1; the stock is face down.
    state = turn_of(table(["7♠ 8♠", "2♥ 3♥"], stock="Q♦ K♦"), 0)
    events, state = act(state, 0, **DRAW)
    assert events[0].hand.card_drawn.card == cards("Q♦")[0]
    assert state.stock == tuple(cards("K♦")) and state.hands[0] >> cards("Q♦")[0] & 1
    assert hand.redact(events[0], 0).hand.card_drawn.HasField("card")
    for other in (1, None):
        assert not hand.redact(events[0], other).hand.card_drawn.HasField("card")


def test_taking_the_discard_takes_the_top_card_in_public() -> None:
    # docs/rules/hand.md "A turn" 1: the top card of the discard pile.
    state = turn_of(table(["7♠ 8♠ K♦ K♣", "2♥ 3♥"]), 0, discard="2♣ 9♠", opened=[0])
    events, state = act(state, 0, **TAKE)
    assert events[0].hand.card_drawn.from_discard
    assert hand.redact(events[0], 1).hand.card_drawn.card == cards("9♠")[0]
    assert state.discard == tuple(cards("2♣")) and state.must_use == cards("9♠")[0]


def test_the_discard_pile_must_hold_a_card_to_take() -> None:
    state = turn_of(table(["7♠ 8♠ K♦", "2♥ 3♥"]), 0)
    assert violation(state, 0, **TAKE) == HandCode.DISCARD_PILE_EMPTY


def test_a_taken_discard_must_be_melded_before_the_turn_can_end() -> None:
    # docs/rules/hand.md "A turn" 1: taking the discard obliges a meld using it this turn;
    # the other moves of the turn come in any order, as long as the card stays usable.
    state = turn_of(table(["7♠ 8♠ 6♠ K♦ K♣ K♥ 4♦", "2♥ 3♥"]), 0, discard="9♠", opened=[0])
    _, taken = act(state, 0, **TAKE)
    assert violation(taken, 0, **discard("4♦")) == HandCode.MUST_USE_TAKEN_DISCARD
    # 6♠ 7♠ 8♠ would strand the 9♠ (nothing left to meld it with).
    assert violation(taken, 0, lay_melds=lay(spec("6♠ 7♠ 8♠"))) == (
        HandCode.MUST_USE_TAKEN_DISCARD
    )
    kinds_listed = {c.hand.WhichOneof("kind") for c in hand.legal(taken, 0)}
    assert kinds_listed == {"lay_melds"}
    _, kings = act(taken, 0, lay_melds=lay(spec("K♦ K♣ K♥")))
    assert kings.must_use == cards("9♠")[0]
    events, melded = act(kings, 0, lay_melds=lay(spec("7♠ 8♠ 9♠")))
    assert melded.must_use is None
    events, after = act(melded, 0, **discard("4♦"))
    assert kinds(events) == ["card_discarded"] and hand.to_act(after) == 1


def test_before_opening_the_taken_discard_must_be_part_of_the_opening_turn() -> None:
    # docs/rules/hand.md "A turn" 1: before having opened, the card must be part of the opening,
    # which counts every meld laid in the turn.
    hand_text = "K♦ K♣ K♥ Q♠ Q♥ Q♦ 7♠ 8♠ 2♦"
    state = turn_of(table([hand_text, "2♥ 3♥"]), 0, discard="9♠")
    _, taken = act(state, 0, **TAKE)
    _, royal = act(taken, 0, lay_melds=lay(spec("K♦ K♣ K♥"), spec("Q♠ Q♥ Q♦")))
    assert violation(royal, 0, **discard("2♦")) == HandCode.MUST_USE_TAKEN_DISCARD
    events, opened = act(royal, 0, lay_melds=lay(spec("7♠ 8♠ 9♠")))
    assert events[0].hand.melds_laid.opening and opened.opening_total == 84
    # A lay-down that strands the taken card is refused, in the opening turn too.
    strands = turn_of(table(["7♠ 7♥ 7♦ 8♠ K♦ K♣ K♥ Q♠ Q♥ Q♦ 2♦", "2♥ 3♥"]), 0, discard="9♠")
    _, taken = act(strands, 0, **TAKE)
    melds = lay(spec("7♠ 7♥ 7♦"), spec("K♦ K♣ K♥"), spec("Q♠ Q♥ Q♦"))
    assert violation(taken, 0, lay_melds=melds) == HandCode.OPENING_MUST_USE_TAKEN_DISCARD


def test_a_discard_no_meld_could_use_cannot_be_taken() -> None:
    # Taking obliges a meld this turn; a card no meld could use would leave the turn with
    # no legal end, so the engine refuses it (and does not list it).
    state = turn_of(table(["7♠ 8♠ K♦", "2♥ 3♥"]), 0, discard="2♣")
    assert violation(state, 0, **TAKE) == HandCode.TAKEN_DISCARD_UNUSABLE
    assert [c.hand.WhichOneof("kind") for c in hand.legal(state, 0)] == ["draw_from_stock"]
    # Not opened: 7♠ 8♠ 9♠ is a meld but 24 points is no opening.
    unopened = turn_of(table(["7♠ 8♠ K♦ 2♦", "2♥ 3♥"]), 0, discard="9♠")
    assert violation(unopened, 0, **TAKE) == HandCode.TAKEN_DISCARD_UNUSABLE
    opened = turn_of(table(["7♠ 8♠ K♦ 2♦", "2♥ 3♥"]), 0, discard="9♠", opened=[0])
    assert [c.hand.WhichOneof("kind") for c in hand.legal(opened, 0)] == [
        "draw_from_stock",
        "take_discard",
    ]


def test_cards_must_be_in_hand_and_exist() -> None:
    state = turn_of(table(["7♠ 8♠", "2♥ 3♥"]), 0, phase=Phase.PLAY)
    assert violation(state, 0, **discard("2♥")) == HandCode.CARD_NOT_IN_HAND
    with pytest.raises(InvalidCommand) as caught:
        act(state, 0, discard=hand_pb2.Discard(card=106))
    assert caught.value.code == Code.INVALID_CARD


def test_only_the_seat_to_act_may_act() -> None:
    state = turn_of(table(["7♠ 8♠", "2♥ 3♥"]), 0)
    assert violation(state, 1, **DRAW) == Code.NOT_YOUR_TURN
    with pytest.raises(InvalidCommand) as caught:
        act(state, 5, **DRAW)
    assert caught.value.code == Code.INVALID_SEAT


def test_commands_of_another_game_or_none_are_malformed() -> None:
    state = turn_of(table(["7♠ 8♠", "2♥ 3♥"]), 0)
    hokm_command = log_pb2.Command(hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard()))
    with pytest.raises(InvalidCommand) as caught:
        hand.decide(state, hokm_command)
    assert caught.value.code == Code.WRONG_GAME
    with pytest.raises(InvalidCommand) as caught:
        hand.decide(state, log_pb2.Command(hand=hand_pb2.HandCommand()))
    assert caught.value.code == Code.MALFORMED_COMMAND


def test_no_command_is_accepted_once_the_match_is_over() -> None:
    state = replace(turn_of(table(["7♠ 8♠", "2♥ 3♥"]), 0), phase=Phase.MATCH_OVER)
    assert violation(state, 0, **DRAW) == Code.GAME_OVER
    assert hand.legal(state, 0) == [] and hand.to_act(state) is None and hand.is_over(state)


def test_a_joker_taken_from_the_discard_pile_must_join_a_new_meld() -> None:
    # docs/rules/hand.md "A turn" 1 with a joker: every listed lay-down uses the taken joker.
    state = turn_of(table(["7♠ 8♠ K♦ 2♣", "2♥ 3♥"]), 0, discard="4♦ JK2", opened=[0])
    _, taken = act(state, 0, **TAKE)
    listed = [c.hand.lay_melds for c in hand.legal(taken, 0)]
    assert listed and all(105 in m.melds[0].cards for m in listed)
    _, melded = act(taken, 0, lay_melds=listed[0])
    assert melded.must_use is None and not melded.hands[0] >> 105 & 1


def test_evolve_refuses_an_event_of_another_game_or_none() -> None:
    state = turn_of(table(["7♠ 8♠", "2♥ 3♥"]), 0)
    hokm_event = log_pb2.Event(seq=state.seq + 1, hokm=hokm_pb2.HokmEvent())
    with pytest.raises(ValueError, match="not a Hand event"):
        hand.evolve(state, hokm_event)
    empty = log_pb2.Event(seq=state.seq + 1, hand=hand_pb2.HandEvent())
    with pytest.raises(ValueError, match="unexpected"):
        hand.evolve(state, empty)
