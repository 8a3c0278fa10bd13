"""Whole matches played through gRPC by test clients that see only their own seat.

Each seat's client picks its moves with the engine's bot over its own GetView, and a
stream per seat (plus a spectator's) records every event the server sends; at the end the
exported log must audit, and no streamed event or view may name a card hidden from its
seat (rules/hokm.md "Dealing" and "Visibility": hands, the kitty, the set-aside cards and
the face-down piles are private).
"""

from __future__ import annotations

import asyncio

import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, log_pb2
from engine import hokm
from engine.core.audit import audit_log
from engine.core.chain import find_chain_break
from engine.core.rng import DeterministicRandom
from engine.hokm.views import event_cards, hidden_mask, view_cards
from services.platform.auth import Role
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, next_move, players, stream_into

VARIANTS = [
    (hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, 4),
    (hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, 3),
    (hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, 2),
]


def assert_nothing_hidden(
    entries: list[log_pb2.LogEntry],
    streams: dict[int | None, list[log_pb2.Event]],
    views: list[tuple[int, game_pb2.GetViewResponse]],
) -> None:
    """No streamed event nor view names a card hidden from its seat at that seq."""
    states = [None]
    state = None
    for entry in entries:
        state = hokm.evolve(state, entry.event)
        states.append(state)
    for seat, events in streams.items():
        assert [e.seq for e in events] == list(range(1, len(entries) + 1)), seat
        for event in events:
            leaked = event_cards(event) & hidden_mask(states[event.seq], seat)
            assert leaked == 0, f"seat {seat} saw hidden cards at seq {event.seq}"
            assert not event.hokm.match_started.fairness.server_seed
    for seat, reply in views:
        leaked = view_cards(reply.hokm) & hidden_mask(states[reply.seq], seat)
        assert leaked == 0, f"seat {seat}'s view at seq {reply.seq} shows hidden cards"


async def play_through_grpc(
    embedded: Embedded, variant: int, seats: int, target: int
) -> tuple[list[log_pb2.LogEntry], dict[int | None, list[log_pb2.Event]]]:
    lobby = embedded.client("lobby", Role.SERVICE)
    created = await lobby.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM,
        hokm=hokm_pb2.HokmRules(variant=variant, target_score=target),
        players=players(seats),
    ))
    game_id = created.game_id
    clients = [embedded.client(f"p{seat}") for seat in range(seats)]
    spectator = embedded.client("watcher")
    streams: dict[int | None, list[log_pb2.Event]] = {seat: [] for seat in range(seats)}
    streams[None] = []
    tasks = [asyncio.create_task(stream_into(c, game_id, 0, streams[s]))
             for s, c in zip(range(seats), clients, strict=True)]
    tasks.append(asyncio.create_task(stream_into(spectator, game_id, 0, streams[None])))
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(seats)]
    views: list[tuple[int, game_pb2.GetViewResponse]] = []
    commands = 0
    while (move := await next_move(clients, game_id, rngs, views)) is not None:
        seat, body, seq = move
        reply = await clients[seat].submit(game_id, f"c{commands}", body, expected_seq=seq)
        assert reply.seq > seq and not reply.duplicate
        commands += 1
    # Every stream ends by itself after the final event.
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    entries = await clients[0].export(game_id)
    assert_nothing_hidden(entries, streams, views)
    return entries, streams


@pytest.mark.parametrize(("variant", "seats"), VARIANTS)
async def test_whole_hokm_match_through_grpc(embedded: Embedded, variant: int, seats: int) -> None:
    # rules/hokm.md "Variants": 4, 3 and 2 players, each played to target_score.
    entries, streams = await play_through_grpc(embedded, variant, seats, target=2)
    assert find_chain_break(entries) is None
    report = audit_log(entries)
    assert report.ok, report.problems
    assert hokm.is_over(hokm.replay(e.event for e in entries))
    # Each seat's stream is exactly its redaction of the log; the spectator's the public one.
    for seat, events in streams.items():
        assert events == [hokm.redact(e.event, seat) for e in entries]
