"""Whether a match admits spectators is the game's own setting, given to CreateGame.

No lobby here: the game service keeps the setting with the game (``games.spectators_allowed``)
and refuses a player without a seat on its own; seated players, services and admins always
watch. A request that leaves the field unset creates a match every spectator may watch.
"""

from __future__ import annotations

from collections.abc import Awaitable

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from services.platform.errors import Reason, reason_of
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import next_move, players


async def _refusal(call: Awaitable[object]) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code(), reason_of(caught.value)


async def _create(embedded: Embedded, spectators_allowed: bool | None) -> str:
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4)
    )
    if spectators_allowed is not None:
        request.spectators_allowed = spectators_allowed
    created = await embedded.client("lobby", Role.SERVICE).create(request)
    return created.game_id


async def test_a_match_without_spectators_refuses_strangers_and_admits_its_players(
    embedded: Embedded,
) -> None:
    game_id = await _create(embedded, spectators_allowed=False)
    assert embedded.store.spectators_allowed(game_id) is False

    stranger = embedded.client("stranger")
    denied = (grpc.StatusCode.PERMISSION_DENIED, str(Reason.SPECTATORS_NOT_ALLOWED))
    assert await _refusal(stranger.view(game_id)) == denied
    assert await _refusal(anext(aiter(stranger.subscribe(game_id)))) == denied

    # Every seated player sees their own seat, and their stream opens on the first event.
    for seat in range(4):
        player = embedded.client(f"p{seat}")
        assert (await player.view(game_id)).hokm.seat == seat
        first = await anext(aiter(player.subscribe(game_id)))
        assert first.seq == 1
    # Services and admins watch any match, as any seat or the public projection.
    assert (await embedded.client("bots", Role.SERVICE).view(game_id, seat=2)).hokm.seat == 2
    assert (await embedded.client("root", Role.ADMIN).view(game_id)).hokm.is_spectator


@pytest.mark.parametrize("spectators_allowed", [True, None], ids=["allowed", "unset"])
async def test_a_match_with_spectators_or_an_unset_field_admits_strangers(
    embedded: Embedded, spectators_allowed: bool | None,
) -> None:
    game_id = await _create(embedded, spectators_allowed)
    assert embedded.store.spectators_allowed(game_id) is True
    stranger = embedded.client("stranger")
    watched = (await stranger.view(game_id)).hokm
    assert watched.is_spectator and not watched.hand
    assert (await anext(aiter(stranger.subscribe(game_id)))).seq == 1


async def test_a_replica_that_did_not_create_the_match_reads_the_setting_from_the_store(
    embedded: Embedded,
) -> None:
    # Written straight to the store, as another replica would: this service never cached it.
    refused = await _create(embedded, spectators_allowed=False)
    entries = embedded.store.load(refused)
    embedded.store.create_game("elsewhere", common_pb2.GAME_TYPE_HOKM, entries,
                               spectators_allowed=False)
    code, reason = await _refusal(embedded.client("stranger").view("elsewhere"))
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED,
                              str(Reason.SPECTATORS_NOT_ALLOWED))


async def _play_to_the_end(embedded: Embedded, game_id: str) -> None:
    clients = [embedded.client(f"p{seat}") for seat in range(4)]
    rngs = [DeterministicRandom(bytes(32), f"export/{seat}") for seat in range(4)]
    number = 0
    while (move := await next_move(clients, game_id, rngs)) is not None:
        seat, body, seq = move
        await clients[seat].submit(game_id, f"m{number}", body, expected_seq=seq)
        number += 1


async def test_the_log_of_a_match_without_spectators_goes_only_to_its_players(
    embedded: Embedded,
) -> None:
    # The whole log shows every hand: the same rule as watching, finished or not.
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(target_score=1),
        players=players(4), spectators_allowed=False)
    game_id = (await embedded.client("lobby", Role.SERVICE).create(request)).game_id
    stranger = embedded.client("stranger")
    denied = (grpc.StatusCode.PERMISSION_DENIED, str(Reason.SPECTATORS_NOT_ALLOWED))
    assert await _refusal(stranger.export(game_id)) == denied
    await _play_to_the_end(embedded, game_id)
    assert await _refusal(stranger.export(game_id)) == denied
    assert await embedded.client("p2").export(game_id)
    assert await embedded.client("root", Role.ADMIN).export(game_id)
