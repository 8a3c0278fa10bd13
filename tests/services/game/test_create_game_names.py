"""The players' display names of a game created through ``CreateGame`` follow the rules of
every name others see (services/platform/validation.py ``clean_display_name``), whoever
creates it: the lobby's names are clean already, and an admin's or another service's are
cleaned (or refused) the same way. The names never reach the signed log
(services/game/names.py): the views carry them, and an account's erasure blanks them."""

from __future__ import annotations

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, replay_pb2, replay_pb2_grpc
from engine.registry import game_of_event
from services.platform.auth import Role
from services.platform.bans import Ban, erased_entry
from services.platform.errors import error_info_of, reason_of
from tests.services.game.conftest import Embedded

pytestmark = pytest.mark.timeout(60)

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


def seat_view_turn(view: game_pb2.GetViewResponse) -> int:
    """The seat to act (a match just created always has one)."""
    return int(view.turn.next_to_act[0])


async def _shown(embedded: Embedded, game_id: str) -> list[tuple[str, str, bool]]:
    """The seats as the spectators' view shows them: (player id, name, deleted)."""
    view = (await embedded.client("operator", Role.ADMIN).view(game_id)).hokm
    return [(player.player_id, player.display_name, player.deleted) for player in view.players]


@pytest.mark.parametrize("role", [Role.ADMIN, Role.SERVICE])
async def test_bidi_zero_width_and_escape_characters_never_reach_the_log(
    embedded: Embedded, role: Role,
) -> None:
    reply = await embedded.client("operator", role).create(_request(
        f"evil{BIDI_OVERRIDE}gnp.exe", f"Ni{ZERO_WIDTH}ma", f"{ESCAPE}[31mRed{ESCAPE}[0m",
        "  Sara \n Rezaei ",
    ))
    assert _logged_names(embedded, reply.game_id) == ["", "", "", ""]
    assert [name for _, name, _ in await _shown(embedded, reply.game_id)] == [
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
    assert [name for _, name, _ in await _shown(embedded, reply.game_id)] == ["", "", "", ""]


async def test_names_stay_out_of_the_log_and_every_view_carries_them(
    embedded: Embedded,
) -> None:
    reply = await embedded.client("lobby", Role.SERVICE).create(
        _request("Ali", "Sara", "Reza", "Nima"))
    stored = embedded.store.load(reply.game_id, 0)
    for name in ("Ali", "Sara", "Reza", "Nima"):
        assert not any(name.encode() in entry.SerializeToString() for entry in stored)
    expected = ["Ali", "Sara", "Reza", "Nima"]
    # A seat's own view, the spectators' view, the stream's and a replay frame's.
    seat_view = (await embedded.client("p2").view(reply.game_id)).hokm
    assert [player.display_name for player in seat_view.players] == expected
    assert [name for _, name, _ in await _shown(embedded, reply.game_id)] == expected
    # The seat to act gets its view with the stream's newest event.
    to_act = embedded.client(f"p{seat_view_turn(await embedded.client('p0').view(reply.game_id))}")
    stream = to_act.stub.Subscribe(
        game_pb2.SubscribeRequest(game_id=reply.game_id), metadata=to_act.metadata)
    async for response in stream:
        if response.HasField("hokm"):
            assert [player.display_name for player in response.hokm.players] == expected
            break
        # the events carry the opaque ids only
        assert not any(name in str(response.event) for name in expected)
    stream.cancel()
    frames = replay_pb2_grpc.ReplayServiceStub(embedded.channel)
    frame = (await frames.GetReplayFrame(
        replay_pb2.GetReplayFrameRequest(game_id=reply.game_id, seq=1),
        metadata=embedded.client("p1").metadata)).frame
    assert [player.display_name for player in frame.views[0].hokm.players] == expected


async def test_an_erased_account_is_shown_deleted_in_every_game(embedded: Embedded) -> None:
    lobby = embedded.client("lobby", Role.SERVICE)
    first = await lobby.create(_request("Ali", "Sara", "Reza", "Nima"))
    second = await lobby.create(_request("Nima", "Ali", "Sara", "Reza"))
    assert ("p1", "Sara", False) in await _shown(embedded, first.game_id)  # cached now
    embedded.service.on_ban("p1", Ban(None, "cheating"))  # a ban is no erasure
    embedded.service.on_ban("p1", erased_entry())
    await embedded.service._erasures.wait()
    # What open streams read for their next view (no store read) changed at once too.
    held = embedded.service.repository.names.known(first.game_id)
    assert (held["p1"].display_name, held["p1"].deleted, held["p0"].display_name) == (
        "", True, "Ali")
    assert await _shown(embedded, first.game_id) == [
        ("p0", "Ali", False), ("p1", "", True), ("p2", "Reza", False), ("p3", "Nima", False)]
    assert await _shown(embedded, second.game_id) == [
        ("p0", "Nima", False), ("p1", "", True), ("p2", "Sara", False), ("p3", "Reza", False)]
    assert all(not name.display_name for name in embedded.store.seat_names(first.game_id)
               if name.player_id == "p1")
    assert embedded.store.erase_names("p1") == 0  # a second time changes nothing
