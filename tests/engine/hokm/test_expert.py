"""The ``expert`` Hokm bot and what it searches with: the greedy model over masks, the
sampled deals, and the policy itself (legal in every phase, the seat's view only, within
its budget)."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator

import pytest

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.budget import Budget
from engine.core.cards import RANKS_PER_SUIT, SUIT_MASKS, iter_cards, mask_of
from engine.core.rng import DeterministicRandom
from engine.core.testing import bot_players, play_match
from engine.hokm.bots import greedy_policy
from engine.hokm.expert import distinct_plays, make_expert, set_aside_candidates
from engine.hokm.search.core import FastRound
from engine.hokm.search.playout import greedy_card, greedy_pile, greedy_set_aside
from engine.hokm.search.worlds import knowledge_of, likelihood, plausible_world, sample_world
from engine.hokm.state import HokmState, Phase

from .notation import VARIANT

_VARIANTS = {
    "4p": hokm_pb2.HokmRules(variant=VARIANT[4], target_score=2),
    "3p": hokm_pb2.HokmRules(variant=VARIANT[3], target_score=2),
    "2p": hokm_pb2.HokmRules(variant=VARIANT[2], target_score=2),
    "2p-declared": hokm_pb2.HokmRules(
        variant=VARIANT[2], target_score=1, trump_2p=hokm_pb2.TRUMP_2P_HAKEM_DECLARES
    ),
}
_SEATS = {"4p": 4, "3p": 3, "2p": 2, "2p-declared": 2}
_FAST = Budget(samples=3)


def _seed(label: str) -> bytes:
    return hashlib.sha256(f"expert-tests/{label}".encode()).digest()


def _states(rules: hokm_pb2.HokmRules, seats: int, label: str) -> Iterator[HokmState]:
    """Every state in which a seat must act, over one match of greedy bots."""
    rng = DeterministicRandom(bytes(16), "greedy")
    state = hokm.replay(hokm.start(rules, _seed(label), bot_players(seats)))
    while (seat := hokm.to_act(state)) is not None:
        yield state
        command = greedy_policy(hokm.view(state, seat), rng)
        for event in hokm.decide(state, log_pb2.Command(seat=seat, hokm=command)):
            state = hokm.evolve(state, event)


@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_greedy_over_masks_chooses_what_the_greedy_bot_chooses(name: str) -> None:
    rng = DeterministicRandom(bytes(16), "unused")
    checked = 0
    for state in _states(_VARIANTS[name], _SEATS[name], f"greedy/{name}"):
        command = greedy_policy(hokm.view(state, state.turn), rng)
        if state.phase == Phase.PLAY:
            seat = state.turn
            card = greedy_card(state.hands[seat], state.trick, state.leader, seat,
                               state.seats, state.trump)
            assert card == command.play_card.card
            checked += 1
        elif state.phase == Phase.TAKE_PILE:
            assert greedy_pile(FastRound.from_state(state)) == command.take_pile_card.pile
        elif state.phase == Phase.SET_ASIDE:
            aside = greedy_set_aside(state.hands[state.turn], state.trump)
            assert list(iter_cards(aside)) == list(command.set_aside_cards.cards)
    assert checked > 20


@pytest.mark.parametrize("name", ["4p", "3p", "2p"])
def test_sampled_deals_leave_the_seats_view_unchanged(name: str) -> None:
    # Re-dealing the hidden cards as sampled must not change what the seat sees (the
    # "resample from infostate" check): hands, set-aside cards and piles move, the view not.
    rng = random.Random(name)
    positions = 0
    for state in _states(_VARIANTS[name], _SEATS[name], f"worlds/{name}"):
        if state.phase not in (Phase.PLAY, Phase.TAKE_PILE):
            continue
        me = state.turn
        seen = hokm.view(state, me)
        knowledge = knowledge_of(seen)
        for attempt in range(4):
            pool = 1 if attempt < 2 else 4
            world = plausible_world(knowledge, rng, pool) if pool > 1 else sample_world(
                knowledge, rng)
            assert world.hands[me] == state.hands[me]
            assert sum(h.bit_count() for h in world.hands) == sum(
                h.bit_count() for h in state.hands)
            resampled = _redealt(state, me, world.hands, world.sink)
            assert hokm.view(resampled, me) == seen
            for seat, voids in enumerate(knowledge.voids):
                for suit in range(4):
                    if voids >> suit & 1:
                        assert not world.hands[seat] & SUIT_MASKS[suit]
            assert likelihood(knowledge, world) > 0
        positions += 1
    assert positions > 20


def _redealt(state: HokmState, me: int, hands: tuple[int, ...], sink: tuple[int, ...]
             ) -> HokmState:
    if state.pile_a:
        hidden = len(state.pile_a) - 1
        return state._replace(
            hands=hands, public=0,
            pile_a=(state.pile_a[0], *sink[:hidden]), pile_b=(state.pile_b[0], *sink[hidden:]),
        )
    if state.seats == 3 and me != state.hakem:
        return state._replace(hands=hands, set_aside=mask_of(sink))
    return state._replace(hands=hands)


@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_expert_returns_a_legal_command_in_every_phase(name: str) -> None:
    seats = _SEATS[name]
    acted: set[int] = set()
    expert = make_expert(_FAST)

    def recording(view: hokm_pb2.HokmView, rng: DeterministicRandom) -> hokm_pb2.HokmCommand:
        acted.add(view.phase)
        return expert(view, rng)

    seating = [recording, greedy_policy] * (seats // 2) + [recording] * (seats % 2)
    for shift in (0, 1):  # the expert in every seat of the other side too
        policies = seating[shift:] + seating[:shift]
        # play_match raises RuleViolation at the first command decide refuses.
        events = play_match(hokm, _VARIANTS[name], _seed(f"legal/{name}/{shift}"),
                            bot_players(seats), policies, rng_seed=3)
        assert hokm.is_over(hokm.replay(events))
    expected = {hokm_pb2.HOKM_PHASE_PLAY}
    if name != "2p":
        expected.add(hokm_pb2.HOKM_PHASE_DECLARE_TRUMP)
    if seats == 3:
        expected.add(hokm_pb2.HOKM_PHASE_SET_ASIDE)
    if seats == 2:
        expected.add(hokm_pb2.HOKM_PHASE_TAKE_PILE)
    assert expected <= acted


@pytest.mark.parametrize("name", ["4p", "3p", "2p"])
def test_expert_decides_the_same_whatever_the_hidden_cards(name: str) -> None:
    # The expert is given the seat's view only: two states that differ in every card the
    # seat cannot see, but show it the same view, get the same command.
    expert = make_expert(Budget(samples=4))
    rng = random.Random(f"hidden/{name}")
    compared = 0
    for index, state in enumerate(_states(_VARIANTS[name], _SEATS[name], f"hidden/{name}")):
        if state.phase not in (Phase.PLAY, Phase.TAKE_PILE) or index % 5:
            continue
        me = state.turn
        seen = hokm.view(state, me)
        world = sample_world(knowledge_of(seen), rng)
        other = _redealt(state, me, world.hands, world.sink)
        if other == state:
            continue  # the sample happened to be the true deal: nothing to compare
        first = expert(seen, DeterministicRandom(bytes(16), f"d/{index}"))
        second = expert(hokm.view(other, me), DeterministicRandom(bytes(16), f"d/{index}"))
        assert first == second
        compared += 1
    assert compared >= 5


def test_a_sample_budget_makes_the_decision_reproducible() -> None:
    state = next(s for s in _states(_VARIANTS["4p"], 4, "repro") if s.phase == Phase.PLAY
                 and len(hokm.legal(s, s.turn)) > 2)
    seen = hokm.view(state, state.turn)
    expert = make_expert(Budget(samples=8))
    commands = {expert(seen, DeterministicRandom(bytes(16), "same")).SerializeToString()
                for _ in range(3)}
    assert len(commands) == 1


def test_a_clock_budget_stops_the_search_and_still_answers_legally() -> None:
    state = next(s for s in _states(_VARIANTS["4p"], 4, "clock") if s.phase == Phase.PLAY
                 and len(hokm.legal(s, s.turn)) > 2)
    seen = hokm.view(state, state.turn)
    legal = {c.SerializeToString() for c in seen.legal}
    # A clock already past the deadline after the first look: one sample, then stop.
    ticks = iter(range(0, 10_000, 10))
    late = make_expert(Budget(samples=10_000, time_ms=5, clock=lambda: float(next(ticks))))
    assert late(seen, DeterministicRandom(bytes(16), "x")).SerializeToString() in legal
    assert next(ticks) <= 30  # the clock was read only a couple of times
    # The wall clock, with a generous margin for a shared machine.
    timed = make_expert(Budget(samples=10_000, time_ms=50, clock=time.perf_counter))
    began = time.perf_counter()
    assert timed(seen, DeterministicRandom(bytes(16), "y")).SerializeToString() in legal
    assert time.perf_counter() - began < 0.05 + 0.5


def test_equivalent_cards_are_searched_once() -> None:
    # 9♠ 10♠ with J♠ played: playing either gives the same trick and round.
    hand = mask_of([7, 8, 11, 13])  # 9♠ 10♠ K♠ 2♥
    assert distinct_plays(hand, hand | 1 << 9) == [7, 11, 13]
    assert distinct_plays(hand, hand | 1 << 9 | 1 << 10 | 1 << 12) == [7, 13]


def test_set_aside_candidates_are_four_cards_of_the_hand() -> None:
    rng = random.Random(5)
    for _ in range(50):
        hand = mask_of(rng.sample(range(52), 20))
        trump = rng.randrange(4)
        candidates = set_aside_candidates(hand, trump)
        assert candidates[0] == greedy_set_aside(hand, trump)
        for aside in candidates:
            assert aside.bit_count() == 4 and aside & ~hand == 0
        assert len(set(candidates)) == len(candidates)


def test_expert_declares_the_suit_a_hand_of_five_is_built_on() -> None:
    # A♥ K♥ Q♥ J♥ 10♥: hearts is the only sensible trump.
    view = hokm_pb2.HokmView(
        seat=0, phase=hokm_pb2.HOKM_PHASE_DECLARE_TRUMP, hand=[21, 22, 23, 24, 25],
        hand_counts=[5, 0, 0, 0], rules=hokm_pb2.HokmRules(variant=VARIANT[4]),
        legal=[hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=s))  # type: ignore[arg-type]
               for s in (1, 2, 3, 4)],
    )
    command = make_expert(Budget(samples=16))(view, DeterministicRandom(bytes(16), "t"))
    assert command.declare_trump.suit == 1 + 21 // RANKS_PER_SUIT  # hearts

