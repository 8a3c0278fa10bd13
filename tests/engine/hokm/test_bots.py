"""The bots (engine/hokm/bots.py): legal moves only, over the view only, and the greedy
bot follows docs/rules/hokm.md "Strategy hints"."""

from __future__ import annotations

import hashlib

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import card_name
from engine.core.rng import DeterministicRandom
from engine.hokm.bots import BOTS, greedy_policy, random_policy
from engine.hokm.sim import play_match
from engine.hokm.state import HokmState, Phase

from .notation import VARIANT, declare, play, position, run, started

RNG = DeterministicRandom(b"bots", "test")


def _played(state: HokmState, seat: int) -> str:
    command = greedy_policy(hokm.view(state, seat), RNG)
    return card_name(command.play_card.card)


def test_greedy_hakem_declares_the_suit_it_holds_most_of() -> None:
    # "As hakem, choose the suit you hold most of; count matters more than height."
    state = position(["2♣ 3♣ 4♣ A♠ K♠", "", "", ""], trump="", phase=Phase.DECLARE_TRUMP)
    command = greedy_policy(hokm.view(state, 0), RNG)
    assert command.declare_trump.suit == common_pb2.SUIT_CLUBS


def test_greedy_cashes_non_trump_aces_when_leading() -> None:
    # "Cash non-trump aces early, before the suit can be cut."
    state = position(["A♥ 2♣ K♠", "2♥", "3♥", "4♥"], trump="♠")
    assert _played(state, 0) == "A♥"


def test_greedy_gives_the_lowest_card_when_partner_wins() -> None:
    # "When your partner is already winning the trick, play your lowest card."
    state = position(["A♥", "5♥", "K♥ 3♥", "4♥"], trick="A♥ 5♥", leader=0)
    assert _played(state, 2) == "3♥"


def test_greedy_wins_as_cheaply_as_it_can() -> None:
    state = position(["10♥", "Q♥ K♥ A♥ 2♥", "3♥", "4♥"], trick="10♥", leader=0)
    assert _played(state, 1) == "Q♥"
    cut = position(["10♥", "5♠ 9♠ 2♣", "3♥", "4♥"], trick="10♥", leader=0, trump="♠")
    assert _played(cut, 1) == "5♠"


def test_greedy_throws_its_lowest_card_when_it_cannot_win() -> None:
    state = position(["A♥", "K♣ 2♦ 9♣", "3♥", "4♥"], trick="A♥", leader=0, trump="♠")
    assert _played(state, 1) == "2♦"


def test_greedy_takes_the_better_pile_card() -> None:
    # Two players: a face-up trump is worth more than any other card.
    state = position(["A♥ 3♣", "2♥ 4♣"], pile_a="Q♦ 4♦", pile_b="3♠ 5♦", trump="♠")
    _, after = run(state, play(0, "A♥"), play(1, "2♥"))
    command = greedy_policy(hokm.view(after, 0), RNG)
    assert command.take_pile_card.pile == 1


def test_bots_only_make_legal_moves_in_every_variant() -> None:
    # decide refuses any illegal command, so a finished match means every move was legal.
    for seats in (4, 3, 2):
        for name in BOTS:
            rules = hokm_pb2.HokmRules(variant=VARIANT[seats], target_score=2)
            seed = hashlib.sha256(f"{name}{seats}".encode()).digest()
            events = play_match(rules, seed, [name] * seats, 1)
            assert hokm.is_over(hokm.replay(events))


def test_random_bot_sets_aside_four_held_cards() -> None:
    _, state = started(3)
    _, after = run(state, declare(state.hakem, "♠"))
    command = random_policy(hokm.view(after, after.hakem), RNG)
    cards = list(command.set_aside_cards.cards)
    assert len(set(cards)) == 4 and all(after.hands[after.hakem] >> c & 1 for c in cards)
    assert hokm.decide(after, log_pb2.Command(seat=after.hakem, hokm=command))


def test_random_bot_picks_among_the_legal_commands() -> None:
    state = position(["2♥ 3♥ 4♣", "5♥", "6♥", "7♥"], trick="", leader=0)
    rng = DeterministicRandom(b"pick", "test")
    picks = {random_policy(hokm.view(state, 0), rng).play_card.card for _ in range(40)}
    assert picks == {c.hokm.play_card.card for c in hokm.legal(state, 0)}
