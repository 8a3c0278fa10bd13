"""docs/rules/hokm.md "Choosing the hakem", "Dealing and trump", "Seats and teams"
(``random_partners``), and the deal order documented in engine/hokm/deal.py."""

from __future__ import annotations

import hashlib

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.cards import RANKS_PER_SUIT, Rank, popcount
from engine.core.errors import InvalidCommand
from engine.core.fairness import deck_key
from engine.core.rng import DeterministicRandom
from engine.hokm.deal import deal_round, draw_hakem
from engine.hokm.errors import HokmCode
from engine.hokm.rules import resolve_rules
from engine.hokm.state import Phase

from .notation import SEED, declare, first, kinds, players, rules, run, started, violation


def _is_ace(card: int) -> bool:
    return card % RANKS_PER_SUIT == Rank.ACE


def test_first_ace_deals_face_up_until_the_first_ace() -> None:
    # hakem_selection = first_ace (default, `001`): one card at a time to 0,1,2,3,0,…
    events, state = started()
    shown = first(events, "hakem_cards_shown").cards
    assert [c.seat for c in shown] == [i % 4 for i in range(len(shown))]
    assert [_is_ace(c.card) for c in shown] == [False] * (len(shown) - 1) + [True]
    assert first(events, "hakem_chosen").seat == shown[-1].seat == state.hakem


def test_first_ace_reshuffles_for_the_deal() -> None:
    # "The deck is then shuffled again for the deal": a different stream, label round/1/deal.
    events, _ = started()
    key = deck_key(SEED, [b""] * 4)
    selection = DeterministicRandom(key, "round/1/hakem/1").shuffle(list(range(52)))
    deal = DeterministicRandom(key, "round/1/deal").shuffle(list(range(52)))
    shown = [c.card for c in first(events, "hakem_cards_shown").cards]
    assert shown == selection[: len(shown)]
    assert list(first(events, "cards_dealt").hands[0].cards) == deal[:5]


def test_ace_in_five_highest_ace_by_suit_priority_wins() -> None:
    # hakem_selection = ace_in_five (`000`): five each; several aces: ♠ > ♥ > ♣ > ♦.
    options = resolve_rules(rules(4, hakem_selection=hokm_pb2.HAKEM_SELECTION_ACE_IN_FIVE))
    for i in range(30):
        key = hashlib.sha256(b"five/%d" % i).digest()
        draw = draw_hakem(options, key, 1)
        last = draw.attempts[-1]
        assert len(last) == 20 and [s for s, _ in last] == [k % 4 for k in range(20)]
        aces = sorted((card, seat) for seat, card in last if _is_ace(card))
        assert aces and draw.hakem == aces[0][1]  # lowest id = highest suit's ace
        for attempt in draw.attempts[:-1]:  # earlier attempts had no ace at all
            assert not any(_is_ace(card) for _, card in attempt)


def test_ace_in_five_redeals_when_nobody_has_an_ace() -> None:
    # "if nobody holds an ace, the cards are collected and dealt again (a new shuffle)".
    two = rules(2, hakem_selection=hokm_pb2.HAKEM_SELECTION_ACE_IN_FIVE)
    options = resolve_rules(two)
    seeds = [hashlib.sha256(b"redeal/%d" % i).digest() for i in range(40)]
    draws = [draw_hakem(options, deck_key(seed, [b"", b""]), 1) for seed in seeds]
    index = next(i for i, d in enumerate(draws) if len(d.attempts) > 1)
    events = hokm.start(two, seeds[index], players(2))
    shown = [e.hokm.hakem_cards_shown for e in events if e.hokm.HasField("hakem_cards_shown")]
    assert [s.attempt for s in shown] == list(range(1, len(draws[index].attempts) + 1))
    assert not any(_is_ace(c.card) for s in shown[:-1] for c in s.cards)
    assert first(events, "hakem_chosen").seat == draws[index].hakem


def test_random_hakem_selection_shows_no_cards() -> None:
    # hakem_selection = random: a uniform seat from the stream.
    events, state = started(hakem_selection=hokm_pb2.HAKEM_SELECTION_RANDOM)
    assert "hakem_cards_shown" not in kinds(events)
    key = deck_key(SEED, [b""] * 4)
    assert state.hakem == DeterministicRandom(key, "round/1/hakem").randbelow(4)


def test_hakem_sees_five_cards_before_declaring() -> None:
    # "The hakem receives 5 cards first and, seeing only those 5, declares" (`000`, `001`);
    # the other seats get nothing until trump is declared (as in `001`).
    events, state = started()
    assert kinds(events)[-1] == "cards_dealt"
    dealt = first(events, "cards_dealt").hands
    assert [(d.seat, d.count) for d in dealt] == [(state.hakem, 5)]
    assert [popcount(h) for h in state.hands] == [5 if s == state.hakem else 0 for s in range(4)]
    assert state.phase == Phase.DECLARE_TRUMP and state.turn == state.hakem


def test_rest_is_dealt_after_trump_in_documented_packet_order() -> None:
    # "The rest of the deck is then dealt in packets of 4": deal.py's order (5 to the
    # others, then packets of 4 from the hakem) makes every seat hold 13.
    _, state = started()
    hakem = state.hakem
    events, after = run(state, declare(hakem, "♣"))
    assert kinds(events) == ["trump_declared", "cards_dealt"]
    deck = DeterministicRandom(deck_key(SEED, [b""] * 4), "round/1/deal").shuffle(
        list(range(52))
    )
    order = [(hakem + k) % 4 for k in range(4)]
    expected: dict[int, list[int]] = {s: [] for s in range(4)}
    position = 5
    for seat in order[1:]:
        expected[seat] += deck[position : position + 5]
        position += 5
    for _ in range(2):
        for seat in order:
            expected[seat] += deck[position : position + 4]
            position += 4
    dealt = {d.seat: list(d.cards) for d in first(events, "cards_dealt").hands}
    assert dealt == expected
    assert [popcount(h) for h in after.hands] == [13] * 4
    assert after.phase == Phase.PLAY and after.turn == hakem


def test_every_card_is_dealt_exactly_once() -> None:
    for seats in (4, 3, 2):
        options = resolve_rules(rules(seats))
        deal = deal_round(options, b"key", 1, 1)
        everything = list(deal.first) + [c for cards in deal.rest for c in cards]
        everything += list(deal.leftover)
        assert sorted(everything) == list(range(52))
        hands = [len(deal.full_hand(s, 1)) for s in range(seats)]
        assert hands == [options.hand_size] * seats


def test_random_partners_permutes_seats_and_records_it() -> None:
    # random_partners (`000` draws cards for partners): seating from "match/seating".
    events, state = started(random_partners=True)
    started_event = first(events, "match_started")
    given = players(4)
    assert list(started_event.players) == given  # start's arguments kept as given
    seating = list(started_event.seating)
    key = deck_key(SEED, [b""] * 4)
    assert seating == DeterministicRandom(key, "match/seating").shuffle([0, 1, 2, 3])
    assert [p.player_id for p in state.players] == [given[i].player_id for i in seating]
    assert hokm.setup_of(events[0]).players == tuple(given)


def test_without_random_partners_seating_is_the_identity() -> None:
    events, state = started()
    assert list(first(events, "match_started").seating) == [0, 1, 2, 3]
    assert [p.player_id for p in state.players] == ["p0", "p1", "p2", "p3"]


def test_client_seeds_change_the_deal() -> None:
    # docs/architecture.md "Provably fair deals": the deck key mixes the client seeds.
    plain = hokm.start(rules(4), SEED, players(4))
    seeded = players(4)
    seeded[2].client_seed = b"mine"
    mixed = hokm.start(rules(4), SEED, seeded)
    assert first(plain, "cards_dealt") != first(mixed, "cards_dealt") or first(
        plain, "hakem_cards_shown") != first(mixed, "hakem_cards_shown")
    assert list(first(mixed, "match_started").fairness.client_seeds) == [b"", b"", b"mine", b""]


def test_only_the_hakem_declares_and_only_one_of_four_suits() -> None:
    # "The hakem ... declares one of the four suits as trump".
    _, state = started()
    other = (state.hakem + 1) % 4
    assert violation(state, declare(other, "♥")) == HokmCode.NOT_HAKEM
    assert [c.hokm.declare_trump.suit for c in hokm.legal(state, state.hakem)] == [1, 2, 3, 4]
    bad = log_pb2.Command(seat=state.hakem)
    bad.hokm.declare_trump.SetInParent()  # SUIT_UNSPECIFIED
    try:
        hokm.decide(state, bad)
    except InvalidCommand as error:
        assert error.code == HokmCode.INVALID_SUIT
    else:
        raise AssertionError("no suit accepted")
    events, after = run(state, declare(state.hakem, "♦"))
    assert first(events, "trump_declared") == hokm_pb2.TrumpDeclared(
        seat=state.hakem, suit=common_pb2.SUIT_DIAMONDS
    )
    assert after.trump == 3
