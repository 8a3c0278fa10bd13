"""Laying melds, the opening, lay-offs and joker retrieval in a match (docs/rules/hand.md
"Melds", "A turn" 2). Meld shapes themselves are tested with engine.hand.melds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dast.v1 import hand_pb2
from engine import hand
from engine.core.cards import parse_card
from engine.core.errors import Code, InvalidCommand, RuleViolation
from engine.hand.codec import table_meld_of_proto
from engine.hand.errors import HandCode
from engine.hand.melds import validate_meld
from engine.hand.state import HandState, Phase, TableMeld
from tests.engine.hand.table import act, cards, lay, spec, table, turn_of


def playing(hand_text: str, *, opened: bool = False, rules: hand_pb2.HandRules | None = None,
            melds: tuple[TableMeld, ...] = ()) -> HandState:
    """Seat 0 after its draw, holding ``hand_text``; seat 1 holds a few cards."""
    state = table([hand_text, "2♥ 3♥ 4♦"], rules=rules)
    state = turn_of(state, 0, phase=Phase.PLAY, opened=[0] if opened else [])
    return replace(state, melds=melds, turn_first_meld=len(melds))


def on_table(meld_id: int, owner: int, text: str, **jokers: str) -> TableMeld:
    faces = {cards(name)[0]: parse_card(face) for name, face in jokers.items()}
    return TableMeld(meld_id, owner, validate_meld(cards(text), faces))


def violation(state: HandState, **move: object) -> str:
    with pytest.raises(RuleViolation) as caught:
        act(state, 0, **move)
    return caught.value.code


def test_an_opening_below_open_min_is_refused() -> None:
    # docs/rules/hand.md "Opening": the first lay-down totals at least 51 (open_min).
    state = playing("10♠ J♠ Q♠ 2♥ 2♣ 2♦ 9♦ 5♣")
    assert violation(state, lay_melds=lay(spec("10♠ J♠ Q♠"), spec("2♥ 2♣ 2♦"))) == (
        HandCode.OPENING_BELOW_MINIMUM
    )


def test_the_opening_counts_every_new_meld_of_the_command() -> None:
    # docs/rules/hand.md "Opening": counted over the new melds of that turn (one LayMelds).
    state = playing("K♠ K♥ K♣ 10♦ J♦ Q♦ 9♦ 2♣")
    events, after = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣"), spec("10♦ J♦ Q♦")))
    laid = events[0].hand.melds_laid
    assert laid.opening and laid.total == 60 and [m.id for m in laid.melds] == [0, 1]
    assert after.opened[0] and after.highest_opening == 60
    # Once opened, later lay-downs need no threshold.
    _, again = act(replace(after, hands=(after.hands[0] | _mask("5♣ 5♥ 5♦"), after.hands[1])),
                   0, lay_melds=lay(spec("5♣ 5♥ 5♦")))
    assert len(again.melds) == 3


def _mask(text: str) -> int:
    mask = 0
    for card in cards(text):
        mask |= 1 << card
    return mask


def test_open_min_option_sets_the_threshold() -> None:
    # Option open_min.
    state = playing("10♠ J♠ Q♠ 2♥", rules=hand_pb2.HandRules(open_min=30))
    events, _ = act(state, 0, lay_melds=lay(spec("10♠ J♠ Q♠")))
    assert events[0].hand.melds_laid.total == 30


@pytest.mark.parametrize(("ace_low_value", "total"), [(None, 66), (11, 76)])
def test_the_low_ace_of_a_2_3_counts_ace_low_value(ace_low_value: int | None, total: int) -> None:
    # docs/rules/hand.md "Cards": A counts 1 in A-2-3 (option ace_low_value, default 1).
    rules = hand_pb2.HandRules()
    if ace_low_value is not None:
        rules.ace_low_value = ace_low_value
    state = playing("A♠ 2♠ 3♠ K♠ K♥ K♣ Q♦ J♦ 10♦ 4♥", rules=rules)
    melds = lay(spec("A♠ 2♠ 3♠"), spec("K♠ K♥ K♣"), spec("10♦ J♦ Q♦"))
    events, _ = act(state, 0, lay_melds=melds)
    assert events[0].hand.melds_laid.total == total


def test_a_joker_counts_as_the_card_it_stands_for_and_is_recorded_with_it() -> None:
    # docs/rules/hand.md "Cards" and "Melds": the meld states which card each joker stands for.
    state = playing("K♠ JK1 K♣ Q♦ J♦ 10♦ 4♥")
    events, _after = act(state, 0, lay_melds=lay(spec("K♠ JK1 K♣", JK1="K♥"), spec("10♦ J♦ Q♦")))
    assert events[0].hand.melds_laid.total == 60
    recorded = table_meld_of_proto(events[0].hand.melds_laid.melds[0]).meld
    assert dict(zip(recorded.cards, recorded.faces, strict=True))[104] == parse_card("K♥")


def test_a_joker_without_its_face_is_a_malformed_meld() -> None:
    state = playing("K♠ JK1 K♣ Q♦ J♦ 10♦ 4♥")
    with pytest.raises(InvalidCommand) as caught:
        act(state, 0, lay_melds=lay(spec("K♠ JK1 K♣"), spec("10♦ J♦ Q♦")))
    assert caught.value.code == Code.MALFORMED_COMMAND


@pytest.mark.parametrize(("max_jokers", "accepted"), [(None, False), (2, True)])
def test_max_jokers_per_meld(max_jokers: int | None, accepted: bool) -> None:
    # docs/rules/hand.md "Melds": at most one joker per meld (option max_jokers_per_meld).
    rules = hand_pb2.HandRules()
    if max_jokers is not None:
        rules.max_jokers_per_meld = max_jokers
    state = playing("J♠ Q♠ JK1 JK2 K♦ K♣ K♥ 4♥", rules=rules)
    melds = lay(spec("J♠ Q♠ JK1 JK2", JK1="K♠", JK2="A♠"), spec("K♦ K♣ K♥"))
    if accepted:
        events, _ = act(state, 0, lay_melds=melds)
        assert events[0].hand.melds_laid.total == 71
    else:
        assert violation(state, lay_melds=melds) == HandCode.TOO_MANY_JOKERS


def test_an_invalid_meld_is_refused_with_its_meld_code() -> None:
    # docs/rules/hand.md "Melds": no K-A-2 wrap.
    state = playing("K♥ A♥ 2♥ Q♦ J♦ 10♦ 4♥", opened=True)
    assert violation(state, lay_melds=lay(spec("K♥ A♥ 2♥"))) == HandCode.RUN_WRAPS


@pytest.mark.parametrize(("must_beat", "code"), [(True, HandCode.OPENING_NOT_ABOVE_PREVIOUS),
                                                 (False, None)])
def test_must_beat_previous(must_beat: bool, code: str | None) -> None:
    # Option must_beat_previous (the "Saudi" preset): exceed the highest opening so far.
    state = playing("K♠ K♥ K♣ 10♦ J♦ Q♦ 9♦ 2♣",
                    rules=hand_pb2.HandRules(must_beat_previous=must_beat))
    state = replace(state, highest_opening=60, opening_to_beat=60)
    melds = lay(spec("K♠ K♥ K♣"), spec("10♦ J♦ Q♦"))
    if code is None:
        act(state, 0, lay_melds=melds)
    else:
        assert violation(state, lay_melds=melds) == code
        events, _ = act(state, 0, lay_melds=lay(spec("K♠ K♥ K♣"), spec("9♦ 10♦ J♦ Q♦")))
        assert events[0].hand.melds_laid.total == 69


def test_lay_offs_come_only_after_opening() -> None:
    # docs/rules/hand.md "Opening": lay-offs do not count and are not allowed before opening.
    run = on_table(0, 1, "6♠ 7♠ 8♠")
    state = playing("9♠ 2♦ 3♣", melds=(run,))
    move = hand_pb2.LayOff(meld_id=0, card=cards("9♠")[0])
    assert violation(state, lay_off=move) == HandCode.NOT_OPENED
    assert all(c.hand.WhichOneof("kind") != "lay_off" for c in hand.legal(state, 0))


def test_an_opened_player_lays_off_on_any_meld_on_the_table() -> None:
    # docs/rules/hand.md "A turn" 2: onto any meld, one's own or others'.
    run = on_table(0, 1, "6♠ 7♠ 8♠")
    state = playing("9♠ JK1 3♣", opened=True, melds=(run,))
    listed = [
        c.hand.lay_off for c in hand.legal(state, 0) if c.hand.WhichOneof("kind") == "lay_off"
    ]
    assert [(m.card, m.joker_face if m.HasField("joker_face") else None) for m in listed] == [
        (cards("9♠")[0], None), (104, parse_card("5♠")), (104, parse_card("9♠")),
    ]
    events, after = act(state, 0, lay_off=hand_pb2.LayOff(meld_id=0, card=cards("9♠")[0]))
    assert list(events[0].hand.card_laid_off.meld.cards) == cards("6♠ 7♠ 8♠ 9♠")
    assert after.melds[0].owner == 1 and after.used_older_melds
    assert violation(after, lay_off=hand_pb2.LayOff(meld_id=3, card=104, joker_face=5)) == (
        HandCode.NO_SUCH_MELD
    )
    assert violation(after, lay_off=hand_pb2.LayOff(meld_id=0, card=cards("3♣")[0])) == (
        HandCode.CANNOT_LAY_OFF
    )


def test_the_last_card_is_never_melded_or_laid_off() -> None:
    # docs/rules/hand.md "A turn" 3: a player always ends the turn by discarding.
    run = on_table(0, 1, "6♠ 7♠ 8♠")
    state = playing("9♠", opened=True, melds=(run,))
    move = hand_pb2.LayOff(meld_id=0, card=cards("9♠")[0])
    assert violation(state, lay_off=move) == HandCode.CANNOT_MELD_LAST_CARD
    whole = playing("K♠ K♥ K♣", opened=True)
    assert violation(whole, lay_melds=lay(spec("K♠ K♥ K♣"))) == HandCode.CANNOT_MELD_LAST_CARD


def test_a_run_joker_is_retrieved_only_with_the_exact_card() -> None:
    # docs/rules/hand.md "Joker retrieval": in a run the exact card is needed.
    run = on_table(0, 1, "5♠ JK1 7♠", JK1="6♠")
    state = playing("6♠' 6♥ 2♦", opened=True, melds=(run,))
    assert violation(state, retrieve_joker=hand_pb2.RetrieveJoker(
        meld_id=0, cards=cards("6♥"))) == HandCode.CANNOT_RETRIEVE_JOKER
    listed = [c.hand for c in hand.legal(state, 0) if c.hand.WhichOneof("kind") == "retrieve_joker"]
    assert [list(c.retrieve_joker.cards) for c in listed] == [cards("6♠'")]
    events, after = act(state, 0, retrieve_joker=listed[0].retrieve_joker)
    assert events[0].hand.joker_retrieved.joker == 104
    assert after.hands[0] >> 104 & 1 and list(after.melds[0].meld.cards) == cards("5♠ 6♠' 7♠")


def test_a_set_of_two_naturals_gives_its_joker_only_for_both_missing_suits() -> None:
    # docs/rules/hand.md "Joker retrieval": both missing suits at once.
    group = on_table(0, 1, "K♠ K♥ JK2", JK2="K♣")
    state = playing("K♣ K♦ 2♦", opened=True, melds=(group,))
    one = hand_pb2.RetrieveJoker(meld_id=0, cards=cards("K♣"))
    assert violation(state, retrieve_joker=one) == HandCode.CANNOT_RETRIEVE_JOKER
    events, after = act(state, 0, retrieve_joker=hand_pb2.RetrieveJoker(
        meld_id=0, cards=cards("K♣ K♦")))
    assert events[0].hand.joker_retrieved.joker == 105 and len(after.melds[0].meld.cards) == 4


def test_a_set_of_three_naturals_gives_its_joker_for_the_missing_suit() -> None:
    # docs/rules/hand.md "Joker retrieval": in a set of three naturals and a joker, the one
    # missing suit.
    group = on_table(0, 1, "K♠ K♥ K♣ JK1", JK1="K♦")
    state = playing("K♦' 2♦", opened=True, melds=(group,))
    _, after = act(state, 0, retrieve_joker=hand_pb2.RetrieveJoker(meld_id=0, cards=cards("K♦'")))
    assert after.hands[0] == _mask("2♦ JK1")


def test_joker_retrieval_needs_an_opened_player() -> None:
    run = on_table(0, 1, "5♠ JK1 7♠", JK1="6♠")
    state = playing("6♠ 2♦", melds=(run,))
    move = hand_pb2.RetrieveJoker(meld_id=0, cards=cards("6♠"))
    assert violation(state, retrieve_joker=move) == HandCode.NOT_OPENED


def test_legal_lists_the_best_opening_and_candidate_melds_without_combinations() -> None:
    # docs/rules/hand.md "What the bot and the client need": a compact description of openings.
    state = playing("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♠ K♥ K♣ 2♦")
    lays = [c.hand.lay_melds for c in hand.legal(state, 0)
            if c.hand.WhichOneof("kind") == "lay_melds"]
    assert len(lays) == 1 and sorted(len(m.cards) for m in lays[0].melds) == [3, 3, 3]
    opened = playing("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♠ K♥ K♣ 2♦", opened=True)
    singles = [c.hand.lay_melds for c in hand.legal(opened, 0)
               if c.hand.WhichOneof("kind") == "lay_melds"]
    assert all(len(m.melds) == 1 for m in singles) and len(singles) >= 4
    assert len(hand.view(opened, 0).meld_options) == len(singles)


def test_legal_commands_come_in_the_documented_order() -> None:
    # engine.hand.legal: lay_melds, then lay_off (by meld, card), retrieve_joker, discard.
    run = on_table(0, 1, "5♠ JK1 7♠", JK1="6♠")
    group = on_table(1, 1, "Q♠ Q♥ Q♣")
    state = playing("6♠ 8♠ Q♦ K♦ K♣ K♥ 2♦", opened=True, melds=(run, group))
    listed = [c.hand for c in hand.legal(state, 0)]
    order = ["lay_melds", "lay_off", "retrieve_joker", "discard"]
    ranks = [order.index(str(c.WhichOneof("kind"))) for c in listed]
    assert ranks == sorted(ranks) and set(ranks) == {0, 1, 2, 3}
    offs = [(c.lay_off.meld_id, c.lay_off.card) for c in listed if c.HasField("lay_off")]
    assert offs == sorted(offs) == [(0, cards("8♠")[0]), (1, cards("Q♦")[0])]
    assert [c.discard.card for c in listed if c.HasField("discard")] == sorted(
        cards("6♠ 8♠ Q♦ K♦ K♣ K♥ 2♦")
    )
