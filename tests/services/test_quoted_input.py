"""Error messages quote no more of a caller's input than a short, escaped prefix
(services/platform/validation.py ``quoted_input``): ids and names the caller chose come back
cut to 24 characters with their length, in the game service (commands, views, replay,
creation), the lobby and the store underneath. A message a client shows or a log keeps then
never carries a long or hostile value back."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import any_pb2

from dast.v1 import (
    common_pb2,
    game_pb2,
    game_pb2_grpc,
    hokm_pb2,
    lobby_pb2,
    lobby_pb2_grpc,
    replay_pb2,
    replay_pb2_grpc,
)
from services.compose import Running
from services.platform.auth import Role
from services.platform.validation import quoted_input
from tests.e2e.helpers import Guest, stack
from tests.support.tokens import token

pytestmark = pytest.mark.timeout(60)

LONG_GAME = "g" + "x" * 63
"""A game id as long as ids may be (64)."""
LONG_PLAYER = "p" + "y" * 99


def _as(player_id: str, role: Role = Role.PLAYER) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token(player_id, role)}"),)


def _assert_quoted(error: grpc.aio.AioRpcError, value: str) -> None:
    message = error.details() or ""
    assert value not in message, message
    assert quoted_input(value) in message, message


@pytest.fixture
async def run() -> AsyncIterator[Running]:
    async with stack(bots=False, timers=False, presence=False) as running:
        yield running


@pytest.fixture
async def channel(run: Running) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(run.address) as opened:
        yield opened


async def _long_game(channel: grpc.aio.Channel) -> None:
    await game_pb2_grpc.GameServiceStub(channel).CreateGame(game_pb2.CreateGameRequest(
        game_id=LONG_GAME, game_type=common_pb2.GAME_TYPE_HOKM,
        players=[common_pb2.Player(player_id=f"p{seat}") for seat in range(4)],
    ), metadata=_as("lobby", Role.SERVICE))


async def _refused(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call  # type: ignore[misc]
    return refused.value


async def test_game_service_messages_quote_ids_short(channel: grpc.aio.Channel) -> None:
    game = game_pb2_grpc.GameServiceStub(channel)
    missing = await _refused(game.GetView(game_pb2.GetViewRequest(game_id=LONG_GAME),
                                          metadata=_as("lobby", Role.SERVICE)))
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    _assert_quoted(missing, LONG_GAME)
    await _long_game(channel)
    exists = await _refused(game.CreateGame(game_pb2.CreateGameRequest(
        game_id=LONG_GAME, game_type=common_pb2.GAME_TYPE_HOKM,
        players=[common_pb2.Player(player_id=f"p{seat}") for seat in range(4)],
    ), metadata=_as("lobby", Role.SERVICE)))
    assert exists.code() == grpc.StatusCode.ALREADY_EXISTS
    _assert_quoted(exists, LONG_GAME)
    # A player with a long id (an operator's token may name anyone) who holds no seat.
    stranger = await _refused(game.SubmitCommand(game_pb2.SubmitCommandRequest(
        game_id=LONG_GAME, command_id="c1", hokm=hokm_pb2.HokmCommand(),
    ), metadata=_as(LONG_PLAYER)))
    assert stranger.code() == grpc.StatusCode.PERMISSION_DENIED
    _assert_quoted(stranger, LONG_PLAYER)
    _assert_quoted(stranger, LONG_GAME)
    seat = await _refused(game.GetView(game_pb2.GetViewRequest(game_id=LONG_GAME, seat=9),
                                       metadata=_as("lobby", Role.SERVICE)))
    _assert_quoted(seat, LONG_GAME)


async def test_replay_messages_quote_ids_short(channel: grpc.aio.Channel) -> None:
    await _long_game(channel)
    replay = replay_pb2_grpc.ReplayServiceStub(channel)
    not_over = await _refused(replay.GetReplayFrame(replay_pb2.GetReplayFrameRequest(
        game_id=LONG_GAME, viewpoint=replay_pb2.REPLAY_VIEWPOINT_TABLE,
    ), metadata=_as("p0")))
    assert not_over.code() == grpc.StatusCode.FAILED_PRECONDITION
    _assert_quoted(not_over, LONG_GAME)
    other_seat = await _refused(replay.GetReplayFrame(replay_pb2.GetReplayFrameRequest(
        game_id=LONG_GAME, viewpoint=replay_pb2.REPLAY_VIEWPOINT_SEAT, seat=2,
    ), metadata=_as("p0")))
    assert other_seat.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "p0" in (other_seat.details() or "")
    too_far = await _refused(replay.GetReplayFrame(replay_pb2.GetReplayFrameRequest(
        game_id=LONG_GAME, seq=10_000,
    ), metadata=_as("lobby", Role.SERVICE)))
    _assert_quoted(too_far, LONG_GAME)


async def test_a_packed_message_of_another_type_is_not_echoed(channel: grpc.aio.Channel) -> None:
    hostile = "type.googleapis.com/" + "z" * 100
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM,
        players=[common_pb2.Player(player_id=f"p{seat}") for seat in range(4)],
    )
    request.other.CopyFrom(any_pb2.Any(type_url=hostile, value=b"\x01"))
    refused = await _refused(game_pb2_grpc.GameServiceStub(channel).CreateGame(
        request, metadata=_as("lobby", Role.SERVICE)))
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "zzz" not in (refused.details() or "")


async def test_lobby_messages_quote_tables_and_players_short(channel: grpc.aio.Channel) -> None:
    host = await Guest.sign_in(channel, "device-quoted-host")
    table = (await host.call("CreateTable", lobby_pb2.CreateTableRequest(
        settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, private=True),
    ))).table
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    private = await _refused(lobby.JoinTable(lobby_pb2.JoinTableRequest(
        table_id=table.table_id, invite_code="wrong"), metadata=_as(LONG_PLAYER)))
    assert private.code() == grpc.StatusCode.PERMISSION_DENIED
    assert quoted_input(table.table_id) in (private.details() or "")
    not_seated = await _refused(lobby.LeaveTable(lobby_pb2.LeaveTableRequest(
        table_id=table.table_id), metadata=_as(LONG_PLAYER)))
    assert not_seated.code() == grpc.StatusCode.FAILED_PRECONDITION
    _assert_quoted(not_seated, LONG_PLAYER)
