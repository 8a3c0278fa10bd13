"""The ``basic`` bots (engine/hokm/basic_bot.py, engine/hand/basic_bot.py): legal, complete
matches, and the strategy hints of docs/rules/hokm.md "Strategy hints" in set positions."""

from __future__ import annotations

from collections import Counter

from dast.v1 import common_pb2, hand_pb2, hokm_pb2
from engine import hand, hokm
from engine.core.rng import DeterministicRandom
from engine.hand import basic_bot as hand_basic
from engine.hand.bots import Policy
from engine.hand.sim import play_match as play_hand
from engine.hokm import basic_bot as hokm_basic
from engine.hokm.sim import play_match as play_hokm

RNG = DeterministicRandom(b"k" * 32, "test")


def _view(**fields: object) -> hokm_pb2.HokmView:
    return hokm_pb2.HokmView(phase=hokm_pb2.HOKM_PHASE_PLAY, **fields)  # type: ignore[arg-type]


def _legal(cards: list[int]) -> list[hokm_pb2.HokmCommand]:
    return [hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=c)) for c in cards]


def test_basic_declares_the_suit_held_most_not_the_highest() -> None:
    # docs/rules/hokm.md "Strategy hints": count matters more than height.
    hand_cards = [0, 1, 2, 25, 51]  # 2♠ 3♠ 4♠ A♥ A♦
    view = hokm_pb2.HokmView(
        phase=hokm_pb2.HOKM_PHASE_DECLARE_TRUMP, hand=hand_cards,
        legal=[hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=s))
               for s in map(common_pb2.Suit.ValueType, (1, 2, 3, 4))],
    )
    command = hokm_basic.basic_policy(view, RNG)
    assert command.declare_trump.suit == common_pb2.SUIT_SPADES


def test_basic_cashes_a_side_ace_when_leading() -> None:
    # docs/rules/hokm.md "Strategy hints": cash non-trump aces early.
    hand_cards = [13, 14, 25]  # 2♥ 3♥ A♥; trump ♠
    view = _view(seat=0, hand=hand_cards, trump=1, hand_counts=[3, 3, 3, 3],
                 legal=_legal(hand_cards))
    assert hokm_basic.basic_policy(view, RNG).play_card.card == 25


def test_basic_plays_low_when_partner_is_winning() -> None:
    # docs/rules/hokm.md "Strategy hints": partner (seat 0 for seat 2) already wins the trick.
    trick = hokm_pb2.Trick(leader=0, plays=[hokm_pb2.SeatCard(seat=0, card=25),
                                          hokm_pb2.SeatCard(seat=1, card=14)])
    hand_cards = [13, 24]  # 2♥ K♥
    view = _view(seat=2, hand=hand_cards, trump=1, hand_counts=[2, 2, 2, 3],
                 current_trick=trick, legal=_legal(hand_cards))
    assert hokm_basic.basic_policy(view, RNG).play_card.card == 13


def test_basic_counts_trumps_out() -> None:
    # docs/rules/hokm.md "Strategy hints": count the trumps played.
    played = hokm_pb2.Trick(plays=[hokm_pb2.SeatCard(seat=s, card=c)
                                   for s, c in enumerate([0, 1, 2, 3])])
    view = _view(hand=[4, 5], tricks=[played], trump=1)
    assert hokm_basic.trumps_out(view, 0) == 13 - 6


def test_basic_hokm_bots_finish_matches_of_every_variant() -> None:
    # Every command the basic bot chooses is accepted by decide (play_match raises if not).
    for variant, seats in ((1, 4), (2, 3), (3, 2)):
        rules = hokm_pb2.HokmRules(variant=variant, target_score=3)  # type: ignore[arg-type]
        events = play_hokm(rules, bytes(32), [hokm_basic.basic_policy] * seats, 7)
        assert hokm.revealed_seed(events[-1]) == bytes(32)


def test_basic_beats_random_at_hokm_more_often_than_not() -> None:
    wins: Counter[str] = Counter()
    for match in range(12):
        events = play_hokm(
            hokm_pb2.HokmRules(target_score=3), match.to_bytes(32, "big"),
            [hokm_basic.basic_policy, "random"] * 2, match,
        )
        winners = events[-1].hokm.match_ended.winners
        wins["basic" if 0 in winners else "random"] += 1
    assert wins["basic"] > wins["random"]


def test_basic_hand_bot_does_not_feed_an_opened_next_player() -> None:
    # The next seat (1) has opened and a run 3♠4♠5♠ is on the table: 6♠ would feed it.
    run = hand_pb2.TableMeld(id=0, owner=1, kind=hand_pb2.HAND_MELD_KIND_RUN,
                             cards=[1, 2, 3], faces=[1, 2, 3])
    hand_cards = [4, 30]  # 6♠ and 6♣ (clubs are suit 2: 2*13+4)
    view = hand_pb2.HandView(
        seat=0, hand=hand_cards, hand_counts=[2, 5, 5, 5], opened=[False, True, False, False],
        melds=[run], phase=hand_pb2.HAND_PHASE_PLAY,
        legal=[hand_pb2.HandCommand(discard=hand_pb2.Discard(card=c)) for c in hand_cards],
    )
    assert hand_basic.feeds_next(4, view)
    assert hand_basic.basic_policy(view, RNG).discard.card == 30


def test_basic_hand_bots_finish_a_partnership_match() -> None:
    rules = hand_pb2.HandRules(players=4, partnerships=True, rounds=1)
    events = play_hand(rules, bytes(32), [hand_basic.basic_policy] * 4, 3)
    assert hand.revealed_seed(events[-1]) == bytes(32)


def test_basic_keeps_fewer_penalty_points_than_greedy_at_hand() -> None:
    # docs/rules/hand.md: the lowest total wins; seats alternate so both sit first as often.
    basic_wins = greedy_wins = 0
    for match in range(40):
        basic_first = match % 2 == 0
        policies: list[str | Policy] = ([hand_basic.basic_policy, "greedy"] if basic_first
                                        else ["greedy", hand_basic.basic_policy])
        events = play_hand(hand_pb2.HandRules(players=2, rounds=1),
                           match.to_bytes(32, "big"), policies, match)
        totals = list(events[-1].hand.match_ended.totals)
        basic, greedy = (totals[0], totals[1]) if basic_first else (totals[1], totals[0])
        basic_wins += basic < greedy
        greedy_wins += greedy < basic
    assert basic_wins > greedy_wins
