"""The moves of a turn in any order: the opening over several commands, lay-offs onto
one's own new melds in a "hand", a discard taken for a meld after a joker retrieval, and
the solver answering the same questions (docs/rules/hand.md "A turn", "Melds", "End of a
round", "What the bot and the client need from the engine")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dast.v1 import hand_pb2
from engine import hand
from engine.core.cards import parse_card
from engine.core.errors import RuleViolation
from engine.hand.cards import parse_hand_card
from engine.hand.errors import HandCode
from engine.hand.melds import validate_meld
from engine.hand.solver import can_go_out, min_penalty
from engine.hand.state import HandState, TableMeld
from tests.engine.hand.table import act, cards, kinds, lay, play_plan, spec, table, turn_of

DRAW = {"draw_from_stock": hand_pb2.DrawFromStock()}
TAKE = {"take_discard": hand_pb2.TakeDiscard()}


def discard(text: str) -> dict[str, object]:
    return {"discard": hand_pb2.Discard(card=cards(text)[0])}


def lay_off(meld_id: int, text: str) -> dict[str, object]:
    return {"lay_off": hand_pb2.LayOff(meld_id=meld_id, card=cards(text)[0])}


def violation(state: HandState, **move: object) -> str:
    with pytest.raises(RuleViolation) as caught:
        act(state, 0, **move)
    return caught.value.code


def on_table(meld_id: int, owner: int, text: str, **jokers: str) -> TableMeld:
    faces = {cards(name)[0]: parse_card(face) for name, face in jokers.items()}
    return TableMeld(meld_id, owner, validate_meld(cards(text), faces))


def drawn(hand_text: str, *, stock: str, melds: tuple[TableMeld, ...] = (),
          opened: tuple[int, ...] = (), discard_pile: str = "",
          take: bool = False) -> HandState:
    """Seat 0 of 2 after drawing the top of ``stock`` (or taking the discard), holding
    ``hand_text`` before the draw, with ``melds`` on the table from earlier turns."""
    state = table([hand_text, "2♥' 3♥' 9♣'"], stock=stock)
    state = turn_of(state, 0, discard=discard_pile, opened=opened)
    state = replace(state, melds=melds, highest_opening=0)
    return act(state, 0, **(TAKE if take else DRAW))[1]


def finish(events: list) -> tuple[int, list[int]]:  # type: ignore[type-arg]
    ended = next(e.hand.round_ended for e in events if e.hand.HasField("round_ended"))
    return ended.finish, list(ended.points)


@pytest.mark.parametrize("commands", [1, 2])
def test_a_hand_stays_a_hand_when_laying_off_onto_its_own_new_melds(commands: int) -> None:
    # docs/rules/hand.md "Hand": the whole hand laid in one turn with nothing melded before; it
    # lays no card off on OTHER players' melds, so a lay-off onto a meld the player laid
    # this same turn keeps it a hand, whether the melds came in one command or two.
    others = on_table(0, 1, "5♥ 6♥ 7♥")
    state = drawn("K♠ K♥ K♣ Q♦ J♦ 10♦ 2♣", stock="9♦ 4♣'", melds=(others,),
                  opened=(1,))
    if commands == 1:
        _, state = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣"), spec("10♦ J♦ Q♦")))
    else:
        _, state = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣")))
        _, state = act(state, 0, lay_melds=lay(spec("10♦ J♦ Q♦")))
    run_id = len(state.melds) - 1
    _, state = act(state, 0, **lay_off(run_id, "9♦"))
    events, _ = act(state, 0, **discard("2♣"))
    result, points = finish(events)
    assert result == hand_pb2.HAND_FINISH_HAND and points == [-60, 2 * (2 + 3 + 9)]


def test_a_lay_off_onto_another_players_meld_makes_the_finish_ordinary() -> None:
    # docs/rules/hand.md "Hand": a hand lays no card off on other players' melds.
    others = on_table(0, 1, "5♥ 6♥ 7♥")
    state = drawn("K♠ K♥ K♣ Q♦ J♦ 10♦ 2♣", stock="8♥ 4♣'", melds=(others,),
                  opened=(1,))
    _, state = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣"), spec("10♦ J♦ Q♦")))
    _, state = act(state, 0, **lay_off(0, "8♥"))
    events, _ = act(state, 0, **discard("2♣"))
    result, points = finish(events)
    assert result == hand_pb2.HAND_FINISH_OUT and points == [-30, 2 + 3 + 9]


def test_the_opening_minimum_counts_every_meld_laid_in_the_turn() -> None:
    # docs/rules/hand.md "Opening": at least 51 over the new melds of the turn, whatever the
    # number of commands: K♠ K♥ K♣ (30) then Q♦ J♦ 10♦ (30) open with 60.
    state = drawn("K♠ K♥ K♣ Q♦ J♦ 10♦ 4♠ 2♣", stock="9♥ 4♣'")
    events, kings = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣")))
    assert events[0].hand.melds_laid.opening and events[0].hand.melds_laid.total == 30
    # Until the threshold is reached the opening is incomplete: no discard, no lay-off.
    assert violation(kings, **discard("2♣")) == HandCode.OPENING_BELOW_MINIMUM
    assert violation(kings, **lay_off(0, "4♠")) == HandCode.NOT_OPENED
    listed = hand.legal(kings, 0)
    assert {c.hand.WhichOneof("kind") for c in listed} == {"lay_melds"}
    events, opened = act(kings, 0, lay_melds=lay(spec("10♦ J♦ Q♦")))
    assert events[0].hand.melds_laid.opening and events[0].hand.melds_laid.total == 30
    assert opened.opening_total == 60 and opened.highest_opening == 60
    events, after = act(opened, 0, **discard("2♣"))
    assert kinds(events) == ["card_discarded"] and hand.to_act(after) == 1


def test_a_partial_opening_the_rest_of_the_hand_cannot_complete_is_refused() -> None:
    # docs/rules/hand.md "Opening": the turn must be able to end with an opening of 51 (or a
    # hand), so K♠ K♥ K♣ with nothing else to meld is refused.
    state = drawn("K♠ K♥ K♣ 4♠ 2♣ 9♥ 7♦", stock="5♣ 4♣'")
    assert violation(state, lay_melds=lay(spec("K♠ K♥ K♣"))) == HandCode.OPENING_BELOW_MINIMUM


def test_the_discard_may_be_taken_for_a_meld_made_after_a_joker_retrieval() -> None:
    # docs/rules/hand.md "A turn" 1 and "Joker retrieval": take 8♠, retrieve the table joker
    # with 5♦', meld 7♠ 8♠ JK1; the order of the turn's moves is free.
    run = on_table(0, 1, "4♦ JK1 6♦", JK1="5♦")
    before = turn_of(table(["7♠ 5♦' K♣ 2♥", "2♥' 3♥' 9♣'"]), 0, discard="8♠", opened=[0])
    before = replace(before, melds=(run,))
    assert "take_discard" in [c.hand.WhichOneof("kind") for c in hand.legal(before, 0)]
    _, taken = act(before, 0, **TAKE)
    listed = [c.hand for c in hand.legal(taken, 0)]
    assert [c.WhichOneof("kind") for c in listed] == ["retrieve_joker"]
    assert list(listed[0].retrieve_joker.cards) == cards("5♦'")
    assert violation(taken, **discard("K♣")) == HandCode.MUST_USE_TAKEN_DISCARD
    _, retrieved = act(taken, 0, retrieve_joker=listed[0].retrieve_joker)
    lays = [c.hand.lay_melds for c in hand.legal(retrieved, 0) if c.hand.HasField("lay_melds")]
    assert lays and all(set(cards("7♠ 8♠ JK1")) == set(m.melds[0].cards) for m in lays)
    _, melded = act(retrieved, 0, lay_melds=lay(spec("7♠ 8♠ JK1", JK1="9♠")))
    assert melded.must_use is None
    events, _ = act(melded, 0, **discard("K♣"))
    assert kinds(events) == ["card_discarded"]
    # Without the card that frees the joker, 8♠ fits no meld and cannot be taken.
    stuck = replace(before, hands=(before.hands[0] & ~(1 << cards("5♦'")[0])
                                   | 1 << cards("5♣")[0], before.hands[1]))
    assert violation(stuck, **TAKE) == HandCode.TAKEN_DISCARD_UNUSABLE


def test_can_go_out_considers_joker_retrievals() -> None:
    # docs/rules/hand.md "What the bot and the client need": can the hand go out this turn,
    # joker retrievals included: 5♦' frees the joker of 4♦ JK1 6♦ for 7♠ 8♠ JK1.
    run = validate_meld(cards("4♦ JK1 6♦"), {104: parse_card("5♦")})
    held = cards("7♠ 8♠ 5♦' 2♥")
    plan = can_go_out(held, (run,), has_opened=True, must_use=parse_hand_card("8♠"))
    assert plan is not None and not plan.is_hand
    assert [(r.meld_index, r.cards, r.joker) for r in plan.retrievals] == [
        (0, tuple(cards("5♦'")), 104)
    ]
    assert [sorted(m.cards) for m in plan.melds] == [sorted(cards("7♠ 8♠ JK1"))]
    assert plan.discard == parse_hand_card("2♥")
    # The same position through the engine: take 8♠, retrieve, meld, discard the last card.
    state = turn_of(table(["7♠ 5♦' 2♥", "2♥' 3♥' 9♣'"]), 0, discard="8♠", opened=[0])
    state = replace(state, melds=(TableMeld(0, 1, run),))
    _, state = act(state, 0, **TAKE)
    _, state = act(state, 0, retrieve_joker=hand_pb2.RetrieveJoker(meld_id=0, cards=cards("5♦'")))
    _, state = act(state, 0, lay_melds=lay(spec("7♠ 8♠ JK1", JK1="6♠")))
    events, _ = act(state, 0, **discard("2♥"))
    assert finish(events)[0] == hand_pb2.HAND_FINISH_OUT


def test_a_seat_opening_this_turn_may_retrieve_a_joker_after_its_opening_to_go_out() -> None:
    # docs/rules/hand.md "Opening", "Joker retrieval": open with K♠ K♥ K♣ and 10♦ J♦ Q♦
    # (60), then retrieve the joker of 4♦ JK1 6♦ with 5♦', meld 7♠ 8♠ JK1, discard 2♠.
    run = on_table(0, 1, "4♦ JK1 6♦", JK1="5♦")
    held = cards("K♠ K♥ K♣ Q♦ J♦ 10♦ 5♦' 7♠ 8♠ 2♠")
    plan = can_go_out(held, (run.meld,), has_opened=False)
    assert plan is not None and not plan.is_hand and plan.discard == parse_hand_card("2♠")
    opening = plan.melds[: plan.opening_melds]
    assert sorted(sorted(m.cards) for m in opening) == sorted(
        [sorted(cards("K♠ K♥ K♣")), sorted(cards("10♦ J♦ Q♦"))])
    assert [(r.meld_index, r.cards, r.joker) for r in plan.retrievals] == [
        (0, tuple(cards("5♦'")), 104)
    ]
    assert [sorted(m.cards) for m in plan.melds[plan.opening_melds:]] == [
        sorted(cards("7♠ 8♠ JK1"))
    ]
    # The engine plays the plan: the retrieval comes once the opening reached 51.
    state = drawn("K♠ K♥ K♣ Q♦ J♦ 10♦ 5♦' 7♠ 8♠", stock="2♠ 4♣'", melds=(run,), opened=(1,))
    retrieve = {"retrieve_joker": hand_pb2.RetrieveJoker(meld_id=0, cards=cards("5♦'"))}
    assert violation(state, **retrieve) == HandCode.NOT_OPENED
    events, _ = act(play_plan(state, 0, plan), 0, **discard("2♠"))
    assert finish(events)[0] == hand_pb2.HAND_FINISH_OUT


def test_a_retrieved_joker_counts_in_no_opening() -> None:
    # docs/rules/hand.md "Opening": the retrieval needs the opening first, so Q♦ J♦ JK1
    # cannot help K♠ K♥ K♣ (30) reach 51.
    run = validate_meld(cards("4♦ JK1 6♦"), {104: parse_card("5♦")})
    held = cards("K♠ K♥ K♣ Q♦ J♦ 5♦' 2♠")
    assert can_go_out(held, (run,), has_opened=False) is None
    assert can_go_out(held, (run,), has_opened=False, open_min=30) is not None
    assert min_penalty(held, table_melds=(run,), has_opened=False, keep=1).points == (
        30 + 10 + 10 + 5 + 2
    )


def test_a_retrieved_joker_may_extend_a_meld_of_the_opening() -> None:
    # docs/rules/hand.md "Laying off": the joker freed by Q♣ and Q♦ (the full set has no
    # room left) is laid off onto the seat's own K♠ K♥ K♣, laid in its opening this turn.
    queens = on_table(0, 1, "Q♠ Q♥ JK2", JK2="Q♣")
    held = cards("K♠ K♥ K♣ 9♦ 10♦ J♦ Q♣ Q♦ 2♠")
    plan = can_go_out(held, (queens.meld,), has_opened=False)
    assert plan is not None and plan.retrievals and plan.discard == parse_hand_card("2♠")
    assert [(step.meld_index >= 1, step.card) for step in plan.lay_offs] == [(True, 105)]
    state = drawn("K♠ K♥ K♣ 9♦ 10♦ J♦ Q♣ Q♦", stock="2♠ 4♣'", melds=(queens,), opened=(1,))
    events, _ = act(play_plan(state, 0, plan), 0, **discard("2♠"))
    assert finish(events)[0] == hand_pb2.HAND_FINISH_OUT


def test_min_penalty_counts_a_retrieved_joker_melded_again() -> None:
    # docs/rules/hand.md "Joker retrieval": 5♦' frees the joker of 4♦ JK1 6♦ for 7♠ 8♠ JK1,
    # leaving 2♥ (2 points) where keeping the cards leaves 22.
    run = validate_meld(cards("4♦ JK1 6♦"), {104: parse_card("5♦")})
    held = cards("7♠ 8♠ 5♦' 2♥")
    penalty = min_penalty(held, table_melds=(run,), keep=1)
    assert penalty.points == 2 and penalty.left == tuple(cards("2♥"))
    assert [(r.meld_index, r.cards) for r in penalty.retrievals] == [(0, tuple(cards("5♦'")))]
    assert min_penalty(held, table_melds=(run,), keep=1, can_lay_off=False).points == 22
    # Once retrieved the joker may go back onto the run, at one end.
    back = min_penalty(cards("5♦' 2♥ 9♣"), table_melds=(run,), keep=1)
    assert back.points == 11 and [step.card for step in back.lay_offs] == [104]
    # A full set takes nothing back: the joker would stay in hand, costing 15 for a Q's 10;
    # with jokers worth nothing, it stays there and saves the 10.
    queens = validate_meld(cards("Q♠ Q♥ Q♣ JK2"), {105: parse_card("Q♦")})
    assert min_penalty(cards("Q♦ 2♥ 9♣"), table_melds=(queens,), keep=1).points == 21
    cheap = min_penalty(cards("Q♦ 2♥ 9♣"), table_melds=(queens,), keep=1, joker_penalty=0)
    assert cheap.points == 11 and sorted(cheap.left) == sorted(cards("2♥ 9♣ JK2"))


def test_min_penalty_respects_the_opening_minimum_before_opening() -> None:
    # docs/rules/hand.md "Opening": a player who has not opened melds nothing below 51, unless
    # it lays the whole hand but one card (a hand, with hand_waives_open_min).
    held = cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♥")
    assert min_penalty(held, has_opened=True).points == 8 + 10
    assert min_penalty(held, has_opened=False).points == 6 + 7 + 8 + 6 + 7 + 8 + 8 + 10
    assert min_penalty(held, has_opened=False, open_min=42).points == 8 + 10
    whole = cards("2♠ 3♠ 4♠ 9♣ 9♥ 9♦ 5♥")
    assert min_penalty(whole, has_opened=False).points == 5
    assert min_penalty(whole, has_opened=False, hand_waives_open_min=False).points == (
        2 + 3 + 4 + 27 + 5
    )


def test_the_documented_opening_of_51_with_a_joker_face() -> None:
    # docs/rules/hand.md "Building commands": 10♠ J♠ Q♠ (30) and 7♥ 7♣ JK1=7♦ (21) by id.
    state = drawn("10♠ J♠ Q♠ 7♥ 7♣ JK1 7♣' 2♦", stock="9♥ 4♣'")
    command = hand_pb2.LayMelds(melds=[
        hand_pb2.MeldSpec(cards=[8, 9, 10]),
        hand_pb2.MeldSpec(cards=[18, 31, 104], jokers=[hand_pb2.JokerFace(joker=104, face=44)]),
    ])
    events, opened = act(state, 0, lay_melds=command)
    assert events[0].hand.melds_laid.total == 51 and opened.opening_total == 51
    assert hand.legal(opened, 0)[-1].hand.HasField("discard")
