"""What each seat may see (docs/architecture.md "Bots", brief "view/redact"): views and
redaction."""

from __future__ import annotations

from dast.v1 import common_pb2, hokm_pb2
from engine import hokm
from engine.core.cards import card_name, iter_cards, parse_card
from engine.hokm.views import event_cards, hidden_mask, view_cards

from .notation import declare, first, kinds, play, position, run, set_aside, started


def test_redact_strips_the_server_seed_for_everyone() -> None:
    # docs/architecture.md "Provably fair deals": the seed stays secret until the final event.
    events, _ = started()
    for seat in (0, 1, 2, 3, None):
        redacted = hokm.redact(events[0], seat)
        assert redacted.hokm.match_started.fairness.server_seed == b""
        assert redacted.hokm.match_started.fairness.server_seed_commitment
    assert events[0].hokm.match_started.fairness.server_seed  # the original is untouched


def test_redact_hides_other_seats_dealt_cards_but_keeps_counts() -> None:
    _, state = started()
    events, _ = run(state, declare(state.hakem, "♠"))
    dealt = next(e for e in events if e.hokm.HasField("cards_dealt"))
    for seat in (0, 1, 2, 3, None):
        shares = hokm.redact(dealt, seat).hokm.cards_dealt.hands
        for share in shares:
            assert share.count == (8 if share.seat == state.hakem else 13)
            assert bool(share.cards) == (share.seat == seat)


def test_three_player_kitty_and_set_aside_hidden_from_defenders() -> None:
    _, state = started(3)
    events, after = run(state, declare(state.hakem, "♠"))
    kitty = events[-1]
    hakem = state.hakem
    assert len(hokm.redact(kitty, hakem).hokm.kitty_taken.cards) == 4
    for seat in (0, 1, 2, None):
        if seat != hakem:
            redacted = hokm.redact(kitty, seat).hokm.kitty_taken
            assert not redacted.cards and redacted.count == 4
    chosen = " ".join(card_name(c) for c in list(iter_cards(after.hands[hakem]))[:4])
    aside_events, done = run(after, set_aside(hakem, chosen))
    assert len(hokm.redact(aside_events[0], hakem).hokm.cards_set_aside.cards) == 4
    assert not hokm.redact(aside_events[0], (hakem + 1) % 3).hokm.cards_set_aside.cards
    assert list(hokm.view(done, hakem).set_aside) == list(iter_cards(done.set_aside))
    assert not hokm.view(done, (hakem + 1) % 3).set_aside


def test_two_player_piles_show_only_their_tops() -> None:
    events, _ = started(2)
    piles = first(events, "piles_laid")
    for seat in (0, 1, None):
        redacted = hokm.redact(events[kinds(events).index("piles_laid")], seat).hokm.piles_laid
        assert not redacted.pile_a and not redacted.pile_b
        assert (redacted.top_a, redacted.top_b) == (piles.top_a, piles.top_b)


def test_view_shows_own_hand_public_play_and_legal_commands() -> None:
    state = position(["2♥ 3♣", "3♥ A♣", "4♥ 5♣", "5♥ 6♣"], trick="10♥", leader=3, turn=0,
                     tricks_won=(1, 0, 0, 0), scores=(2, 1, 2, 1))
    seen = hokm.view(state, 0)
    assert list(seen.hand) == list(iter_cards(state.hands[0]))
    assert list(seen.hand_counts) == [2, 2, 2, 2]
    assert [(p.seat, p.card) for p in seen.current_trick.plays] == [(3, state.trick[0])]
    assert seen.phase == hokm_pb2.HOKM_PHASE_PLAY and seen.HasField("turn") and seen.turn == 0
    assert seen.trump == common_pb2.SUIT_SPADES and seen.HasField("hakem") and seen.hakem == 0
    assert [c.play_card.card for c in seen.legal] == [parse_card("2♥")]  # must follow ♥
    assert list(seen.tricks_won) == [1, 0, 0, 0] and list(seen.scores) == [2, 1, 2, 1]
    assert not hokm.view(state, 1).legal  # not to act: nothing legal


def test_spectator_view_has_no_hand_and_no_commands() -> None:
    state = position(["2♥ 3♣", "3♥ A♣", "4♥ 5♣", "5♥ 6♣"])
    seen = hokm.view(state, None)
    assert seen.is_spectator and not seen.hand and not seen.legal
    assert view_cards(seen) & hidden_mask(state, None) == 0


def test_view_lists_finished_tricks_of_the_round() -> None:
    state = position(["A♠ 2♦", "2♠ 3♦", "3♠ 4♦", "K♠ 5♦"])
    _, after = run(state, play(0, "A♠"), play(1, "2♠"), play(2, "3♠"), play(3, "K♠"))
    trick = hokm.view(after, 1).tricks[0]
    assert trick.leader == 0 and trick.HasField("winner") and trick.winner == 0
    assert [p.seat for p in trick.plays] == [0, 1, 2, 3]


def test_set_aside_view_offers_one_choose_four_command() -> None:
    # hokm.proto HokmView.legal: one SetAsideCards listing the hand instead of 4845.
    _, state = started(3)
    _, after = run(state, declare(state.hakem, "♠"))
    seen = hokm.view(after, after.hakem)
    assert len(seen.legal) == 1
    assert list(seen.legal[0].set_aside_cards.cards) == list(seen.hand)


def test_views_and_redacted_events_never_show_hidden_cards() -> None:
    # Each event is checked against the state right after it: the cards shown to choose
    # the hakem are public then, even if they are dealt into a hand later.
    for seats in (4, 3, 2):
        events, _ = started(seats)
        state = None
        for event in events:
            state = hokm.evolve(state, event)
            for seat in (*range(seats), None):
                assert event_cards(hokm.redact(event, seat)) & hidden_mask(state, seat) == 0
                assert view_cards(hokm.view(state, seat)) & hidden_mask(state, seat) == 0
