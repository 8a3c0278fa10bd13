"""Property tests over random legal play (docs/architecture.md "Random simulation",
docs/rules/hand.md).

The generic harness (engine.core.testing.random_sim) checks at every step: legal commands
only for the seat to act, unique and stable, all accepted; fuzzed illegal commands refused
with a RuleViolation; replay equals the evolved state; proto round trips; nothing hidden
in any view or redacted event. The Hand hooks below add: the 106 cards are conserved at
every step, every round ends or is void, each round's figures equal an independent
recomputation, and finished logs pass the audit. The random bot is biased toward melding,
and the last test checks that random play really opens, lays off and goes out.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from dast.v1 import hand_pb2, log_pb2
from engine import hand
from engine.core.audit import audit_log
from engine.core.cards import iter_cards
from engine.core.chain import chain_log
from engine.core.rng import DeterministicRandom
from engine.core.testing import SimReport, random_sim, sim_seeds
from engine.hand.bots import random_policy
from engine.hand.codec import hand_command
from engine.hand.sim import play_match
from engine.hand.state import HandState
from engine.hand.views import view
from tests.engine.hand.table import players
from tests.engine.hand.visibility import (
    VISIBILITY,
    event_cards,
    hidden_mask,
    stock_mask,
    table_cards,
)

ALL_CARDS = (1 << 106) - 1

CONFIGS = {
    "2p": (2, hand_pb2.HandRules(rounds=2)),
    "3p": (3, hand_pb2.HandRules(rounds=2, dealer_rotation=hand_pb2.HAND_DEALER_ROTATION_NEXT)),
    "4p": (4, hand_pb2.HandRules(rounds=2, max_restocks=0, must_beat_previous=True)),
    "4p_partners": (4, hand_pb2.HandRules(rounds=2, partnerships=True, turn_seconds=20)),
    "2p_loose": (
        2,
        hand_pb2.HandRules(rounds=1, open_min=20, max_jokers_per_meld=2, joker_penalty=50),
    ),
}


def check_conservation(state: HandState) -> None:
    """docs/rules/hand.md "Cards": the 106 cards are all somewhere, each exactly once."""
    places = [*state.hands, stock_mask(state), table_cards(state)]
    places += [1 << card for card in state.discard]
    counted = sum(mask.bit_count() for mask in places)
    union = 0
    for mask in places:
        union |= mask
    if counted == 0:  # between a round's start and its deal
        return
    assert counted == 106 and union == ALL_CARDS, f"{counted} cards, union {union:#x}"
    assert len(state.stock) + len(state.discard) + table_cards(state).bit_count() + sum(
        h.bit_count() for h in state.hands
    ) == 106


def fuzz(rng: DeterministicRandom, seats: int) -> log_pb2.Command:
    """A random command; lay-downs are kept too short to be melds (every other kind is
    listed exhaustively by ``legal``, so the harness can tell legal from illegal)."""
    seat = rng.randbelow(seats)
    card = rng.randbelow(108)
    choice = rng.randbelow(6)
    if choice == 0:
        return hand_command(seat, draw_from_stock=hand_pb2.DrawFromStock())
    if choice == 1:
        return hand_command(seat, take_discard=hand_pb2.TakeDiscard())
    if choice == 2:
        spec = hand_pb2.MeldSpec(cards=[card, rng.randbelow(106)])
        return hand_command(seat, lay_melds=hand_pb2.LayMelds(melds=[spec]))
    if choice == 3:
        move = hand_pb2.LayOff(meld_id=rng.randbelow(4), card=card)
        if card in (104, 105):
            move.joker_face = rng.randbelow(52)
        return hand_command(seat, lay_off=move)
    if choice == 4:
        return hand_command(
            seat, retrieve_joker=hand_pb2.RetrieveJoker(meld_id=rng.randbelow(4), cards=[card])
        )
    return hand_command(seat, discard=hand_pb2.Discard(card=card))




@cache
def simulate(name: str) -> SimReport:
    """Two random legal matches of one configuration (cached: several tests read them)."""
    count, rules = CONFIGS[name]
    return random_sim(
        hand,
        rules,
        players(count),
        sim_seeds(2, f"hand/{name}"),
        VISIBILITY,
        fuzz=fuzz,
        check_state=check_conservation,
        legal_sample=4,
        keep_logs=True,
    )


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_random_legal_play_keeps_every_invariant(name: str) -> None:
    report = simulate(name)
    assert report.matches == 2
    assert report.fuzzed > 0


def _expected_points(state: HandState, went_out: int) -> list[int]:
    """An independent recomputation of docs/rules/hand.md "Scoring" from the round's last state."""
    options = state.options
    is_hand = state.opened_this_turn and not state.used_older_melds
    values = {12: 11, 9: 10, 10: 10, 11: 10}
    points = []
    for seat, cards in enumerate(state.hands):
        if seat == went_out:
            points.append(-60 if is_hand else -30)
            continue
        if options.partnerships and seat % 2 == went_out % 2 and not (
            options.partner_of_winner_scores
        ):
            points.append(0)
            continue
        if not state.opened[seat]:
            figure = 100
        else:
            figure = sum(
                options.joker_penalty if card >= 104 else values.get(card % 13, card % 13 + 2)
                for card in iter_cards(cards)
            )
        points.append(figure * 2 if is_hand else figure)
    return points


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_round_scores_equal_an_independent_recomputation(name: str) -> None:
    # docs/rules/hand.md "Scoring" and "End of a round": every round ends (scored) or is void.
    for log in simulate(name).logs:
        state: HandState | None = None
        rounds = voids = 0
        totals = [0] * len(players(CONFIGS[name][0]))
        for event in log:
            kind = event.hand.WhichOneof("kind")
            if kind == "round_ended" and state is not None:
                ended = event.hand.round_ended
                went_out = ended.went_out
                assert state.hands[went_out] == 0
                assert list(ended.points) == _expected_points(state, went_out)
                points = list(ended.points)
                if state.options.partnerships:
                    teams = [points[0] + points[2], points[1] + points[3]]
                    totals = [t + teams[seat % 2] for seat, t in enumerate(totals)]
                    assert list(ended.team_points) == teams
                else:
                    totals = [t + p for t, p in zip(totals, points, strict=True)]
                assert list(ended.totals) == totals
                rounds += 1
            voids += kind == "round_voided"
            state = hand.evolve(state, event)
        assert state is not None and hand.is_over(state)
        assert rounds == state.options.rounds
        started = sum(e.hand.WhichOneof("kind") == "round_started" for e in log)
        assert started == rounds + voids
        best = min(totals)
        assert list(log[-1].hand.match_ended.winners) == [
            s for s, t in enumerate(totals) if t == best
        ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_finished_random_matches_pass_the_audit(name: str) -> None:
    for log in simulate(name).logs:
        report = audit_log(chain_log(log))
        assert report.ok, report.problems


def test_random_play_opens_lays_off_and_goes_out() -> None:
    kinds: Counter[str] = Counter()
    for name in CONFIGS:
        for log in simulate(name).logs:
            kinds.update(str(e.hand.WhichOneof("kind")) for e in log)
    assert kinds["melds_laid"] > 20
    assert kinds["card_laid_off"] > 10
    assert kinds["round_ended"] >= 16
    assert kinds["joker_retrieved"] > 0
    assert kinds["stock_restocked"] > 0 and kinds["round_voided"] > 0
    assert kinds["card_drawn"] > kinds["round_ended"]


def test_views_of_random_play_offer_the_bot_a_legal_command() -> None:
    # The random bot reads only the view: its choice must be one of the legal commands.
    log = simulate("2p").logs[0]
    state = hand.replay(log[:40])
    seat = hand.to_act(state)
    assert seat is not None
    chosen = random_policy(view(state, seat), DeterministicRandom(b"k", "bot"))
    assert chosen in [c.hand for c in hand.legal(state, seat)]


@pytest.mark.parametrize(("rules", "bots"), [
    (hand_pb2.HandRules(rounds=2), ("random", "greedy", "random")),
    (hand_pb2.HandRules(rounds=2, partnerships=True), ("greedy", "random", "random", "greedy")),
])
def test_bot_matches_keep_the_invariants(rules: hand_pb2.HandRules, bots: tuple[str, ...]) -> None:
    # The biased random bot and the greedy bot (over views only) play whole matches; at
    # every event the cards are conserved, nothing hidden leaks, and the log replays.
    seed = sim_seeds(1, f"bots/{len(bots)}")[0]
    log = play_match(rules, seed, bots, 7, players=players(len(bots)))
    state: HandState | None = None
    for index, event in enumerate(log):
        state = hand.evolve(state, event)
        check_conservation(state)
        for seat in (*range(len(bots)), None):
            assert not event_cards(hand.redact(event, seat)) & hidden_mask(state, seat)
        if index % 50 == 0:
            assert hand.replay(log[: index + 1]) == state
    assert state is not None and hand.is_over(state) and hand.replay(log) == state
    assert audit_log(chain_log(log)).ok
