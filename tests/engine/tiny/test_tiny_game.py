"""The tiny test game is a correct game of the protocol: random simulation, audit, redaction.

The game itself lives in tests/support/tiny (rules in its module docstring); these checks
make the end-to-end tests that use it meaningful.
"""

from __future__ import annotations

import pytest

from dast.v1 import common_pb2, log_pb2
from engine.core.audit import audit_log
from engine.core.chain import chain_log, recorded_server_seed
from engine.core.errors import RuleViolation
from engine.core.payload import unpack
from engine.core.testing import Visibility, bot_players, play_match, random_sim, sim_seeds
from tests.support.tiny import game as tiny
from tests.support.tiny import tiny_pb2
from tests.support.tiny.registered import tiny_registered


def _mask(cards: object) -> int:
    mask = 0
    for card in cards:  # type: ignore[attr-defined]
        mask |= 1 << card
    return mask


def _hidden(state: tiny.TinyState, seat: int | None) -> int:
    return sum(_mask(hand) for index, hand in enumerate(state.hands) if index != seat)


def _event_cards(event: log_pb2.Event) -> int:
    payload = unpack(event.other, tiny_pb2.TinyEvent)
    if payload.WhichOneof("kind") == "hands_dealt":
        return sum(_mask(hand.cards) for hand in payload.hands_dealt.hands)
    if payload.WhichOneof("kind") == "card_played":
        return _mask([payload.card_played.card])
    return 0


def _view_cards(view: tiny_pb2.TinyView) -> int:
    return _mask(view.hand)


VISIBILITY = Visibility(_hidden, _event_cards, _view_cards)


@pytest.mark.parametrize("players", [2, 3])
def test_random_matches_keep_every_protocol_check(players: int) -> None:
    report = random_sim(tiny, tiny_pb2.TinyRules(players=players), bot_players(players),  # type: ignore[arg-type]
                        sim_seeds(20, f"tiny-{players}"), VISIBILITY, replay_every=True)
    assert report.matches == 20 and report.commands >= 20 * 3


def test_a_seat_must_follow_the_led_suit() -> None:
    state = tiny.replay(tiny.start(tiny_pb2.TinyRules(players=2), bytes(32), bot_players(2)))
    # Seat 0 leads; seat 1 holds a card of the led suit unless its hand lacks the suit.
    lead = state.hands[0][0]
    state = tiny.evolve(state, tiny.decide(state, tiny.legal(state, 0)[0])[0])
    followers = [c for c in state.hands[1] if tiny.suit_of(c) == tiny.suit_of(lead)]
    others = [c for c in state.hands[1] if tiny.suit_of(c) != tiny.suit_of(lead)]
    if followers and others:
        off_suit = log_pb2.Command(seat=1)
        off_suit.other.Pack(tiny_pb2.TinyCommand(card=others[0]))
        with pytest.raises(RuleViolation) as refused:
            tiny.decide(state, off_suit)
        assert refused.value.code == "must_follow_suit"
    assert [unpack(c.other, tiny_pb2.TinyCommand).card for c in tiny.legal(state, 1)] == (
        followers or list(state.hands[1]))


def test_a_finished_log_passes_the_audit_and_its_chain_hides_the_seed() -> None:
    seed = bytes(range(32))
    policies = [tiny._lowest, tiny._highest, tiny._any]
    events = play_match(tiny, tiny_pb2.TinyRules(players=3, turn_seconds=15), seed,  # type: ignore[arg-type]
                        bot_players(3), policies, 5)
    assert tiny.is_over(tiny.replay(events))
    # The chain finds the seed inside the packed start event, as it does for Hokm.
    assert recorded_server_seed(events[0]) == seed
    with tiny_registered():
        report = audit_log(chain_log(events))
        assert report.ok, report.problems
        forged = chain_log(events)
        forged[-1].event.other.Pack(tiny_pb2.TinyEvent(match_ended=tiny_pb2.MatchEnded(
            winner=0, scores=[9, 0, 0], server_seed=seed)))
        assert not audit_log(chain_log([entry.event for entry in forged])).ok


def test_a_seat_never_sees_another_seats_cards_nor_the_seed() -> None:
    events = tiny.start(tiny_pb2.TinyRules(players=3), bytes(32), bot_players(3))
    for seat in (None, 0, 1, 2):
        started = unpack(tiny.redact(events[0], seat).other, tiny_pb2.TinyEvent)
        assert started.match_started.fairness.server_seed == b""
        dealt = unpack(tiny.redact(events[1], seat).other, tiny_pb2.TinyEvent).hands_dealt
        assert [bool(hand.cards) for hand in dealt.hands] == [s == seat for s in range(3)]


def test_registration_refuses_a_taken_type_or_name() -> None:
    from engine import registry

    with tiny_registered() as served:
        assert registry.GAMES[tiny.GAME_TYPE] is served
        assert registry.game_of_event(tiny.start(tiny_pb2.TinyRules(), bytes(32),
                                                 bot_players(3))[0]) is served
        with pytest.raises(ValueError):
            registry.register(tiny)  # type: ignore[arg-type]
    assert tiny.GAME_TYPE not in registry.GAMES
    assert common_pb2.GAME_TYPE_HOKM in registry.GAMES
