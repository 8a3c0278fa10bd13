"""The bots (docs/architecture.md "Bots"): pure policies over the seat's view, always legal."""

from __future__ import annotations

import hashlib

from dast.v1 import hand_pb2
from engine import hand
from engine.core.rng import DeterministicRandom
from engine.hand.bots import BOTS, greedy_policy
from engine.hand.sim import play_match
from engine.hand.state import Phase
from tests.engine.hand.table import cards, players, table, turn_of

RNG = DeterministicRandom(b"bots", "test")


def test_greedy_opens_with_the_solvers_best_opening() -> None:
    # docs/rules/hand.md "What the bot and the client need": greedy meld choice is wrong
    # (6♠7♠8♠ + 6♣7♣8♣ + 8♦: taking 8♠8♣8♦ as a set strands the rest).
    state = turn_of(table(["6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ K♠ K♥ K♣ 2♦", "2♥"]), 0, phase=Phase.PLAY)
    chosen = greedy_policy(hand.view(state, 0), RNG)
    laid = sorted(sorted(m.cards) for m in chosen.lay_melds.melds)
    assert laid == sorted([sorted(cards("6♠ 7♠ 8♠")), sorted(cards("6♣ 7♣ 8♣")),
                           sorted(cards("K♠ K♥ K♣"))])


def test_greedy_discards_the_costliest_card_that_fits_no_meld() -> None:
    state = turn_of(table(["Q♠ K♠ A♠ 9♦ 4♣ JK1", "2♥"]), 0, phase=Phase.PLAY, opened=[0])
    state = turn_of(state, 0, phase=Phase.PLAY, opened=[0])
    view = hand.view(state, 0)
    view.ClearField("legal")
    view.legal.extend(c.hand for c in hand.legal(state, 0)
                      if c.hand.WhichOneof("kind") == "discard")
    assert greedy_policy(view, RNG).discard.card == cards("9♦")[0]


def test_bots_play_whole_matches_and_greedy_beats_random() -> None:
    greedy_total = random_total = 0
    for index in range(4):
        seed = hashlib.sha256(f"bots/{index}".encode()).digest()
        order = ("greedy", "random") if index % 2 == 0 else ("random", "greedy")
        final = hand.replay(play_match(hand_pb2.HandRules(rounds=2), seed, order, index))
        assert hand.is_over(final)
        greedy = order.index("greedy")
        greedy_total += final.totals[greedy]
        random_total += final.totals[1 - greedy]
    assert greedy_total < random_total


def test_every_bot_answers_with_a_legal_command() -> None:
    state = hand.replay(hand.start(hand_pb2.HandRules(), bytes(32), players(2)))
    for name, policy in BOTS.items():
        chosen = policy(hand.view(state, 1), RNG)
        assert chosen in [c.hand for c in hand.legal(state, 1)], name
