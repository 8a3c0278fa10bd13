"""Command ids belong to their sender: nobody can pre-empt another caller's next command.

A ``command_id`` makes a retry idempotent, and the ids of bots (``bot:<game>:<seq>``), timers
(``timeout:<game>:<seq>``) and ``dast play`` (``<player_id>:<seq>``) are easy to guess. If the
store deduplicated on the id alone, whoever used another caller's next id first would make
that caller's command come back ``duplicate=true`` and vanish: an untimed game would stall
for good. Everything here goes through gRPC, as clients do.
"""

from __future__ import annotations

from dast.v1 import common_pb2, game_pb2, hokm_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import choose, players

# docs/rules/hokm.md "Variants" and "Scoring": four players, one round is the whole match.
RULES = hokm_pb2.HokmRules(variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, target_score=1)
MAX_COMMANDS = 500
"""A whole one-round match is far shorter: more means the game no longer moves on."""


async def _create(embedded: Embedded, table: list[common_pb2.Player]) -> str:
    lobby = embedded.client("lobby", Role.SERVICE)
    request = game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, players=table, hokm=RULES
    )
    return (await lobby.create(request)).game_id


async def _turn(embedded: Embedded, game_id: str) -> tuple[int, int] | None:
    """The seat to act and the seq it acts at; None once the match is over.

    Asked with a service token, so that polling stays within no player's call limits.
    """
    public = await embedded.client("referee", Role.SERVICE).view(game_id)
    if not public.hokm.HasField("turn"):
        return None
    return public.hokm.turn, public.seq


async def test_a_host_using_the_bots_next_ids_cannot_stall_the_game(embedded: Embedded) -> None:
    # The host (seat 0) plays every move of its own under the id the bot service will use
    # for the next bot move; the bots (a service token acting for seats 1-3) keep their ids.
    table = players(4)
    for bot_seat in (1, 2, 3):
        table[bot_seat].is_bot = True
    game_id = await _create(embedded, table)
    host = embedded.client("p0")
    bots = embedded.client("bots", Role.SERVICE)
    rng = DeterministicRandom(bytes(32), "squat/bots")
    squatted: set[str] = set()
    bot_moves_on_squatted_ids = 0
    for _ in range(MAX_COMMANDS):
        turn = await _turn(embedded, game_id)
        if turn is None:
            break
        seat, seq = turn
        if seat == 0:
            squat = f"bot:{game_id}:{seq + 1}"
            body = choose(await host.view(game_id), rng)
            reply = await host.submit(game_id, squat, body, expected_seq=seq)
            squatted.add(squat)
        else:
            command_id = f"bot:{game_id}:{seq}"  # the bot service's form
            bot_moves_on_squatted_ids += command_id in squatted
            body = choose(await bots.view(game_id, seat), rng)
            reply = await bots.submit(game_id, command_id, body, expected_seq=seq, seat=seat)
        # Each move is applied: never answered as somebody else's earlier command.
        assert not reply.duplicate, (seat, seq)
        assert reply.seq > seq
    else:
        raise AssertionError(f"game {game_id} did not end within {MAX_COMMANDS} commands")
    assert bot_moves_on_squatted_ids > 0  # the host really took ids the bots then used
    assert (await host.view(game_id)).hokm.winners  # the match went on to its end


async def test_a_player_using_another_players_next_ids_cannot_erase_their_moves(
    embedded: Embedded,
) -> None:
    # Seat 0 sends each of its moves under seat 1's next id in the form `dast play` uses
    # (`<player_id>:<seq>`); seat 1's own moves must still be applied.
    game_id = await _create(embedded, players(4))
    clients = [embedded.client(f"p{seat}") for seat in range(4)]
    rng = DeterministicRandom(bytes(32), "squat/players")
    squatted: set[str] = set()
    victim_moves_on_squatted_ids = 0
    for _ in range(MAX_COMMANDS):
        turn = await _turn(embedded, game_id)
        if turn is None:
            break
        seat, seq = turn
        command_id = f"p{seat}:{seq}"
        if seat == 0:
            command_id = f"p1:{seq + 1}"
            squatted.add(command_id)
        elif seat == 1:
            victim_moves_on_squatted_ids += command_id in squatted
        body = choose(await clients[seat].view(game_id), rng)
        reply = await clients[seat].submit(game_id, command_id, body, expected_seq=seq)
        assert not reply.duplicate, (seat, seq)
        assert reply.seq > seq
    else:
        raise AssertionError(f"game {game_id} did not end within {MAX_COMMANDS} commands")
    assert victim_moves_on_squatted_ids > 0
    assert (await clients[0].view(game_id)).hokm.winners


async def _until_turn_of(
    embedded: Embedded, game_id: str, wanted: int, rng: DeterministicRandom
) -> int:
    """Let a service play the other seats until ``wanted`` is to act; return that seq."""
    service = embedded.client("bots", Role.SERVICE)
    for _ in range(MAX_COMMANDS):
        turn = await _turn(embedded, game_id)
        assert turn is not None, "the match ended before the wanted seat acted"
        seat, seq = turn
        if seat == wanted:
            return seq
        body = choose(await service.view(game_id, seat), rng)
        await service.submit(game_id, f"bot:{game_id}:{seq}", body, expected_seq=seq, seat=seat)
    raise AssertionError(f"seat {wanted} never got the turn")


async def test_a_retry_by_the_same_sender_is_still_a_duplicate(embedded: Embedded) -> None:
    game_id = await _create(embedded, players(4))
    rng = DeterministicRandom(bytes(32), "retry")
    p0 = embedded.client("p0")
    seq = await _until_turn_of(embedded, game_id, 0, rng)
    body = choose(await p0.view(game_id), rng)
    first = await p0.submit(game_id, f"p0:{seq}", body, expected_seq=seq)
    assert not first.duplicate
    # The same request again (a lost reply, a reconnect): the first result, nothing appended.
    again = await p0.submit(game_id, f"p0:{seq}", body, expected_seq=seq)
    assert again.duplicate
    assert list(again.events) == list(first.events)
    assert (await p0.view(game_id)).seq == first.seq
    # The retry still finds its result once the game has moved on past it.
    await _until_turn_of(embedded, game_id, 0, rng)
    late = await p0.submit(game_id, f"p0:{seq}", body, expected_seq=seq)
    assert late.duplicate and list(late.events) == list(first.events)


async def test_replicas_of_one_service_acting_for_a_seat_dedupe_each_other(
    embedded: Embedded,
) -> None:
    # Two bot replicas share the service token: both may try the same move with the same id
    # (the bot service's `bot:<game>:<seq>`), and only one of them is applied.
    table = players(4)
    table[2].is_bot = True
    game_id = await _create(embedded, table)
    rng = DeterministicRandom(bytes(32), "replicas")
    seq = await _until_turn_of(embedded, game_id, 2, rng)
    replica_a, replica_b = (embedded.client("bots", Role.SERVICE) for _ in range(2))
    body = choose(await replica_a.view(game_id, 2), rng)
    command_id = f"bot:{game_id}:{seq}"
    applied = await replica_a.submit(game_id, command_id, body, expected_seq=seq, seat=2)
    repeated = await replica_b.submit(game_id, command_id, body, expected_seq=seq, seat=2)
    assert not applied.duplicate
    assert repeated.duplicate
    assert list(repeated.events) == list(applied.events)
    assert (await replica_b.view(game_id)).seq == applied.seq
