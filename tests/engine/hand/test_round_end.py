"""Going out, the "hand" finish, scoring, restocks and void rounds, dealers and the match's
end (docs/rules/hand.md "End of a round", "Scoring", "Players, seats and the deal")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dast.v1 import hand_pb2, log_pb2
from engine import hand
from engine.core.errors import RuleViolation
from engine.hand.errors import HandCode
from engine.hand.state import HandState, Phase
from tests.engine.hand.table import SEED, act, cards, kinds, lay, spec, table, turn_of


def discard(text: str) -> dict[str, object]:
    return {"discard": hand_pb2.Discard(card=cards(text)[0])}


def going_out(hands: list[str], *, opened: list[int], rules: hand_pb2.HandRules | None = None,
              **flags: Any) -> HandState:
    """Seat 0 after its draw, holding ``hands[0]``; ``flags`` set the turn's flags."""
    state = turn_of(table(hands, rules=rules), 0, phase=Phase.PLAY, discard="2♣", opened=opened)
    return replace(state, **flags)


def ended(events: list[log_pb2.Event]) -> hand_pb2.HandRoundEnded:
    return next(e.hand.round_ended for e in events if e.hand.WhichOneof("kind") == "round_ended")


def test_going_out_after_having_melded_before_scores_minus_30() -> None:
    # docs/rules/hand.md "Scoring": −30 out; an opened player adds its penalty values (A = 11,
    # J/Q/K 10, a joker 15); an unopened player +100.
    state = going_out(["9♠", "A♥ K♦ JK1 5♣", "2♦ 3♦"], opened=[0, 1])
    events, after = act(state, 0, **discard("9♠"))
    assert kinds(events)[:3] == ["card_discarded", "round_ended", "round_started"]
    result = ended(events)
    assert result.went_out == 0 and result.finish == hand_pb2.HAND_FINISH_OUT
    assert not result.doubled
    assert list(result.points) == [-30, 11 + 10 + 15 + 5, 100]
    assert list(result.totals) == list(result.points) == list(after.totals)
    assert [list(r.cards) for r in result.remaining][1] == sorted(cards("A♥ K♦ JK1 5♣"))


def test_joker_penalty_option() -> None:
    # Option joker_penalty (sources give 15, 20, 25 or 50).
    state = going_out(["9♠", "JK1 5♣"], opened=[0, 1], rules=hand_pb2.HandRules(joker_penalty=50))
    events, _ = act(state, 0, **discard("9♠"))
    assert list(ended(events).points) == [-30, 55]


def test_a_hand_lays_the_whole_hand_at_once_below_open_min_and_doubles_every_figure() -> None:
    # docs/rules/hand.md "Hand": the whole hand at once, nothing melded before; open_min waived
    # (hand_waives_open_min); −60 and every other figure doubled.
    state = going_out(["2♠ 3♠ 4♠ 5♥ 5♣ 5♦ 9♥", "K♦ 5♣'", "2♦ 3♦"], opened=[1])
    listed = [c.hand.lay_melds for c in hand.legal(state, 0)
              if c.hand.WhichOneof("kind") == "lay_melds"]
    assert listed and sum(len(m.cards) for m in listed[-1].melds) == 6
    events, laid = act(state, 0, lay_melds=lay(spec("2♠ 3♠ 4♠"), spec("5♥ 5♣ 5♦")))
    assert events[0].hand.melds_laid.opening and events[0].hand.melds_laid.total == 24
    assert [c.hand.WhichOneof("kind") for c in hand.legal(laid, 0)] == ["discard"]
    with pytest.raises(RuleViolation) as caught:
        act(laid, 0, lay_off=hand_pb2.LayOff(meld_id=0, card=cards("9♥")[0]))
    assert caught.value.code == HandCode.HAND_MUST_DISCARD
    events, _ = act(laid, 0, **discard("9♥"))
    result = ended(events)
    assert result.finish == hand_pb2.HAND_FINISH_HAND and result.doubled
    assert list(result.points) == [-60, 2 * (10 + 5), 200]


def test_without_the_waiver_a_hand_needs_open_min() -> None:
    # Option hand_waives_open_min = false.
    rules = hand_pb2.HandRules(hand_waives_open_min=False)
    state = going_out(["2♠ 3♠ 4♠ 5♥ 5♣ 5♦ 9♥", "K♦"], opened=[], rules=rules)
    with pytest.raises(RuleViolation) as caught:
        act(state, 0, lay_melds=lay(spec("2♠ 3♠ 4♠"), spec("5♥ 5♣ 5♦")))
    assert caught.value.code == HandCode.OPENING_BELOW_MINIMUM


def test_going_out_in_the_opening_turn_after_a_lay_off_on_another_meld_is_not_a_hand() -> None:
    # docs/rules/hand.md "Hand": a hand lays no card off on other players' melds.
    state = going_out(["9♠", "K♦"], opened=[0], opened_this_turn=True, used_older_melds=True)
    events, _ = act(state, 0, **discard("9♠"))
    assert ended(events).finish == hand_pb2.HAND_FINISH_OUT
    clean = going_out(["9♠", "K♦"], opened=[0], opened_this_turn=True)
    events, _ = act(clean, 0, **discard("9♠"))
    assert ended(events).finish == hand_pb2.HAND_FINISH_HAND


@pytest.mark.parametrize(("partner_scores", "points"), [(False, [-30, 100, 0, 15]),
                                                        (True, [-30, 100, 10, 15])])
def test_partnerships_score_the_team_sum_and_the_winners_partner_scores_zero(
    partner_scores: bool, points: list[int]
) -> None:
    # docs/rules/hand.md "Partnerships": a team's round score is the sum of its two players';
    # the partner of the player who went out scores 0 (option partner_of_winner_scores).
    rules = hand_pb2.HandRules(partnerships=True, partner_of_winner_scores=partner_scores)
    state = going_out(["9♠", "4♦ 6♦", "K♦", "JK1"], opened=[0, 2, 3], rules=rules)
    events, _after = act(state, 0, **discard("9♠"))
    result = ended(events)
    assert list(result.points) == points
    teams = [points[0] + points[2], points[1] + points[3]]
    assert list(result.team_points) == teams
    assert list(result.totals) == [teams[0], teams[1], teams[0], teams[1]]


def test_partnerships_need_four_players() -> None:
    with pytest.raises(RuleViolation):
        table(["2♠", "3♠"], rules=hand_pb2.HandRules(partnerships=True))


def test_the_loser_deals_the_next_round_by_default_or_the_next_seat() -> None:
    # docs/rules/hand.md "the deal": later the dealer is the player with the most penalty in the
    # round just played (dealer_rotation loser_deals), or the next seat (next).
    hands = ["9♠", "K♦", "2♦ 3♦"]
    events, _ = act(going_out(hands, opened=[0, 1]), 0, **discard("9♠"))
    started = next(e.hand.round_started for e in events if e.hand.HasField("round_started"))
    assert started.dealer == 2 and started.round == 2
    rules = hand_pb2.HandRules(dealer_rotation=hand_pb2.HAND_DEALER_ROTATION_NEXT)
    events, after = act(going_out(hands, opened=[0, 1], rules=rules), 0, **discard("9♠"))
    started = next(e.hand.round_started for e in events if e.hand.HasField("round_started"))
    assert started.dealer == 1 and hand.to_act(after) == 2


def test_the_match_ends_after_its_rounds_and_the_lowest_total_wins_ties_shared() -> None:
    # docs/rules/hand.md "Scoring": 5 rounds (option rounds); lowest total wins; a tie is shared.
    rules = hand_pb2.HandRules(rounds=1)
    state = replace(going_out(["9♠", "K♦", "2♦"], opened=[0, 1], rules=rules),
                    totals=(40, 0, -70))
    events, after = act(state, 0, **discard("9♠"))
    assert kinds(events) == ["card_discarded", "round_ended", "match_ended"]
    finished = events[-1].hand.match_ended
    assert list(finished.totals) == [10, 10, 30] and list(finished.winners) == [0, 1]
    assert finished.server_seed == SEED
    assert hand.is_over(after) and hand.revealed_seed(events[-1]) == SEED
    assert events[-1].deadline_ms == 0


def _empty_stock(state: HandState, *, restocks: int) -> HandState:
    return replace(state, stock=tuple(cards("Q♦")), restocks=restocks)


def test_an_empty_stock_is_rebuilt_from_the_discard_pile_but_its_top() -> None:
    # docs/rules/hand.md "End of a round": shuffled from the game's random stream.
    base = turn_of(table(["9♠ 4♥", "K♦ 3♣"]), 0, discard="2♣ 3♠ 4♦")
    state = _empty_stock(base, restocks=0)
    _, drawn = act(state, 0, draw_from_stock=hand_pb2.DrawFromStock())
    events, after = act(drawn, 0, **discard("4♥"))
    assert kinds(events) == ["card_discarded", "stock_restocked"]
    rebuilt = events[1].hand.stock_restocked
    assert sorted(rebuilt.stock) == sorted(cards("2♣ 3♠ 4♦")) and rebuilt.restocks == 1
    assert after.discard == tuple(cards("4♥")) and after.restocks == 1
    assert list(hand.redact(events[1], 0).hand.stock_restocked.stock) == []
    assert hand.redact(events[1], None).hand.stock_restocked.stock_count == 3


@pytest.mark.parametrize(("max_restocks", "restocks"), [(None, 2), (0, 0)])
def test_the_round_is_void_when_the_stock_runs_out_after_max_restocks(
    max_restocks: int | None, restocks: int
) -> None:
    # docs/rules/hand.md "End of a round": after max_restocks (default 2) the round is void:
    # nobody scores and the same dealer deals again; void rounds do not count.
    rules = hand_pb2.HandRules()
    if max_restocks is not None:
        rules.max_restocks = max_restocks
    base = turn_of(table(["9♠ 4♥", "K♦ 3♣"], rules=rules), 0, discard="2♣ 3♠ 4♦")
    state = replace(_empty_stock(base, restocks=restocks), totals=(7, 9))
    _, drawn = act(state, 0, draw_from_stock=hand_pb2.DrawFromStock())
    events, after = act(drawn, 0, **discard("4♥"))
    assert kinds(events) == ["card_discarded", "round_voided", "round_started", "cards_dealt"]
    again = events[2].hand.round_started
    assert (again.round, again.dealer, again.deal) == (1, 0, 2)
    assert after.totals == (7, 9) and after.rounds_played == 0 and hand.to_act(after) == 1
