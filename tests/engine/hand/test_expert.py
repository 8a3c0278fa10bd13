"""The ``expert`` Hand bot: legal in every phase, the seat's view only, its decisions
(docs/rules/hand.md "A turn", "End of a round", "Scoring"), within its budget."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from dast.v1 import hand_pb2, log_pb2
from engine import hand
from engine.core.budget import Budget
from engine.core.cards import iter_cards, mask_of
from engine.core.rng import DeterministicRandom
from engine.core.testing import bot_players, play_match
from engine.hand.basic_bot import basic_policy
from engine.hand.expert import make_expert
from engine.hand.melds import validate_meld
from engine.hand.state import HandState, Phase, TableMeld
from tests.engine.hand.table import act, cards, table, turn_of

_FAST = Budget(samples=2)
_SETUPS = {
    "2p": (hand_pb2.HandRules(players=2, rounds=1), 2),
    "3p": (hand_pb2.HandRules(players=3, rounds=1), 3),
    "4p-partners": (hand_pb2.HandRules(players=4, partnerships=True, rounds=1), 4),
}


def _seed(label: str) -> bytes:
    return hashlib.sha256(f"hand-expert/{label}".encode()).digest()


def _rng(label: str) -> DeterministicRandom:
    return DeterministicRandom(bytes(16), label)


@pytest.mark.parametrize("name", sorted(_SETUPS))
def test_expert_returns_a_legal_command_in_every_phase(name: str) -> None:
    rules, seats = _SETUPS[name]
    acted: set[int] = set()
    expert = make_expert(_FAST)

    def recording(view: hand_pb2.HandView, rng: DeterministicRandom) -> hand_pb2.HandCommand:
        acted.add(view.phase)
        return expert(view, rng)

    policies = [recording if seat % 2 == 0 else basic_policy for seat in range(seats)]
    # play_match raises RuleViolation at the first command decide refuses.
    events = play_match(hand, rules, _seed(name), bot_players(seats), policies, rng_seed=1)
    assert hand.is_over(hand.replay(events))
    assert {hand_pb2.HAND_PHASE_DRAW, hand_pb2.HAND_PHASE_PLAY} <= acted


def test_expert_discards_first_when_it_starts_the_round() -> None:
    expert = make_expert(_FAST)
    state = hand.replay(hand.start(hand_pb2.HandRules(players=2), _seed("first"),
                                   bot_players(2)))
    assert state.phase == Phase.FIRST_DISCARD
    command = expert(hand.view(state, state.turn), _rng("first"))
    assert command.WhichOneof("kind") == "discard"
    assert command in [c.hand for c in hand.legal(state, state.turn)]


def _states(label: str) -> Iterator[HandState]:
    """Every state in which a seat acts, over one 2-player round of basic bots."""
    rng = _rng("basic")
    state = hand.replay(hand.start(hand_pb2.HandRules(players=2, rounds=1), _seed(label),
                                   bot_players(2)))
    while (seat := hand.to_act(state)) is not None:
        yield state
        command = basic_policy(hand.view(state, seat), rng)
        for event in hand.decide(state, log_pb2.Command(seat=seat, hand=command)):
            state = hand.evolve(state, event)


def _redealt(state: HandState, me: int, rng: random.Random) -> HandState:
    """The hidden cards (other hands and the stock, but for cards shown in public) dealt
    again at random, every count kept."""
    others = [seat for seat in range(state.seats) if seat != me]
    hidden = [c for seat in others for c in iter_cards(state.hands[seat] & ~state.shown)]
    hidden += [c for c in state.stock if not state.shown >> c & 1]
    rng.shuffle(hidden)
    hands = list(state.hands)
    for seat in others:
        kept = state.hands[seat] & state.shown
        need = state.hands[seat].bit_count() - kept.bit_count()
        hands[seat] = kept | mask_of(hidden[:need])
        hidden = hidden[need:]
    stock = tuple(c if state.shown >> c & 1 else hidden.pop() for c in state.stock)
    return replace(state, hands=tuple(hands), stock=stock)


def test_expert_decides_the_same_whatever_the_hidden_cards() -> None:
    # Given the seat's view only: states differing in every card the seat cannot see, but
    # showing it the same view, get the same command.
    expert = make_expert(_FAST)
    rng = random.Random(3)
    compared = 0
    for index, state in enumerate(_states("hidden")):
        if index % 4:
            continue
        me = state.turn
        seen = hand.view(state, me)
        other = _redealt(state, me, rng)
        assert other.hands != state.hands or other.stock != state.stock
        assert hand.view(other, me) == seen
        first = expert(seen, _rng(f"d/{index}"))
        assert expert(hand.view(other, me), _rng(f"d/{index}")) == first
        compared += 1
    assert compared >= 5


def test_expert_goes_out_with_a_hand_when_it_can() -> None:
    # docs/rules/hand.md "End of a round": laying the whole hand but the discard at once, with
    # nothing melded before, is a "hand" (−60, everyone else doubled).
    state = turn_of(table(["6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 9♦ 10♦ 2♥", "2♦ 3♦ 4♦"]), 0,
                    phase=Phase.PLAY)
    command = make_expert(_FAST)(hand.view(state, 0), _rng("hand"))
    laid = sorted(c for meld in command.lay_melds.melds for c in meld.cards)
    assert laid == sorted(cards("6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 9♦ 10♦"))


def test_expert_takes_the_discard_that_completes_a_meld() -> None:
    # 9♥ on the pile turns 10♥ J♥ loose cards into a run; any stock card helps less on
    # average. The hand has opened, so the run may be laid at once.
    state = turn_of(table(["10♥ J♥ K♠ K♥ K♣ 3♦ 5♣ 9♠ 2♠", "2♦ 3♣ 4♣"]), 0,
                    discard="4♠ 9♥", opened=[0])
    command = make_expert(Budget(samples=12))(hand.view(state, 0), _rng("take"))
    assert command.WhichOneof("kind") == "take_discard"


def test_a_sample_budget_is_reproducible_and_a_clock_bounds_the_time() -> None:
    state = next(s for s in _states("budget") if s.phase == Phase.PLAY
                 and sum(c.hand.WhichOneof("kind") == "discard" for c in hand.legal(s, s.turn)) > 3)
    seen = hand.view(state, state.turn)
    expert = make_expert(Budget(samples=4))
    assert len({expert(seen, _rng("same")).SerializeToString() for _ in range(3)}) == 1
    legal = [c.hand for c in hand.legal(state, state.turn)]
    timed = make_expert(Budget(samples=100_000, time_ms=50, clock=time.perf_counter))
    began = time.perf_counter()
    assert timed(seen, _rng("timed")) in legal
    assert time.perf_counter() - began < 0.05 + 0.5  # generous: the machine is shared


def test_expert_goes_out_with_the_solvers_melds_where_the_longest_first_strands_a_card() -> None:
    # docs/rules/hand.md "What the bot and the client need from the engine": taking 8♠ 8♣ 8♦
    # as a set (listed first, as long as any run) strands the rest; the three runs go out.
    state = turn_of(table(["6♠ 7♠ 8♠ 6♣ 7♣ 8♣ 8♦ 9♦ 10♦ 2♥", "2♦ 3♦ 4♦"]), 0,
                    phase=Phase.PLAY, opened=[0])
    view = hand.view(state, 0)
    listed = [c for c in view.legal if c.WhichOneof("kind") == "lay_melds"]
    assert sorted(listed[0].lay_melds.melds[0].cards) == sorted(cards("8♠ 8♣ 8♦"))  # the trap
    assert basic_policy(view, _rng("out")) == listed[0]
    command = make_expert(_FAST)(view, _rng("out"))
    _, state = act(state, 0, lay_melds=command.lay_melds)
    assert state.hands[0] == mask_of(cards("2♥"))


def test_expert_keeps_a_pair_and_discards_a_card_near_nothing() -> None:
    # Before opening (27 points of melds), J♥ melds with nothing while K♠ K♦ wait for a
    # third king, as much penalty: the discard keeps the pair.
    state = turn_of(table(["K♠ K♦ J♥ 5♣ 6♣ 7♣ 2♦ 3♦ 4♦ 9♠ 10♠ 7♥ 8♥ 3♠", "2♣ 3♣ 4♣"]), 0,
                    phase=Phase.PLAY)
    command = make_expert(Budget(samples=240))(hand.view(state, 0), _rng("keep"))
    assert command.WhichOneof("kind") == "discard"
    assert command.discard.card in cards("J♥")


# -- the rollouts' choices before opening (engine/hand/expert_race.py) ------------------

_ONE_DRAW_FROM_A_HAND = "K♠ K♥ K♣ Q♠ Q♥ Q♣ J♦ Q♦ K♦ 7♥ 8♥ 7♠ 2♣"
"""Three melds (90 points: the seat may open), 7♥ 8♥ 7♠ that 6♥ 9♥ 7♦ 7♣ or a joker
completes, and 2♣ to discard: after the discard, one card of ten drawn is a "hand"."""
_STOCK = "5♠ 6♠ 9♣ 10♣ 3♥ 4♥ 5♥ 9♠ 10♠ J♠ 3♣ 4♣ 5♣ 6♣ 8♣ 2♠ 3♠ 4♠ 5♦ 6♦"


def _on_table(meld_id: int, owner: int, text: str) -> TableMeld:
    return TableMeld(meld_id, owner, validate_meld(cards(text), {}))


def test_expert_waits_for_a_hand_one_draw_away_against_a_slow_table() -> None:
    # docs/rules/hand.md "Scoring": a hand scores −60 and doubles the unopened opponent's
    # +100; the opponent has not opened, so a turn or two of waiting costs little.
    state = turn_of(table([_ONE_DRAW_FROM_A_HAND, "2♦ 4♦ 6♦ 8♦ 10♦ Q♠ A♣ 3♥ 5♥ 9♥ J♥ K♥"],
                          stock=_STOCK), 0, phase=Phase.PLAY)
    view = hand.view(state, 0)
    assert any(c.WhichOneof("kind") == "lay_melds" for c in view.legal)
    command = make_expert(Budget(samples=240))(view, _rng("wait"))
    assert command.WhichOneof("kind") == "discard"
    assert command in view.legal


def test_expert_opens_at_once_when_an_opponent_is_about_to_go_out() -> None:
    # The opponent has opened and holds one card, with melds on the table to lay off on:
    # waiting risks +100 (+200 after its hand cannot happen, but +100 is enough).
    state = turn_of(table([_ONE_DRAW_FROM_A_HAND, "4♦"], stock=_STOCK), 0, phase=Phase.PLAY,
                    opened=[1])
    melds = (_on_table(0, 1, "9♣ 10♣ J♣"), _on_table(1, 1, "5♦ 6♦ 7♦ 8♦"),
             _on_table(2, 1, "A♠ A♥ A♦"), _on_table(3, 1, "3♠ 4♠ 5♠ 6♠"))
    state = replace(state, melds=melds, turn_first_meld=len(melds))
    view = hand.view(state, 0)
    command = make_expert(Budget(samples=240))(view, _rng("open"))
    assert command.WhichOneof("kind") == "lay_melds"
    assert command in view.legal


def test_the_rollout_choices_are_legal_and_bounded_by_a_clock() -> None:
    # Draw phase before opening with a usable discard (taking it obliges opening now), and
    # the play phase able to open: a legal command within the clock's budget.
    start = table([_ONE_DRAW_FROM_A_HAND.replace(" 2♣", ""),
                   "2♦ 4♦ 6♦ 8♦ 10♦ Q♠ A♣ 3♥ 5♥ 9♥ J♥ K♥"], stock=_STOCK)
    drawing = turn_of(start, 0, discard="6♥")
    playing = turn_of(table([_ONE_DRAW_FROM_A_HAND, "2♦ 4♦ 6♦ 8♦ 10♦ Q♠ A♣ 3♥ 5♥ 9♥ J♥ K♥"],
                            stock=_STOCK), 0, phase=Phase.PLAY)
    for state in (drawing, playing):
        view = hand.view(state, 0)
        assert not view.opened[0]
        timed = make_expert(Budget(samples=100_000, time_ms=50, clock=time.perf_counter))
        began = time.perf_counter()
        assert timed(view, _rng("clock")) in view.legal
        assert time.perf_counter() - began < 0.05 + 0.5  # generous: the machine is shared
        assert make_expert(_FAST)(view, _rng("fast")) in view.legal
    assert any(c.WhichOneof("kind") == "take_discard" for c in hand.view(drawing, 0).legal)


def test_a_deadline_inside_a_rollout_leaves_the_default_choice() -> None:
    # One rollout calls the solver dozens of times; the deadline is checked at every turn
    # it plays, and a rollout cut short counts for nothing: with no rollout finished the
    # rollouts have no evidence, so the default (open at once) stands.
    state = turn_of(table([_ONE_DRAW_FROM_A_HAND, "2♦ 4♦ 6♦ 8♦ 10♦ Q♠ A♣ 3♥ 5♥ 9♥ J♥ K♥"],
                          stock=_STOCK), 0, phase=Phase.PLAY)
    view = hand.view(state, 0)
    now = [0.0]

    def clock() -> float:
        now[0] += 0.004  # every reading 4 ms later: the 100 ms of rollouts end mid-rollout
        return now[0]

    readings = []

    def counted() -> float:
        readings.append(clock())
        return readings[-1]

    command = make_expert(Budget(samples=100_000, time_ms=200, clock=counted))(
        view, _rng("wait"))
    assert command in view.legal
    # The untimed expert waits for the hand here (the first rollout test); the timed one
    # ran out inside its first rollouts and opened, and the clock stopped being read soon
    # after the deadline (a few dozen readings, not one per solver call of every rollout).
    assert command.WhichOneof("kind") == "lay_melds"
    assert len(readings) < 60
