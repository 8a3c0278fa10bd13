"""What a table change does: pure functions over ``dast.v1.Table`` (no I/O, no clock).

Each function takes the table as stored and returns the changed copy plus the updates to
record (:class:`Change`); it raises :class:`LobbyError` when the change is not allowed. The
service loads, calls one of these, and saves at the loaded version (a concurrent change makes
the save fail and the call is retried on the fresh table).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import grpc
from google.protobuf.message import Message

from dast.v1 import lobby_pb2
from engine.core.errors import RuleViolation
from engine.core.payload import put, take
from engine.core.protocol import Game
from engine.registry import DEFAULT_GAME_TYPE, GAMES
from services.lobby.reasons import LobbyReason
from services.platform.errors import ServiceError
from services.platform.validation import quoted_input

TARGET_SCORES: Final = frozenset({0, 3, 5, 7, 10})
"""docs/rules/hokm.md "What the app adds": 3 / 5 / 7 / 10 (0: the rules' default)."""
TURN_SECONDS: Final = frozenset({0, 15, 30, 45, 60})
"""docs/rules/hokm.md "What the app adds": 15 / 30 / 45 / 60 (0: untimed)."""
QUICK_MATCH_TURN_SECONDS: Final = 30
"""A quick match's seconds per turn (strangers wait for nobody for long)."""
BOT_LEVEL_NAMES: Final[dict[int, str]] = {
    lobby_pb2.BOT_LEVEL_UNSPECIFIED: "basic",
    lobby_pb2.BOT_LEVEL_RANDOM: "random",
    lobby_pb2.BOT_LEVEL_GREEDY: "greedy",
    lobby_pb2.BOT_LEVEL_BASIC: "basic",
    lobby_pb2.BOT_LEVEL_EXPERT: "expert",
}
Kind = lobby_pb2.TableUpdateKind


class LobbyError(ServiceError):
    """A table change the lobby refuses (a gRPC status with a stable reason)."""


def _refuse(code: grpc.StatusCode, reason: LobbyReason, message: str) -> LobbyError:
    return LobbyError(code, reason, message)


def _precondition(reason: LobbyReason, message: str) -> LobbyError:
    return _refuse(grpc.StatusCode.FAILED_PRECONDITION, reason, message)


@dataclass(frozen=True)
class Update:
    """One recorded change (becomes a ``TableUpdate``)."""

    kind: lobby_pb2.TableUpdateKind.ValueType
    seat: int = 0
    player_id: str = ""


@dataclass
class Change:
    """A changed table and what happened to it."""

    table: lobby_pb2.Table
    updates: list[Update] = field(default_factory=list)


def bot_level_name(level: int) -> str:
    """The engine BOTS name of a ``BotLevel`` (unset: ``basic``)."""
    return BOT_LEVEL_NAMES.get(level, "basic")


def bot_player_id(level: int, seat: int) -> str:
    """The player id of a bot seat, ``bot:<level>:<seat>`` (the bot service parses it)."""
    return f"bot:{bot_level_name(level)}:{seat}"


def game_of(game_type: int) -> Game:
    """The game a table of ``game_type`` plays.

    :raises LobbyError: INVALID_ARGUMENT for a game the engine does not serve.
    """
    game = GAMES.get(game_type)
    if game is None:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.UNKNOWN_GAME_TYPE,
                      f"no game of type {game_type}")
    return game


def table_rules_message(settings: lobby_pb2.TableSettings) -> Message:
    """The rules message the table's settings carry (the game's defaults when unset).

    :raises LobbyError: INVALID_ARGUMENT for an unknown game or another game's rules.
    """
    game = game_of(settings.game_type)
    try:
        return take(settings, "rules", game.SCHEMA, game.SCHEMA.rules)
    except RuleViolation as wrong:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_SETTINGS,
                      f"rules for another game at a {game.NAME} table: {wrong.message}"
                      ) from wrong


def seat_count(settings: lobby_pb2.TableSettings) -> int:
    """The number of seats the settings ask for (the game module decides).

    :raises LobbyError: INVALID_ARGUMENT for an unknown game or a bad player count.
    """
    game = game_of(settings.game_type)
    try:
        return game.seat_count(table_rules_message(settings))
    except RuleViolation as refused:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_SETTINGS,
                      refused.message) from refused


def check_settings(settings: lobby_pb2.TableSettings) -> None:
    """Refuse settings outside the table options of docs/rules/hokm.md "What the app adds" (the
    same for every game) or rules the game refuses.

    :raises LobbyError: INVALID_ARGUMENT naming the bad setting.
    """
    seat_count(settings)
    if settings.target_score not in TARGET_SCORES:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_SETTINGS,
                      f"target_score must be one of 3, 5, 7, 10, not {settings.target_score}")
    if settings.turn_seconds not in TURN_SECONDS:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_SETTINGS,
                      f"turn_seconds must be one of 15, 30, 45, 60 (0 untimed), "
                      f"not {settings.turn_seconds}")


def quick_match_settings(game_type: int, players: int) -> lobby_pb2.TableSettings:
    """The settings of a quick-match table of ``game_type`` (unset: the default game) for
    ``players`` (0: the game's default count), timed at 30 seconds a turn.

    :raises LobbyError: INVALID_ARGUMENT for an unknown game or a count it does not have.
    """
    settings = lobby_pb2.TableSettings(game_type=game_type or DEFAULT_GAME_TYPE,  # type: ignore[arg-type]
                                       turn_seconds=QUICK_MATCH_TURN_SECONDS)
    game = game_of(settings.game_type)
    try:
        put(settings, game.SCHEMA, game.rules_for_players(players))
    except RuleViolation as refused:
        raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_SETTINGS,
                      refused.message) from refused
    return settings


def game_rules(settings: lobby_pb2.TableSettings) -> Message:
    """The rules of the match: the table's rules with its score and timer applied (by the
    game module, which knows what they mean for it).

    :raises LobbyError: INVALID_ARGUMENT for an unknown game or another game's rules.
    """
    return game_of(settings.game_type).table_rules(
        table_rules_message(settings), target_score=settings.target_score,
        turn_seconds=settings.turn_seconds,
    )


def new_table(
    table_id: str, settings: lobby_pb2.TableSettings, host_id: str, host_name: str,
    invite_code: str,
) -> Change:
    """A waiting table hosted by ``host_id`` at seat 0.

    :raises LobbyError: for settings outside the allowed values.
    """
    check_settings(settings)
    table = lobby_pb2.Table(
        table_id=table_id, settings=settings, status=lobby_pb2.TABLE_STATUS_WAITING,
        host_id=host_id, invite_code=invite_code if settings.private else "",
    )
    for seat in range(seat_count(settings)):
        table.seats.add(seat=seat)
    table.seats[0].player_id = host_id
    table.seats[0].display_name = host_name
    return Change(table, [Update(Kind.TABLE_UPDATE_KIND_CREATED, 0, host_id)])


def seat_of(table: lobby_pb2.Table, player_id: str) -> int | None:
    """The seat ``player_id`` holds at the table (also while a bot stands in for them)."""
    for seat in table.seats:
        if seat.player_id == player_id and not seat.is_bot:
            return seat.seat
    return None


def _copy(table: lobby_pb2.Table) -> lobby_pb2.Table:
    copy = lobby_pb2.Table()
    copy.CopyFrom(table)
    return copy


def _require_waiting(table: lobby_pb2.Table) -> None:
    if table.status != lobby_pb2.TABLE_STATUS_WAITING:
        raise _precondition(LobbyReason.TABLE_NOT_WAITING,
                            f"table {quoted_input(table.table_id)} is not waiting")


def _empty_seat(table: lobby_pb2.Table, seat: int | None) -> int:
    if seat is not None:
        if seat >= len(table.seats):
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, LobbyReason.INVALID_REQUEST,
                          f"table {quoted_input(table.table_id)} has no seat {seat}")
        if table.seats[seat].player_id:
            raise _precondition(LobbyReason.SEAT_TAKEN,
                                f"seat {seat} of {quoted_input(table.table_id)} is taken")
        return seat
    for candidate in table.seats:
        if not candidate.player_id:
            return candidate.seat
    raise _precondition(LobbyReason.TABLE_FULL, f"table {quoted_input(table.table_id)} is full")


def join(table: lobby_pb2.Table, player_id: str, name: str, seat: int | None) -> Change:
    """Sit ``player_id`` at ``seat`` (or the first empty seat) of a waiting table; a player
    who holds a seat already gets it back if a bot stands in for them.

    :raises LobbyError: the table is not waiting, full, or the seat is taken.
    """
    if seat_of(table, player_id) is not None:
        return give_back(table, player_id)
    _require_waiting(table)
    chosen = _empty_seat(table, seat)
    changed = _copy(table)
    changed.seats[chosen].player_id = player_id
    changed.seats[chosen].display_name = name
    return Change(changed, [Update(Kind.TABLE_UPDATE_KIND_PLAYER_JOINED, chosen, player_id)])


def choose_seat(table: lobby_pb2.Table, player_id: str, seat: int) -> Change:
    """Move ``player_id`` to the empty ``seat`` before the match.

    :raises LobbyError: not seated, not waiting, or the seat is taken.
    """
    own = seat_of(table, player_id)
    if own is None:
        raise _precondition(LobbyReason.NOT_SEATED,
                            f"{quoted_input(player_id)} is not at table "
                            f"{quoted_input(table.table_id)}")
    if own == seat:
        return Change(table)
    _require_waiting(table)
    target = _empty_seat(table, seat)
    changed = _copy(table)
    changed.seats[target].CopyFrom(changed.seats[own])
    changed.seats[target].seat = target
    changed.seats[own].Clear()
    changed.seats[own].seat = own
    return Change(changed, [Update(Kind.TABLE_UPDATE_KIND_SEAT_CHOSEN, target, player_id)])


def add_bot(table: lobby_pb2.Table, player_id: str, seat: int, level: int) -> Change:
    """The host puts a bot on an empty seat.

    :raises LobbyError: not the host, not waiting, or the seat is taken.
    """
    _require_host(table, player_id)
    _require_waiting(table)
    target = _empty_seat(table, seat)
    changed = _copy(table)
    _seat_bot(changed.seats[target], level)
    return Change(changed, [Update(Kind.TABLE_UPDATE_KIND_BOT_ADDED, target)])


def set_chat(table: lobby_pb2.Table, player_id: str, chat: lobby_pb2.ChatMode.ValueType
             ) -> Change:
    """The host sets what the table's talk allows (at any time; the same mode again
    changes nothing).

    :raises LobbyError: not the host.
    """
    _require_host(table, player_id)
    if table.settings.chat == chat:
        return Change(table)
    changed = _copy(table)
    changed.settings.chat = chat
    return Change(changed, [Update(Kind.TABLE_UPDATE_KIND_CHAT_CHANGED, 0, player_id)])


def _seat_bot(seat: lobby_pb2.Seat, level: int) -> None:
    seat.player_id = bot_player_id(level, seat.seat)
    seat.display_name = f"Bot {seat.seat + 1} ({bot_level_name(level)})"
    seat.is_bot = True
    seat.bot_level = level or lobby_pb2.BOT_LEVEL_BASIC  # type: ignore[assignment]


def _require_host(table: lobby_pb2.Table, player_id: str) -> None:
    if table.host_id != player_id:
        raise _refuse(grpc.StatusCode.PERMISSION_DENIED, LobbyReason.NOT_HOST,
                      f"only the host of table {quoted_input(table.table_id)} may do this")


def leave(table: lobby_pb2.Table, player_id: str) -> Change:
    """``player_id`` stands up (see ``LobbyService.LeaveTable``).

    :raises LobbyError: if the player is not seated.
    """
    own = seat_of(table, player_id)
    if own is None:
        raise _precondition(LobbyReason.NOT_SEATED,
                            f"{quoted_input(player_id)} is not at table "
                            f"{quoted_input(table.table_id)}")
    if table.seats[own].left:
        return Change(table)
    changed = _copy(table)
    updates = [Update(Kind.TABLE_UPDATE_KIND_PLAYER_LEFT, own, player_id)]
    if table.status == lobby_pb2.TABLE_STATUS_PLAYING:
        # docs/rules/hokm.md "What the app adds": a bot plays so the partner is not left alone;
        # the player may come back (JoinTable, or subscribing to the game again).
        changed.seats[own].left = True
        if not changed.seats[own].taken_over_by_bot:
            changed.seats[own].taken_over_by_bot = True
            updates.append(Update(Kind.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT, own, player_id))
        return Change(changed, updates)
    changed.seats[own].Clear()
    changed.seats[own].seat = own
    if table.host_id == player_id:
        humans = [s for s in changed.seats if s.player_id and not s.is_bot and not s.left]
        if humans:
            changed.host_id = humans[0].player_id
            updates.append(Update(Kind.TABLE_UPDATE_KIND_HOST_CHANGED, humans[0].seat,
                                  humans[0].player_id))
        elif table.status == lobby_pb2.TABLE_STATUS_WAITING:
            changed.status = lobby_pb2.TABLE_STATUS_CLOSED
            updates.append(Update(Kind.TABLE_UPDATE_KIND_CLOSED))
    return Change(changed, updates)


def start(table: lobby_pb2.Table, player_id: str, game_id: str) -> Change:
    """The host starts: empty seats get bots of the table's level; the table plays ``game_id``.

    :raises LobbyError: not the host, or the table is not waiting.
    """
    _require_host(table, player_id)
    _require_waiting(table)
    changed = _copy(table)
    updates = []
    for seat in changed.seats:
        if not seat.player_id:
            _seat_bot(seat, table.settings.bot_level)
            updates.append(Update(Kind.TABLE_UPDATE_KIND_BOT_ADDED, seat.seat))
    changed.status = lobby_pb2.TABLE_STATUS_PLAYING
    changed.game_id = game_id
    changed.matches += 1
    updates.append(Update(Kind.TABLE_UPDATE_KIND_GAME_STARTED))
    return Change(changed, updates)


def rematch(table: lobby_pb2.Table, player_id: str, game_id: str) -> Change:
    """A new match with the same seats, for the players still there.

    A seat whose player left gets a bot, and so does a seat a bot held when the match ended:
    its player was away (the stats counted the match as abandoned), and carrying them into a
    match they never asked for would have a bot play it in their name and rate them on it. A
    player back in time takes the seat again with ``JoinTable`` first (:func:`give_back`).
    When the host is not among those who stay, the first of them hosts the table. The new
    seats depend on the table alone, never on who asked, so that two players asking at once
    plan the same match.

    :raises LobbyError: the caller is not seated (or away), or the match is not over.
    """
    own = seat_of(table, player_id)
    if own is None or table.seats[own].left:
        raise _precondition(LobbyReason.NOT_SEATED,
                            f"{quoted_input(player_id)} is not at table "
                            f"{quoted_input(table.table_id)}")
    if table.seats[own].taken_over_by_bot:
        raise _precondition(LobbyReason.NOT_SEATED,
                            f"a bot held the seat of {quoted_input(player_id)} at table "
                            f"{quoted_input(table.table_id)} when the match ended; join the "
                            "table again to take it back")
    if table.status != lobby_pb2.TABLE_STATUS_FINISHED:
        raise _precondition(LobbyReason.GAME_NOT_OVER,
                            f"table {quoted_input(table.table_id)} has no finished match")
    changed = _copy(table)
    updates = []
    for seat in changed.seats:
        away = seat.taken_over_by_bot and not seat.left
        if away:
            updates.append(Update(Kind.TABLE_UPDATE_KIND_PLAYER_LEFT, seat.seat, seat.player_id))
        if away or seat.left or not seat.player_id:
            index = seat.seat
            seat.Clear()
            seat.seat = index
            _seat_bot(seat, table.settings.bot_level)
            updates.append(Update(Kind.TABLE_UPDATE_KIND_BOT_ADDED, index))
    if seat_of(changed, table.host_id) is None:
        host = next(seat for seat in changed.seats if not seat.is_bot)  # the caller, at least
        changed.host_id = host.player_id
        updates.append(Update(Kind.TABLE_UPDATE_KIND_HOST_CHANGED, host.seat, host.player_id))
    changed.status = lobby_pb2.TABLE_STATUS_PLAYING
    changed.game_id = game_id
    changed.matches += 1
    updates.append(Update(Kind.TABLE_UPDATE_KIND_GAME_STARTED))
    return Change(changed, updates)


def finish(table: lobby_pb2.Table, game_id: str) -> Change:
    """The match ``game_id`` ended (no change if the table moved on already)."""
    if table.status != lobby_pb2.TABLE_STATUS_PLAYING or table.game_id != game_id:
        return Change(table)
    changed = _copy(table)
    changed.status = lobby_pb2.TABLE_STATUS_FINISHED
    return Change(changed, [Update(Kind.TABLE_UPDATE_KIND_GAME_FINISHED)])


def take_over(table: lobby_pb2.Table, seats: Iterable[int]) -> Change:
    """Bots take ``seats`` of a playing table (their players' streams are gone)."""
    changed = _copy(table)
    updates = []
    for index in seats:
        seat = changed.seats[index]
        if table.status == lobby_pb2.TABLE_STATUS_PLAYING and not seat.is_bot and (
            not seat.taken_over_by_bot
        ):
            seat.taken_over_by_bot = True
            updates.append(Update(Kind.TABLE_UPDATE_KIND_SEAT_TAKEN_OVER_BY_BOT, index,
                                  seat.player_id))
    return Change(changed if updates else table, updates)


def give_back(table: lobby_pb2.Table, player_id: str) -> Change:
    """``player_id`` is back (subscribed again, or joined again after leaving): the bot
    hands their seat back (docs/rules/hokm.md "What the app adds"). After the match it marks
    them present for the rematch (:func:`rematch`)."""
    changed = _copy(table)
    updates = []
    if table.status not in (lobby_pb2.TABLE_STATUS_PLAYING, lobby_pb2.TABLE_STATUS_FINISHED):
        return Change(table)
    for seat in changed.seats:
        if seat.player_id == player_id and not seat.is_bot and seat.taken_over_by_bot:
            seat.taken_over_by_bot = False
            seat.left = False
            updates.append(Update(Kind.TABLE_UPDATE_KIND_SEAT_RETURNED, seat.seat, player_id))
    return Change(changed if updates else table, updates)


def for_viewer(table: lobby_pb2.Table, player_id: str) -> lobby_pb2.Table:
    """The table as ``player_id`` may see it: the invite code only for seated players."""
    if not table.invite_code or seat_of(table, player_id) is not None:
        return table
    shown = _copy(table)
    shown.invite_code = ""
    return shown
