"""The players' display names of a game created through ``CreateGame`` follow the rules of
every name others see (services/platform/validation.py ``clean_display_name``), whoever
creates it: the lobby's names are clean already, and an admin's or another service's are
cleaned (or refused) the same way."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine.registry import game_of_event
from services.platform.auth import Role
from services.platform.errors import error_info_of, reason_of
from tests.services.game.conftest import Embedded

BIDI_OVERRIDE, ZERO_WIDTH, ESCAPE = "\u202e", "\u200b", "\x1b"


def _request(*names: str) -> game_pb2.CreateGameRequest:
    return game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=1),
        players=[common_pb2.Player(player_id=f"p{seat}", display_name=name)
                 for seat, name in enumerate(names)],
    )


def _logged_names(embedded: Embedded, game_id: str) -> list[str]:
    first = embedded.store.load(game_id, 0)[0].event
    return [player.display_name for player in game_of_event(first).setup_of(first).players]


@pytest.mark.parametrize("role", [Role.ADMIN, Role.SERVICE])
async def test_bidi_zero_width_and_escape_characters_never_reach_the_log(
    embedded: Embedded, role: Role,
) -> None:
    reply = await embedded.client("operator", role).create(_request(
        f"evil{BIDI_OVERRIDE}gnp.exe", f"Ni{ZERO_WIDTH}ma", f"{ESCAPE}[31mRed{ESCAPE}[0m",
        "  Sara \n Rezaei ",
    ))
    assert _logged_names(embedded, reply.game_id) == [
        "evilgnp.exe", "Nima", "[31mRed[0m", "Sara Rezaei"]


async def test_a_name_with_nothing_visible_is_refused_naming_the_players_field(
    embedded: Embedded,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await embedded.client("operator", Role.ADMIN).create(
            _request("Ali", f"{BIDI_OVERRIDE}{ZERO_WIDTH}", "Sara", "Reza"))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason_of(refused.value) == "invalid_display_name"
    info = error_info_of(refused.value)
    assert info is not None and info.metadata["field"] == "players[1].display_name"
    assert not embedded.store._games  # nothing was created


async def test_a_name_longer_than_a_display_name_is_refused(embedded: Embedded) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await embedded.client("operator", Role.ADMIN).create(
            _request("Ali", "Sara", "Reza", "x" * 33))
    assert reason_of(refused.value) == "invalid_display_name"
    assert "players[3].display_name" in (refused.value.details() or "")


async def test_players_without_names_stay_without_names(embedded: Embedded) -> None:
    reply = await embedded.client("lobby", Role.SERVICE).create(_request("", "", "", ""))
    assert _logged_names(embedded, reply.game_id) == ["", "", "", ""]
