"""A round's table as the game service is asked to create it."""

from __future__ import annotations

from dast.v1 import common_pb2, tournament_pb2
from engine.tournament import Seat, Table
from services.game.service import seated_players
from services.tournament import options


def test_registered_bots_past_the_hundredth_get_names_the_game_service_accepts() -> None:
    # A registered bot's name is its id (bot:<level>:<tournament>-e<n>): 33 characters
    # from e100 on, one more than a display name may have, so that the game service
    # refused such a table's creation (invalid_display_name) and the round never opened.
    settings = options.normalized(tournament_pb2.TournamentSettings(
        name="big", game_type=common_pb2.GAME_TYPE_HOKM,
        format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=1, target_score=1,
        bot_level="random", max_players=1024))
    tournament_id = "t0123456789abcdef"
    bots = [f"bot:random:{tournament_id}-e{number}" for number in (100, 101, 1023)]
    human = "alice"
    seats = (*(Seat(bot, bot, side=index % 2) for index, bot in enumerate(bots)),
             Seat(human, human, side=1))
    game_id = options.game_id_of(tournament_id, 1, 0)
    request = options.create_game_request(
        settings, options.variant_spec(settings), game_id, Table(0, seats),
        names={**{bot: bot for bot in bots}, human: "Alice"}, bot_players=frozenset(bots))

    assert [player.player_id for player in request.players] == [*bots, human]
    assert [player.is_bot for player in request.players] == [True, True, True, False]
    assert [player.display_name for player in seated_players(request.players)] == [
        "Bot 1", "Bot 2", "Bot 3", "Alice"]
