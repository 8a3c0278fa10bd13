"""What each seat sees (docs/architecture.md "Bots", docs/rules/hand.md): views, redaction, the
fairness
block, deadlines, and the log hooks the audit uses (setup_of, command_for)."""

from __future__ import annotations

from dast.v1 import hand_pb2
from engine import hand
from engine.core.fairness import commit
from engine.hand.state import Phase
from tests.engine.hand.table import SEED, act, cards, players, table, turn_of

START_MS = 1_000_000


def test_a_seat_sees_its_own_hand_and_only_counts_of_the_others() -> None:
    state = hand.replay(hand.start(hand_pb2.HandRules(), SEED, players(3)))
    for seat in range(3):
        seen = hand.view(state, seat)
        assert not seen.is_spectator and seen.seat == seat
        assert list(seen.hand) == [c for c in range(106) if state.hands[seat] >> c & 1]
        assert list(seen.hand_counts) == [14, 15, 14] and seen.stock_count == 63
        assert bool(seen.legal) == (seat == 1)
    spectator = hand.view(state, None)
    assert spectator.is_spectator and not spectator.hand and not spectator.legal
    assert spectator.HasField("turn") and spectator.turn == 1
    assert spectator.phase == hand_pb2.HAND_PHASE_FIRST_DISCARD


def test_redacted_deal_hides_other_hands_and_the_stock() -> None:
    events = hand.start(hand_pb2.HandRules(), SEED, players(2))
    dealt = events[2]
    for seat in (0, 1, None):
        copy = hand.redact(dealt, seat).hand.cards_dealt
        assert not copy.stock and copy.stock_count == 77
        for share in copy.hands:
            assert bool(share.cards) == (share.seat == seat) and share.count in (14, 15)
    assert len(dealt.hand.cards_dealt.stock) == 77  # the stored event is not changed


def test_the_server_seed_is_committed_stripped_from_every_copy_and_revealed_at_the_end() -> None:
    # docs/architecture.md "Provably fair deals".
    group = players(2)
    events = hand.start(hand_pb2.HandRules(), SEED, group)
    fairness = events[0].hand.match_started.fairness
    assert fairness.server_seed == SEED and fairness.server_seed_commitment == commit(SEED)
    assert list(fairness.client_seeds) == [p.client_seed for p in group]
    for seat in (0, 1, None):
        assert not hand.redact(events[0], seat).hand.match_started.fairness.server_seed
    setup = hand.setup_of(events[0])
    assert isinstance(setup.rules, hand_pb2.HandRules)
    assert setup.server_seed == SEED and setup.players == tuple(group)
    assert setup.rules.open_min == 51 and setup.rules.rounds == 5  # resolved defaults


def test_the_last_event_of_a_batch_carries_the_deadline_of_the_seat_to_act() -> None:
    # Shared conventions: deadline_ms = at_ms + turn_seconds * 1000 when a seat must act.
    rules = hand_pb2.HandRules(turn_seconds=20)
    events = hand.start(rules, SEED, players(2), at_ms=START_MS)
    assert [e.deadline_ms for e in events] == [0, 0, START_MS + 20_000]
    assert all(e.at_ms == START_MS for e in events)
    state = hand.replay(events)
    command = hand.legal(state, 1)[0]
    command.at_ms = START_MS + 5_000
    command.automatic = True
    batch = hand.decide(state, command)
    assert batch[-1].deadline_ms == START_MS + 25_000 and batch[-1].automatic
    assert hand.view(hand.evolve(state, batch[0]), 0).deadline_ms == START_MS + 25_000
    untimed = hand.start(hand_pb2.HandRules(), SEED, players(2), at_ms=START_MS)
    assert untimed[-1].deadline_ms == 0


def test_command_for_gives_back_the_command_of_each_player_caused_event() -> None:
    state = turn_of(table(["K♠ JK1 K♣ Q♦ J♦ 10♦ 4♥ 9♠", "2♥"]), 0, opened=[0])
    state = turn_of(state, 0, phase=Phase.PLAY, opened=[0])
    command = hand.legal(state, 0)[0]
    assert command.hand.WhichOneof("kind") == "lay_melds"
    events, _ = act(state, 0, lay_melds=command.hand.lay_melds)
    again = hand.command_for(events[0])
    assert again is not None and hand.decide(state, again) == events
    assert hand.command_for(hand.start(hand_pb2.HandRules(), SEED, players(2))[1]) is None


def test_a_card_taken_from_the_discard_pile_stays_public() -> None:
    state = turn_of(table(["7♠ 8♠ K♦ K♣", "2♥ 3♥"]), 0, discard="9♠", opened=[0])
    _events, after = act(state, 0, take_discard=hand_pb2.TakeDiscard())
    other = hand.view(after, 1)
    assert other.must_use == cards("9♠")[0]
    assert list(other.hand) == cards("2♥ 3♥")
