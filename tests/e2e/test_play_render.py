"""The screens of ``dast play`` (services/cli/play/render.py): what a player reads."""

from __future__ import annotations

from dast.v1 import common_pb2, hand_pb2, hokm_pb2, lobby_pb2, log_pb2
from services.cli.play import render


def test_hokm_screen_shows_trump_first_the_trick_the_timer_and_who_is_a_bot() -> None:
    players = [common_pb2.Player(player_id=f"p{s}", display_name=f"P{s}", is_bot=s == 1)
               for s in range(4)]
    table = lobby_pb2.Table(seats=[lobby_pb2.Seat(seat=s) for s in range(4)])
    table.seats[2].taken_over_by_bot = True
    view = hokm_pb2.HokmView(
        seat=0, players=players, rules=hokm_pb2.HokmRules(target_score=7), round=2,
        hakem=3, trump=common_pb2.SUIT_HEARTS, turn=0,
        deadline_ms=20_500, hand=[0, 12, 13, 25], hand_counts=[4, 4, 4, 4],
        current_trick=hokm_pb2.Trick(plays=[hokm_pb2.SeatCard(seat=3, card=24)]),
        scores=[1, 0, 1, 0], tricks_won=[0, 1, 0, 2],
        legal=[hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=c)) for c in (13, 25)],
    )
    text = "\n".join(render.hokm_screen(view, table, now_ms=10_000))
    assert "Your hand: A♥ 2♥ A♠ 2♠" in text  # trump (♥) first, high cards first
    assert "Trump: ♥" in text and "Hakem: seat 3" in text
    assert "Trick: 3 K♥" in text
    assert "1 P1 [bot]" in text and "2 P2 [bot playing]" in text and "0 P0 (you)" in text
    assert "Turn: seat 0 (you) · 11s left" in text
    assert "Legal: 1) A♥  2) 2♥" in text  # in the order of the hand


def test_a_deleted_player_is_shown_as_one() -> None:
    players = [common_pb2.Player(player_id=f"p{s}", display_name=f"P{s}") for s in range(4)]
    players[3].display_name, players[3].deleted = "", True
    view = hokm_pb2.HokmView(seat=0, players=players, hand_counts=[0, 0, 0, 0])
    text = "\n".join(render.hokm_screen(view, None, now_ms=0))
    assert "3 deleted player" in text and "p3" not in text


def test_hand_screen_lists_table_melds_and_every_kind_of_move() -> None:
    run = hand_pb2.TableMeld(id=0, owner=1, kind=hand_pb2.HAND_MELD_KIND_RUN,
                             cards=[1, 2, 104], faces=[1, 2, 3])
    legal = [
        hand_pb2.HandCommand(lay_melds=hand_pb2.LayMelds(melds=[
            hand_pb2.MeldSpec(cards=[20, 33, 46])])),
        hand_pb2.HandCommand(lay_off=hand_pb2.LayOff(meld_id=0, card=4)),
        hand_pb2.HandCommand(retrieve_joker=hand_pb2.RetrieveJoker(meld_id=0, cards=[3])),
        hand_pb2.HandCommand(discard=hand_pb2.Discard(card=105)),
    ]
    view = hand_pb2.HandView(
        seat=0, rules=hand_pb2.HandRules(rounds=5), round=1, players=[
            common_pb2.Player(display_name=n) for n in ("A", "B")],
        hand=[105, 3, 4, 20, 33, 46], hand_counts=[6, 9], melds=[run], discard_pile=[7],
        turn=0, opened=[True, True], totals=[0, 0], legal=legal,
    )
    text = "\n".join(render.hand_screen(view, None, now_ms=0))
    assert "Meld 0 (seat 1): 3♠ 4♠ JK1" in text
    assert "Discard: 9♠" in text
    assert "1) lay 9♥ 9♣ 9♦" in text
    assert "2) lay off 6♠ on meld 0" in text
    assert "3) retrieve joker from meld 0 with 5♠" in text
    assert "4) discard JK2" in text


def test_render_docstring_examples() -> None:
    import doctest

    assert doctest.testmod(render).failed == 0


def test_seat_control_events_say_who_plays_the_seat() -> None:
    taken = log_pb2.Event(seq=9, seat_control=log_pb2.SeatControl(
        seat=2, bot=True, bot_level="basic", reason=log_pb2.SEAT_CONTROL_REASON_DISCONNECTED))
    back = log_pb2.Event(seq=12, seat_control=log_pb2.SeatControl(
        seat=2, reason=log_pb2.SEAT_CONTROL_REASON_RECONNECTED))
    assert render.event_line(taken) == "a basic bot plays seat 2 (disconnected)"
    assert render.event_line(back) == "seat 2 is its player's again (reconnected)"
