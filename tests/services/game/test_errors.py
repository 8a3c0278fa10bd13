"""Every bad input gets the right status and ErrorInfo reason, and appends nothing.

Status mapping (docs/architecture.md "gRPC surface"; protos/dast/v1/game.proto): malformed →
INVALID_ARGUMENT, rule broken → FAILED_PRECONDITION, stale or lost race → ABORTED,
unknown game → NOT_FOUND, another's seat → PERMISSION_DENIED, no token → UNAUTHENTICATED.
"""

from __future__ import annotations

from collections.abc import Awaitable

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from services.platform.errors import reason_of
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, next_move, players
from tests.support.tokens import stranger_token


async def expect_error(call: Awaitable[object], code: grpc.StatusCode, reason: str | None) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == code, caught.value.details()
    if reason is not None:
        assert reason_of(caught.value) == reason


async def new_game(embedded: Embedded) -> tuple[str, list[GameClient]]:
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)
    ))
    return created.game_id, [embedded.client(f"p{seat}") for seat in range(4)]


def play(card: int) -> hokm_pb2.HokmCommand:
    return hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=card))


async def test_rule_and_input_errors_append_nothing(embedded: Embedded) -> None:
    game_id, clients = await new_game(embedded)
    start_seq = embedded.store.last_seq(game_id)
    public = (await clients[0].view(game_id)).hokm
    to_act = public.turn
    other = (to_act + 1) % 4
    # Unknown game → NOT_FOUND (also for ids that could never exist).
    await expect_error(clients[0].submit("no-such-game", "x", play(0)),
                       grpc.StatusCode.NOT_FOUND, "game_not_found")
    await expect_error(clients[0].view("../../etc"), grpc.StatusCode.NOT_FOUND, "game_not_found")
    # A card id outside 0..51 is malformed → INVALID_ARGUMENT with the engine's code.
    await expect_error(clients[to_act].submit(game_id, "bad-card", play(99)),
                       grpc.StatusCode.INVALID_ARGUMENT, "invalid_card")
    # Only the hakem declares trump → FAILED_PRECONDITION (docs/rules/hokm.md "Dealing and trump").
    declare = hokm_pb2.HokmCommand(declare_trump=hokm_pb2.DeclareTrump(suit=common_pb2.SUIT_HEARTS))
    await expect_error(clients[other].submit(game_id, "early", declare),
                       grpc.StatusCode.FAILED_PRECONDITION, "not_hakem")
    # Nobody plays before trump is declared (docs/rules/hokm.md "Dealing and trump").
    await expect_error(clients[to_act].submit(game_id, "too-soon", play(0)),
                       grpc.StatusCode.FAILED_PRECONDITION, "trump_not_declared")
    # A player acting for someone else's seat → PERMISSION_DENIED.
    await expect_error(clients[other].submit(game_id, "steal", play(0), seat=to_act),
                       grpc.StatusCode.PERMISSION_DENIED, "not_your_seat")
    await expect_error(embedded.client("stranger").submit(game_id, "s", play(0)),
                       grpc.StatusCode.PERMISSION_DENIED, "not_seated")
    # Only services mark a move automatic; a command needs a body and a command id.
    empty = game_pb2.SubmitCommandRequest(game_id=game_id, command_id="empty")
    await expect_error(clients[to_act].stub.SubmitCommand(empty, metadata=clients[0].metadata),
                       grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    await expect_error(clients[to_act].submit(game_id, "", play(0)),
                       grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    # A stale expected_seq → ABORTED.
    await expect_error(clients[to_act].submit(game_id, "stale", play(0), expected_seq=1),
                       grpc.StatusCode.ABORTED, "stale_expected_seq")
    # Exporting an unfinished match is for admins and referees only.
    await expect_error(clients[0].export(game_id), grpc.StatusCode.FAILED_PRECONDITION,
                       "game_not_over")
    await expect_error(embedded.client("bots", Role.SERVICE).export(game_id),
                       grpc.StatusCode.FAILED_PRECONDITION, "game_not_over")
    assert len(await embedded.client("root", Role.ADMIN).export(game_id)) == start_seq
    referee = embedded.client("tournaments", Role.REFEREE)
    assert len(await referee.export(game_id)) == start_seq
    # A referee reads; it plays no seat, as a stranger.
    await expect_error(referee.submit(game_id, "r", play(0)),
                       grpc.StatusCode.PERMISSION_DENIED, "not_seated")
    assert embedded.store.last_seq(game_id) == start_seq


async def test_replayed_command_id_appends_nothing(embedded: Embedded) -> None:
    game_id, clients = await new_game(embedded)
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
    move = await next_move(clients, game_id, rngs)
    assert move is not None
    seat, body, seq = move
    first = await clients[seat].submit(game_id, "once", body, expected_seq=seq)
    after_first = embedded.store.last_seq(game_id)
    # The same command id again (a client retrying after a lost reply): the first result.
    again = await clients[seat].submit(game_id, "once", body, expected_seq=seq)
    assert again.duplicate and list(again.events) == list(first.events)
    assert embedded.store.last_seq(game_id) == after_first
    # Still a duplicate once the game has moved on (the same move is now illegal).
    move = await next_move(clients, game_id, rngs)
    assert move is not None
    await clients[move[0]].submit(game_id, "next", move[1])
    moved = embedded.store.last_seq(game_id)
    late = await clients[seat].submit(game_id, "once", body)
    assert late.duplicate and list(late.events) == list(first.events)
    assert embedded.store.last_seq(game_id) == moved


async def test_identity_and_roles_are_enforced(embedded: Embedded) -> None:
    game_id, clients = await new_game(embedded)
    stub = clients[0].stub
    request = game_pb2.GetViewRequest(game_id=game_id)
    # No token, a token signed with another secret, a garbled token → UNAUTHENTICATED.
    await expect_error(stub.GetView(request), grpc.StatusCode.UNAUTHENTICATED, None)
    forged = stranger_token("p0")
    await expect_error(stub.GetView(request, metadata=(("authorization", f"Bearer {forged}"),)),
                       grpc.StatusCode.UNAUTHENTICATED, None)
    await expect_error(stub.GetView(request, metadata=(("authorization", "Bearer x.y.z"),)),
                       grpc.StatusCode.UNAUTHENTICATED, None)
    stream = stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in stream:
            pass
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # Creating games is the lobby's job; choosing the server seed is an admin's.
    create = game_pb2.CreateGameRequest(game_type=common_pb2.GAME_TYPE_HOKM, players=players(4))
    await expect_error(clients[0].create(create), grpc.StatusCode.PERMISSION_DENIED,
                       "role_required")
    seeded = game_pb2.CreateGameRequest(game_type=common_pb2.GAME_TYPE_HOKM, players=players(4),
                                        server_seed=bytes(32))
    await expect_error(embedded.client("lobby", Role.SERVICE).create(seeded),
                       grpc.StatusCode.PERMISSION_DENIED, "role_required")
    admin = embedded.client("root", Role.ADMIN)
    assert (await admin.create(seeded)).game_id
    # A player may not peek at another seat's view; a spectator sees no hand.
    await expect_error(clients[0].view(game_id, seat=1), grpc.StatusCode.PERMISSION_DENIED,
                       "not_your_seat")
    watched = (await embedded.client("watcher").view(game_id)).hokm
    assert watched.is_spectator and not watched.hand
    # Bad creation requests: unknown type, the other game's rules, bad seed, bad players.
    lobby = embedded.client("lobby", Role.SERVICE)
    await expect_error(lobby.create(game_pb2.CreateGameRequest(game_type=99)),  # type: ignore[arg-type]  # an unknown value on purpose
                       grpc.StatusCode.INVALID_ARGUMENT, "unknown_game_type")
    await expect_error(admin.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, players=players(4), server_seed=b"short")),
        grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    await expect_error(lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, players=players(5))),
        grpc.StatusCode.INVALID_ARGUMENT, None)
    await expect_error(lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, players=players(4), game_id=game_id)),
        grpc.StatusCode.ALREADY_EXISTS, "game_exists")


async def test_oversized_and_garbage_requests_do_not_hurt_the_server(
    embedded: Embedded,
) -> None:
    game_id, clients = await new_game(embedded)
    before = embedded.store.last_seq(game_id)
    # Larger than grpc.max_receive_message_length (64 KiB) → RESOURCE_EXHAUSTED.
    huge = game_pb2.SubmitCommandRequest(game_id=game_id, command_id="x" * 100_000)
    huge.hokm.play_card.card = 0
    await expect_error(clients[0].stub.SubmitCommand(huge, metadata=clients[0].metadata),
                       grpc.StatusCode.RESOURCE_EXHAUSTED, None)
    # Bytes that are no protobuf message at all, and ones that parse to nonsense.
    raw = clients[0].channel.unary_unary(
        "/dast.v1.GameService/SubmitCommand",
        request_serializer=lambda b: b, response_deserializer=lambda b: b,
    )
    for garbage in (b"\xff\xff\xff\xff\xff", b"\x0a\x05hello\x22\x03\x12\x01\x08", bytes(50)):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await raw(garbage, metadata=clients[0].metadata)
        # Unparseable bytes → INVALID_ARGUMENT; bytes that parse into an empty-ish request
        # name no game → NOT_FOUND (or INVALID_ARGUMENT for a missing body).
        assert caught.value.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                       grpc.StatusCode.NOT_FOUND)
    # A command id longer than the store keeps → INVALID_ARGUMENT.
    await expect_error(clients[0].submit(game_id, "y" * 500, hokm_pb2.HokmCommand()),
                       grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    # The server still serves, and nothing was appended.
    assert (await clients[0].view(game_id)).seq == before
    assert embedded.store.last_seq(game_id) == before
