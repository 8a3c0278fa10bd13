"""From the wire to the engine and back: a tournament's settings, its matches' setup.

``dast.v1.TournamentSettings`` becomes the engine's
:class:`~engine.tournament.TournamentOptions` (the variant described by the game's own spec
function in :mod:`engine.tournament.variants`, ``<game name>_spec``, found by the game's
registry name so that no service names a game; ``partnerships`` asks it for the game's team
form, which the spec function alone decides whether the game offers), and a table of a round
becomes the ``CreateGameRequest`` of its match: the rules the engine gives for the recorded
spec (:func:`engine.tournament.variants.table_rules`: the game's rules for the seats in the
spec's team form) with the tournament's target score and turn time, every seat's player in
seat order, bots (ids ``bot:<level>:<game id>-<seat>``) in seats no entrant holds.
"""

from __future__ import annotations

import inspect
import re
from typing import Final

import grpc

from dast.v1 import common_pb2, game_pb2, tournament_pb2
from engine.core.payload import put
from engine.core.protocol import BOT_LEVELS, Game
from engine.registry import GAMES
from engine.tournament import (
    Entry,
    Format,
    Table,
    TournamentOptions,
    VariantSpec,
    variants,
)
from services.platform.errors import Reason, ServiceError
from services.platform.validation import clean_display_name

DEFAULT_BOT_LEVEL: Final = "basic"
MAX_NAME_CHARS: Final = 64
_FORMATS: Final = {
    tournament_pb2.TOURNAMENT_FORMAT_UNSPECIFIED: Format.SWISS,
    tournament_pb2.TOURNAMENT_FORMAT_SWISS: Format.SWISS,
    tournament_pb2.TOURNAMENT_FORMAT_KNOCKOUT: Format.KNOCKOUT,
    tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN: Format.ROUND_ROBIN,
}
_GAME_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _invalid(field: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_REQUEST, message,
                        metadata={"field": field})


def game_of(settings: tournament_pb2.TournamentSettings) -> Game:
    """The served game the settings name.

    :raises ServiceError: INVALID_ARGUMENT for a game type no game has.
    """
    game = GAMES.get(settings.game_type)
    if game is None:
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, Reason.UNKNOWN_GAME_TYPE,
                           f"no game of type {settings.game_type}",
                           metadata={"field": "settings.game_type"})
    return game


def seats_of(settings: tournament_pb2.TournamentSettings) -> int:
    """The seats of every table (the game's default count when unset).

    :raises ServiceError: INVALID_ARGUMENT for a count the game does not have.
    """
    game = game_of(settings)
    seats = settings.players_per_table or game.PLAYER_COUNTS[0]
    if seats not in game.PLAYER_COUNTS:
        raise _invalid("settings.players_per_table",
                       f"a table of this game seats {list(game.PLAYER_COUNTS)}, not {seats}")
    return seats


def variant_spec(settings: tournament_pb2.TournamentSettings) -> VariantSpec:
    """The engine's description of the tables' game (:mod:`engine.tournament.variants`).

    ``settings.partnerships`` is passed on only when set, and only to a spec function that
    takes it; whether the game and seat count offer partnerships is the spec function's call.

    :raises ServiceError: INVALID_ARGUMENT for a game without a spec, a seat count it refuses,
        or partnerships it does not offer.
    """
    game = game_of(settings)
    describe = getattr(variants, f"{game.NAME}_spec", None)
    if describe is None:
        raise _invalid("settings.game_type", "this game offers no tournaments")
    seats = seats_of(settings)
    if not settings.partnerships:
        try:
            spec: VariantSpec = describe(seats)
        except ValueError as error:
            raise _invalid("settings.players_per_table", str(error)) from None
        return spec
    if "partnerships" not in inspect.signature(describe).parameters:
        raise _invalid("settings.partnerships",
                       "this game has no choice of partnerships (its teams follow from the "
                       "seats)")
    try:
        spec = describe(seats, partnerships=True)
    except ValueError as error:
        raise _invalid("settings.partnerships", str(error)) from None
    return spec


def bot_level_of(settings: tournament_pb2.TournamentSettings) -> str:
    """The level of the tournament's bots.

    :raises ServiceError: INVALID_ARGUMENT for an unknown level.
    """
    level = settings.bot_level or DEFAULT_BOT_LEVEL
    if level not in BOT_LEVELS:
        raise _invalid("settings.bot_level", f"bot levels are {list(BOT_LEVELS)}")
    return level


def normalized(settings: tournament_pb2.TournamentSettings) -> tournament_pb2.TournamentSettings:
    """``settings`` checked, with the game's seat count and the bot level filled in, and the
    name cleaned as a display name is (invisible and control characters dropped, marks
    stacked on a letter cut to a few, spaces collapsed: empty stays empty).

    :raises ServiceError: INVALID_ARGUMENT for settings out of range; reason
        ``invalid_display_name`` (field ``settings.name``) for a name with nothing visible
        left or more than :data:`MAX_NAME_CHARS` characters.
    """
    clean = tournament_pb2.TournamentSettings()
    clean.CopyFrom(settings)
    clean.name = clean_display_name(settings.name, max_chars=MAX_NAME_CHARS,
                                    field="settings.name")
    if settings.format not in _FORMATS:
        raise _invalid("settings.format", f"no format {settings.format}")
    clean.players_per_table = seats_of(settings)
    clean.bot_level = bot_level_of(settings)
    return clean


def tournament_options(settings: tournament_pb2.TournamentSettings) -> TournamentOptions:
    """The engine's options for (normalized) ``settings``; the engine checks their ranges."""
    return TournamentOptions(
        variant=variant_spec(settings),
        format=_FORMATS[settings.format],
        entry=Entry.PAIRS if settings.registered_pairs else Entry.INDIVIDUALS,
        rounds=settings.rounds,
        fill_with_bots=settings.fill_with_bots,
        round_seconds=settings.round_time_limit_seconds,
        max_entrants=settings.max_players,
        table_target_score=settings.target_score,
        table_turn_seconds=settings.turn_seconds,
    )


def game_id_of(tournament_id: str, round_: int, table: int) -> str:
    """The game id of a round's table: the same on every replica, so creating the match
    again is a harmless ``ALREADY_EXISTS``."""
    game_id = f"{tournament_id}-r{round_}-t{table}"
    if not _GAME_ID.fullmatch(game_id):
        raise ValueError(f"game id {game_id!r} is not a valid game id")
    return game_id


def bot_player_id(level: str, game_id: str, seat: int) -> str:
    """The id of the bot filling ``seat`` of ``game_id`` (the bot service reads its level)."""
    return f"bot:{level}:{game_id}-{seat}"


def create_game_request(
    settings: tournament_pb2.TournamentSettings, spec: VariantSpec, game_id: str, table: Table,
    names: dict[str, str], bot_players: frozenset[str],
) -> game_pb2.CreateGameRequest:
    """The CreateGame request of a round's table (``spec``: the variant the tournament's log
    records; ``names``: display names by player id; ``bot_players``: registered entrants'
    players that are bots).

    :raises ValueError: when ``spec`` is not the settings' game's or its seats not the
        table's (a log and settings that disagree).
    """
    game = game_of(settings)
    level = settings.bot_level or DEFAULT_BOT_LEVEL
    players = []
    for index, seat in enumerate(table.seats):
        if seat.player_id in bot_players:
            # A registered bot's name is its id, longer than a display name may be from
            # the hundredth bot of a tournament on: shown as the seat's fill-in bots are.
            players.append(common_pb2.Player(
                player_id=seat.player_id, display_name=f"Bot {index + 1}", is_bot=True))
        elif seat.player_id:
            players.append(common_pb2.Player(
                player_id=seat.player_id, display_name=names.get(seat.player_id, ""),
                is_bot=False))
        else:
            players.append(common_pb2.Player(
                player_id=bot_player_id(level, game_id, index),
                display_name=f"Bot {index + 1}", is_bot=True))
    request = game_pb2.CreateGameRequest(game_type=settings.game_type, game_id=game_id,
                                         players=players)
    if spec.seats != len(table.seats):
        raise ValueError(f"a table of {len(table.seats)} seats under a spec of {spec.seats}")
    rules = variants.table_rules(game, spec, target_score=settings.target_score,
                                 turn_seconds=settings.turn_seconds)
    put(request, game.SCHEMA, rules)
    return request
