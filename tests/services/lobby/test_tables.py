"""Table changes (services/lobby/tables.py), pure: seats, start, leaving and coming back.

docs/rules/hokm.md "What the app adds": empty seats get bots when the host starts; a player who
leaves mid-game is replaced by a bot; a player who comes back takes the seat back.
"""

from __future__ import annotations

import pytest

from dast.v1 import common_pb2, hokm_pb2, lobby_pb2
from services.lobby import tables
from services.lobby.tables import LobbyError

Kind = lobby_pb2.TableUpdateKind


def _table(variant: int = hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS) -> lobby_pb2.Table:
    settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=5)
    settings.hokm.variant = variant  # type: ignore[assignment]
    return tables.new_table("t", settings, "host", "Host", "code").table


def _playing() -> lobby_pb2.Table:
    joined = tables.join(_table(), "p1", "P1", 2).table
    return tables.start(joined, "host", "t-1").table


def test_a_table_has_the_variants_number_of_seats() -> None:
    # docs/rules/hokm.md "Three players" / "Two players".
    assert len(_table(hokm_pb2.HOKM_VARIANT_THREE_PLAYERS).seats) == 3
    assert len(_table(hokm_pb2.HOKM_VARIANT_TWO_PLAYERS).seats) == 2


def test_start_fills_empty_seats_with_bots_of_the_tables_level() -> None:
    table = _playing()
    assert [s.is_bot for s in table.seats] == [False, True, False, True]
    assert table.seats[1].player_id == "bot:basic:1"
    assert table.status == lobby_pb2.TABLE_STATUS_PLAYING and table.game_id == "t-1"
    with pytest.raises(LobbyError):
        tables.start(table, "host", "t-2")  # not waiting any more


def test_a_table_of_expert_bots_seats_the_expert_policy() -> None:
    table = _table()
    table.settings.bot_level = lobby_pb2.BOT_LEVEL_EXPERT
    started = tables.start(tables.join(table, "p1", "P1", 2).table, "host", "t-1").table
    assert [s.player_id for s in started.seats if s.is_bot] == ["bot:expert:1", "bot:expert:3"]
    assert all(s.bot_level == lobby_pb2.BOT_LEVEL_EXPERT for s in started.seats if s.is_bot)


def test_a_player_who_leaves_mid_game_is_replaced_and_gets_the_seat_back_on_return() -> None:
    left = tables.leave(_playing(), "p1")
    assert [u.kind for u in left.updates] == [
        Kind.TABLE_UPDATE_KIND_PLAYER_LEFT, Kind.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT]
    assert left.table.seats[2].taken_over_by_bot and left.table.seats[2].left
    assert tables.leave(left.table, "p1").updates == []  # leaving twice changes nothing
    back = tables.join(left.table, "p1", "P1", None)
    assert [u.kind for u in back.updates] == [Kind.TABLE_UPDATE_KIND_SEAT_RETURNED]
    assert not back.table.seats[2].taken_over_by_bot and not back.table.seats[2].left


def test_presence_takeover_and_return_are_idempotent() -> None:
    taken = tables.take_over(_playing(), [2])
    assert [u.seat for u in taken.updates] == [2]
    assert tables.take_over(taken.table, [2]).updates == []
    assert tables.take_over(taken.table, [1]).updates == []  # a bot seat is never taken over
    returned = tables.give_back(taken.table, "p1")
    assert [u.kind for u in returned.updates] == [Kind.TABLE_UPDATE_KIND_SEAT_RETURNED]
    assert tables.give_back(returned.table, "p1").updates == []


def test_the_host_leaving_before_the_match_hands_the_table_over_or_closes_it() -> None:
    joined = tables.join(_table(), "p1", "P1", None).table
    handed = tables.leave(joined, "host").table
    assert handed.host_id == "p1" and handed.status == lobby_pb2.TABLE_STATUS_WAITING
    closed = tables.leave(handed, "p1").table
    assert closed.status == lobby_pb2.TABLE_STATUS_CLOSED


def test_rematch_replaces_players_who_left_with_bots() -> None:
    left = tables.leave(_playing(), "p1").table
    finished = tables.finish(left, "t-1").table
    assert finished.status == lobby_pb2.TABLE_STATUS_FINISHED
    with pytest.raises(LobbyError):
        tables.rematch(finished, "p1", "t-2")  # p1 left: no longer seated for a rematch
    again = tables.rematch(finished, "host", "t-2").table
    assert again.seats[2].is_bot and again.game_id == "t-2" and again.matches == 2
    assert not any(s.taken_over_by_bot for s in again.seats)


def _finished_with_seat_taken_over(seat: int) -> lobby_pb2.Table:
    taken = tables.take_over(_playing(), [seat]).table
    return tables.finish(taken, "t-1").table


def test_rematch_gives_a_bot_the_seat_of_a_player_away_when_the_match_ended() -> None:
    # p1's stream was gone at the end: the next match must not be played in p1's name.
    finished = _finished_with_seat_taken_over(2)
    change = tables.rematch(finished, "host", "t-2")
    again = change.table
    assert again.seats[2].is_bot and again.seats[2].player_id == "bot:basic:2"
    assert tables.seat_of(again, "p1") is None
    assert [(u.kind, u.seat) for u in change.updates] == [
        (Kind.TABLE_UPDATE_KIND_PLAYER_LEFT, 2), (Kind.TABLE_UPDATE_KIND_BOT_ADDED, 2),
        (Kind.TABLE_UPDATE_KIND_GAME_STARTED, 0)]
    assert change.updates[0].player_id == "p1"
    assert again.host_id == "host" and not any(s.taken_over_by_bot for s in again.seats)


def test_a_player_away_at_the_end_asks_for_the_rematch_only_after_joining_again() -> None:
    finished = _finished_with_seat_taken_over(2)
    with pytest.raises(LobbyError, match="join the table again") as refused:
        tables.rematch(finished, "p1", "t-2")
    assert refused.value.code.name == "FAILED_PRECONDITION"
    back = tables.join(finished, "p1", "P1", None)
    assert [(u.kind, u.seat) for u in back.updates] == [(Kind.TABLE_UPDATE_KIND_SEAT_RETURNED, 2)]
    again = tables.rematch(back.table, "p1", "t-2").table
    assert again.seats[2].player_id == "p1" and not again.seats[2].is_bot


def test_the_first_player_who_stays_hosts_the_rematch_when_the_host_was_away() -> None:
    change = tables.rematch(_finished_with_seat_taken_over(0), "p1", "t-2")
    assert change.table.host_id == "p1" and change.table.seats[0].is_bot
    assert (Kind.TABLE_UPDATE_KIND_HOST_CHANGED, 2) in [(u.kind, u.seat) for u in change.updates]


def test_a_rematch_plans_the_same_seats_whoever_asks() -> None:
    # Two players asking at once create one game from one plan (the lobby names the game
    # after the table's version): the plan must not depend on the caller.
    joined = tables.join(tables.join(_table(), "p1", "P1", 2).table, "p2", "P2", 1).table
    taken = tables.take_over(tables.start(joined, "host", "t-1").table, [1])
    finished = tables.finish(taken.table, "t-1").table
    by_host = tables.rematch(finished, "host", "t-2").table
    by_p1 = tables.rematch(finished, "p1", "t-2").table
    assert by_host == by_p1 and by_host.seats[1].is_bot


def test_only_the_host_sets_the_tables_talk_and_each_change_is_an_update() -> None:
    table = _table()
    change = tables.set_chat(table, "host", lobby_pb2.CHAT_MODE_PHRASES)
    assert change.table.settings.chat == lobby_pb2.CHAT_MODE_PHRASES
    assert [update.kind for update in change.updates] == [
        lobby_pb2.TABLE_UPDATE_KIND_CHAT_CHANGED]
    assert table.settings.chat == lobby_pb2.CHAT_MODE_UNSPECIFIED  # the loaded one unchanged
    assert tables.set_chat(change.table, "host", lobby_pb2.CHAT_MODE_PHRASES).updates == []
    with pytest.raises(LobbyError) as refused:
        tables.set_chat(table, "guest", lobby_pb2.CHAT_MODE_OFF)
    assert refused.value.reason == "not_host"
