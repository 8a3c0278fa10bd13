"""Named cases of the exact solver (docs/rules/hand.md "What the bot and the client need")."""

from __future__ import annotations

from engine.core.cards import parse_card
from engine.hand.cards import hand_card_name, parse_hand_card, parse_hand_cards
from engine.hand.melds import Meld, lay_off, meld_text, meld_value, validate_meld
from engine.hand.solver import GoOutPlan, best_opening, can_go_out, min_penalty


def meld(text: str, **joker_faces: str) -> Meld:
    faces = {104 if name == "JK1" else 105: parse_card(face) for name, face in joker_faces.items()}
    return validate_meld(parse_hand_cards(text), faces)


def replays(plan: GoOutPlan, hand: list[int], table: tuple[Meld, ...] = ()) -> bool:
    """The plan uses each card of the hand once, leaves one discard, and lays off validly."""
    used = [c for m in plan.melds for c in m.cards] + [step.card for step in plan.lay_offs]
    current = list(table)
    for step in plan.lay_offs:
        current[step.meld_index] = lay_off(current[step.meld_index], step.card, step.joker_face)
    return sorted([*used, plan.discard]) == sorted(hand)


GREEDY_TRAP = "6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦"


def test_greedy_trap_two_runs_beat_the_set_of_eights() -> None:
    # docs/rules/hand.md last section: taking 8♠8♣8♦ as a set strands the rest
    hand = parse_hand_cards(GREEDY_TRAP)
    best = best_opening(hand)
    assert best.total == 42
    assert sorted(meld_text(m) for m in best.melds) == ["6♠ 7♠ 8♠", "6♣ 7♣ 8♣"]
    penalty = min_penalty(hand, keep=1)
    assert penalty.points == 8  # only 8♦ stays
    plan = can_go_out(hand, has_opened=True)
    assert plan is not None and hand_card_name(plan.discard) == "8♦"


def test_greedy_trap_goes_out_as_a_hand_when_the_runs_cover_all_but_one() -> None:
    # docs/rules/hand.md "End of a round": the hand finish, open_min waived (hand_waives_open_min)
    hand = parse_hand_cards(GREEDY_TRAP)
    plan = can_go_out(hand, has_opened=False)
    assert plan is not None and plan.is_hand and not plan.lay_offs and plan.total == 42
    assert replays(plan, hand)


def test_hand_finish_needs_open_min_when_not_waived() -> None:
    # docs/rules/hand.md option hand_waives_open_min = false: 42 < 51, and no lay-off possible
    hand = parse_hand_cards(GREEDY_TRAP)
    assert can_go_out(hand, has_opened=False, hand_waives_open_min=False) is None
    assert can_go_out(hand, has_opened=False, hand_finish_allowed=False) is None


def test_best_opening_leaves_a_card_to_discard() -> None:
    # docs/rules/hand.md "A turn": a player can never meld the last card
    hand = parse_hand_cards("10♠ J♠ Q♠ K♠ A♠ 10♥ 10♣")
    # J♠-A♠ with 10♠ 10♥ 10♣ (41 + 30) would meld all seven; keeping one, the best is
    # Q♠-A♠ with the tens (31 + 30), the J♠ left to discard
    best = best_opening(hand)
    assert best.total == 61
    assert sorted(meld_text(m) for m in best.melds) == ["10♠ 10♥ 10♣", "Q♠ K♠ A♠"]
    assert best_opening(hand, keep=0).total == 71


def test_best_opening_ace_low_value_option() -> None:
    # docs/rules/hand.md "Cards": the low ace counts ace_low_value (default 1)
    hand = parse_hand_cards("A♦ 2♦ 3♦ 9♠")
    assert best_opening(hand).total == 6
    assert best_opening(hand, ace_low_value=11).total == 16


def test_best_opening_places_the_joker_where_it_counts_most() -> None:
    # docs/rules/hand.md "Cards": a joker counts as the card it stands for
    hand = parse_hand_cards("9♥ 10♥ JK1 2♣")
    best = best_opening(hand)
    assert best.total == 9 + 10 + 10  # JK1 = J♥, not 8♥
    assert meld_text(best.melds[0]) == "9♥ 10♥ JK1=J♥"


def test_best_opening_must_use_the_taken_discard() -> None:
    # docs/rules/hand.md "A turn" 1: before opening, the taken discard must be in the opening
    hand = parse_hand_cards("K♠ K♥ K♣ 4♦ 5♦ 6♦ 2♣")
    assert best_opening(hand).total == 45
    with_four = best_opening(hand, must_use=parse_hand_card("4♦"))
    assert with_four.total == 45 and any(parse_hand_card("4♦") in m.cards for m in with_four.melds)
    assert best_opening(hand, must_use=parse_hand_card("2♣")).total == 0


def test_must_use_names_the_physical_copy() -> None:
    # two copies of 5♦: the one taken from the discard pile is the one melded
    hand = parse_hand_cards("5♦ 5♦' 6♦ 7♦ 9♣")
    taken = parse_hand_card("5♦'")
    best = best_opening(hand, must_use=taken)
    assert taken in best.melds[0].cards


def test_go_out_after_opening_with_lay_offs() -> None:
    # docs/rules/hand.md "A turn" 2: once opened, lay off single cards onto any table meld
    table = (meld("5♠ 6♠ 7♠"), meld("Q♥ Q♣ Q♦"))
    hand = parse_hand_cards("8♠ 9♠ Q♠ 3♦")
    plan = can_go_out(hand, table, has_opened=True)
    assert plan is not None and not plan.melds and hand_card_name(plan.discard) == "3♦"
    assert replays(plan, hand, table)
    assert can_go_out(hand, table, has_opened=False) is None  # lay-offs need an opening


def test_go_out_chains_lay_offs_through_a_joker() -> None:
    # a joker laid off between the run's end and a card of the hand
    table = (meld("5♠ 6♠ 7♠"),)
    hand = parse_hand_cards("9♠ JK2 K♦")
    plan = can_go_out(hand, table, has_opened=True)
    assert plan is not None and replays(plan, hand, table)
    assert [(hand_card_name(s.card), s.joker_face) for s in plan.lay_offs] == [
        ("JK2", parse_card("8♠")), ("9♠", None)
    ]


def test_opening_this_turn_allows_lay_offs_but_they_do_not_count() -> None:
    # docs/rules/hand.md "Opening": counted over new melds only; lay-offs allowed once opened
    table = (meld("2♣ 3♣ 4♣"),)
    hand = parse_hand_cards("K♠ K♥ K♣ Q♦ K♦ A♦ 5♣ 9♥")
    plan = can_go_out(hand, table, has_opened=False)
    assert plan is not None and not plan.is_hand and plan.total == 61
    assert [hand_card_name(s.card) for s in plan.lay_offs] == ["5♣"]
    assert can_go_out(hand, table, has_opened=False, open_min=62) is None


def test_cannot_go_out_with_two_cards_left() -> None:
    hand = parse_hand_cards("5♠ 6♠ 7♠ 2♥ 9♣")
    assert can_go_out(hand, has_opened=True) is None


def test_min_penalty_counts_aces_eleven_and_jokers_fifteen() -> None:
    # docs/rules/hand.md "Cards": penalty A = 11 always, joker = joker_penalty
    assert min_penalty(parse_hand_cards("A♠ 2♥ JK1 9♣")).points == 11 + 2 + 15 + 9
    assert min_penalty(parse_hand_cards("A♠ 2♠ JK1 9♣")).points == 9
    assert min_penalty(parse_hand_cards("A♠ 5♥ JK1")).points == 11 + 5 + 15
    assert min_penalty(parse_hand_cards("A♠ 5♥ JK1"), joker_penalty=50).points == 66


def test_min_penalty_substitutes_the_joker_for_a_natural_when_it_saves_more() -> None:
    # a full natural set leaves the joker (15); the joker in the set leaves a 7 instead
    hand = parse_hand_cards("7♠ 7♥ 7♣ 7♦ JK1")
    assert min_penalty(hand).points == 7


def test_min_penalty_uses_lay_offs_when_allowed() -> None:
    table = (meld("Q♥ K♥ A♥"),)
    hand = parse_hand_cards("J♥ 10♥ 4♣")
    assert min_penalty(hand, table_melds=table).points == 4
    assert min_penalty(hand, table_melds=table, can_lay_off=False).points == 24


def test_solver_accepts_a_mask() -> None:
    hand = parse_hand_cards(GREEDY_TRAP)
    assert best_opening(sum(1 << c for c in hand)).total == 42


def test_opening_total_is_the_sum_of_meld_values() -> None:
    hand = parse_hand_cards("A♣ 2♣ 3♣ Q♠ K♠ A♠ A♥ A♦ 9♦")
    best = best_opening(hand)
    assert best.total == sum(meld_value(m) for m in best.melds)
    # the aces are worth more in a set (33) than low in A-2-3 (6): Q-K-A♠ + A♣ A♥ A♦
    assert best.total == 31 + 33


def test_a_lone_card_is_discarded_to_go_out_only_after_opening() -> None:
    # docs/rules/hand.md "A turn" 3: going out means discarding the last card; an unopened
    # player must lay an opening (or a hand) to go out
    plan = can_go_out([parse_hand_card("5♣")], has_opened=True)
    assert plan is not None and not plan.melds and plan.discard == parse_hand_card("5♣")
    assert can_go_out([parse_hand_card("5♣")], has_opened=False) is None


def test_must_use_outside_the_hand_makes_nothing() -> None:
    hand = parse_hand_cards("K♠ K♥ K♣ 2♣")
    assert best_opening(hand, must_use=parse_hand_card("9♦")).total == 0
    assert can_go_out(hand, has_opened=False, must_use=parse_hand_card("9♦")) is None


def test_go_out_must_use_the_taken_discard_in_a_new_meld() -> None:
    # docs/rules/hand.md "A turn" 1: the taken discard is used in a meld laid this turn, so it
    # cannot be the card discarded
    table = (meld("5♠ 6♠ 7♠"),)
    hand = parse_hand_cards("K♠ K♥ K♣ 8♠ 3♦")
    taken = parse_hand_card("3♦")
    assert can_go_out(hand, table, has_opened=True) is not None
    assert can_go_out(hand, table, has_opened=True, must_use=taken) is None
    with_eight = can_go_out(hand, table, has_opened=True, must_use=parse_hand_card("8♠"))
    assert with_eight is None  # 8♠ only fits as a lay-off, not in a new meld
    plan = can_go_out(hand, table, has_opened=True, must_use=parse_hand_card("K♣"))
    assert plan is not None and replays(plan, hand, table)
