"""The search core agrees with the engine: random rounds played through both, side by side.

Every round is played by the engine (``legal``/``decide``/``evolve``) with random legal
commands; from the first lead the same moves go into a :class:`FastRound`, and at every
step the legal set, the seat to act, every hand, every trick's winner, the tricks won and
the round's score (result, winners, points) must be equal (docs/rules/hokm.md "Playing tricks",
"Scoring a round", "Three players", "Two players").
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import Required, TypedDict

import pytest

from dast.v1 import hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import mask_of
from engine.hokm.search.core import FastRound, random_playout
from engine.hokm.state import HokmState, Phase

from .notation import VARIANT, players


class _Setup(TypedDict, total=False):
    """The rules options of one setup, given to ``HokmRules``."""

    variant: Required[hokm_pb2.HokmVariant.ValueType]
    play_all_tricks: bool
    trump_2p: hokm_pb2.Trump2p.ValueType


_SETUPS: dict[str, _Setup] = {
    "4p": dict(variant=VARIANT[4]),
    "4p-all-tricks": dict(variant=VARIANT[4], play_all_tricks=True),
    "3p": dict(variant=VARIANT[3]),
    "3p-all-tricks": dict(variant=VARIANT[3], play_all_tricks=True),
    "2p": dict(variant=VARIANT[2]),
    "2p-declared-all-tricks": dict(
        variant=VARIANT[2], trump_2p=hokm_pb2.TRUMP_2P_HAKEM_DECLARES, play_all_tricks=True
    ),
}


def _random_command(state: HokmState, rng: random.Random) -> hokm_pb2.HokmCommand:
    if state.phase == Phase.SET_ASIDE:
        hand = [c for c in range(52) if state.hands[state.turn] >> c & 1]
        return hokm_pb2.HokmCommand(
            set_aside_cards=hokm_pb2.SetAsideCards(cards=sorted(rng.sample(hand, 4)))
        )
    return rng.choice(hokm.legal(state, state.turn)).hokm


def _play_round_side_by_side(setup: _Setup, seed: bytes, rng: random.Random) -> int:
    """One round (target score 1 ends the match with it) through the engine and the core;
    the number of core moves compared."""
    seats = {VARIANT[4]: 4, VARIANT[3]: 3, VARIANT[2]: 2}[setup["variant"]]
    rules = hokm_pb2.HokmRules(target_score=1, **setup)
    state = hokm.replay(hokm.start(rules, seed, players(seats)))
    rnd: FastRound | None = None
    compared = 0
    while not hokm.is_over(state):
        seat = state.turn
        if rnd is None and state.phase == Phase.PLAY:
            rnd = FastRound.from_state(state)
        if rnd is not None:
            assert (rnd.turn, rnd.taking) == (seat, state.phase == Phase.TAKE_PILE)
            assert rnd.hands == list(state.hands)
            engine_legal = [c.hokm.play_card.card for c in hokm.legal(state, seat)
                            if c.hokm.HasField("play_card")]
            assert rnd.legal_mask() == mask_of(engine_legal)
        command = _random_command(state, rng)
        if rnd is not None:
            if command.HasField("play_card"):
                rnd.play(command.play_card.card)
            else:
                rnd.take_pile(command.take_pile_card.pile)
            compared += 1
        events = hokm.decide(state, log_pb2.Command(seat=seat, hokm=command))
        for event in events:
            state = hokm.evolve(state, event)
            kind = event.hokm.WhichOneof("kind")
            if kind == "trick_taken":
                assert rnd is not None and rnd.leader == event.hokm.trick_taken.seat
                assert rnd.tricks_won == list(state.tricks_won)
            elif kind == "round_ended":
                assert rnd is not None and rnd.over
                ended = event.hokm.round_ended
                score = rnd.score()
                assert (score.result, score.winners, score.points) == (
                    ended.result, tuple(ended.winners), tuple(ended.points)
                )
        if rnd is not None and not hokm.is_over(state):
            assert not rnd.over
    return compared


def _seed(name: str, index: int) -> bytes:
    return hashlib.sha256(f"fast-core/{name}/{index}".encode()).digest()


@pytest.mark.parametrize("name", sorted(_SETUPS))
def test_random_rounds_replay_identically_through_the_engine(name: str) -> None:
    rng = random.Random(name)
    compared = sum(
        _play_round_side_by_side(_SETUPS[name], _seed(name, i), rng) for i in range(350)
    )
    assert compared > 350 * 20  # every round compared its trick play, not only its deal


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("DAST_SLOW_TESTS"),
    reason="30,000 more rounds (about 95 s): set DAST_SLOW_TESTS=1 to run",
)
@pytest.mark.parametrize("name", sorted(_SETUPS))
def test_many_more_random_rounds_replay_identically(name: str) -> None:
    rng = random.Random(f"slow/{name}")
    for i in range(5_000):
        _play_round_side_by_side(_SETUPS[name], _seed(f"slow/{name}", i), rng)


def test_random_playout_ends_every_round_with_all_cards_accounted_for() -> None:
    rng = random.Random(7)
    options = hokm.replay(hokm.start(
        hokm_pb2.HokmRules(play_all_tricks=True), _seed("playout", 0), players(4)
    )).options
    for _ in range(200):
        deck = list(range(52))
        rng.shuffle(deck)
        hands = [mask_of(deck[s * 13:(s + 1) * 13]) for s in range(4)]
        rnd = FastRound.deal(options, hakem=rng.randrange(4), trump=rng.randrange(4),
                             hands=hands)
        assert random_playout(rnd, rng) == 52
        assert rnd.over and sum(rnd.tricks_won) == 13 and not any(rnd.hands)
