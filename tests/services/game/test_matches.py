"""Whole matches played through gRPC by test clients that see only their own seat.

Each seat's client picks its moves with the engine's bot over its own GetView, and a
stream per seat (plus a spectator's) records every event the server sends; at the end the
exported log must audit, and no streamed event or view may name a card hidden from its
seat (docs/rules/hokm.md "Dealing" and "Visibility": hands, the kitty, the set-aside cards and
the face-down piles are private).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from google.protobuf.message import Message

from dast.v1 import game_pb2, hand_pb2, hokm_pb2, log_pb2
from engine import hand, hokm
from engine.core.audit import audit_log
from engine.core.chain import find_chain_break
from engine.core.protocol import Game
from engine.core.rng import DeterministicRandom
from engine.core.testing import Visibility
from engine.hokm.views import event_cards, hidden_mask, view_cards
from services.platform.auth import Role
from tests.engine.hand.visibility import VISIBILITY as HAND_VISIBILITY
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import next_move, players, stream_into


@dataclass(frozen=True)
class Table:
    """A game to play through the service, and how to check what each seat saw."""

    game: Game
    rules: Message
    seats: int
    visibility: Visibility


HOKM_VISIBILITY = Visibility(hidden_mask=hidden_mask, event_cards=event_cards,
                             view_cards=view_cards)
TABLES = {
    # docs/rules/hokm.md "Variants": 4, 3 and 2 players, each played to target_score.
    "hokm-4": Table(hokm, hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, target_score=2), 4, HOKM_VISIBILITY),
    "hokm-3": Table(hokm, hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_THREE_PLAYERS, target_score=2), 3, HOKM_VISIBILITY),
    "hokm-2": Table(hokm, hokm_pb2.HokmRules(
        variant=hokm_pb2.HOKM_VARIANT_TWO_PLAYERS, target_score=2), 2, HOKM_VISIBILITY),
    # docs/rules/hand.md "Players" and "Partnerships": 2-4 players or two partnerships.
    "hand-2": Table(hand, hand_pb2.HandRules(rounds=1), 2, HAND_VISIBILITY),
    "hand-3": Table(hand, hand_pb2.HandRules(rounds=1), 3, HAND_VISIBILITY),
    "hand-4": Table(hand, hand_pb2.HandRules(rounds=1), 4, HAND_VISIBILITY),
    "hand-pairs": Table(hand, hand_pb2.HandRules(rounds=1, partnerships=True), 4,
                        HAND_VISIBILITY),
}


def assert_nothing_hidden(
    table: Table,
    entries: list[log_pb2.LogEntry],
    streams: dict[int | None, list[log_pb2.Event]],
    views: list[tuple[int, game_pb2.GetViewResponse]],
) -> None:
    """No streamed event nor view names a card hidden from its seat at that seq."""
    game, vis = table.game, table.visibility
    states: list[Any] = [None]
    for entry in entries:
        states.append(game.evolve(states[-1], entry.event))
    for seat, events in streams.items():
        assert [e.seq for e in events] == list(range(1, len(entries) + 1)), seat
        for event in events:
            leaked = vis.event_cards(event) & vis.hidden_mask(states[event.seq], seat)
            assert leaked == 0, f"seat {seat} saw hidden cards at seq {event.seq}"
            assert game.revealed_seed(event) is not None or not event_seed(event)
    for seat, reply in views:
        seen = getattr(reply, table.game.NAME)
        leaked = vis.view_cards(seen) & vis.hidden_mask(states[reply.seq], seat)
        assert leaked == 0, f"seat {seat}'s view at seq {reply.seq} shows hidden cards"


def event_seed(event: log_pb2.Event) -> bytes:
    """The server seed a match's first event carries (stripped from every seat's copy)."""
    payload = getattr(event, event.WhichOneof("game") or "hokm")
    if payload.WhichOneof("kind") != "match_started":
        return b""
    return bytes(payload.match_started.fairness.server_seed)


async def play_through_grpc(
    embedded: Embedded, table: Table
) -> tuple[list[log_pb2.LogEntry], dict[int | None, list[log_pb2.Event]]]:
    lobby = embedded.client("lobby", Role.SERVICE)
    request = game_pb2.CreateGameRequest(game_type=table.game.GAME_TYPE,
                                         players=players(table.seats))
    getattr(request, table.game.NAME).CopyFrom(table.rules)
    game_id = (await lobby.create(request)).game_id
    seats = table.seats
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
        reply = await clients[seat].submit(game_id, f"c{commands}", body, expected_seq=seq,
                                           game=table.game.NAME)
        assert reply.seq > seq and not reply.duplicate
        commands += 1
    # Every stream ends by itself after the final event.
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    entries = await clients[0].export(game_id)
    assert_nothing_hidden(table, entries, streams, views)
    return entries, streams


@pytest.mark.parametrize("name", list(TABLES))
async def test_whole_match_through_grpc_shows_each_seat_only_its_cards(
    embedded: Embedded, name: str
) -> None:
    table = TABLES[name]
    entries, streams = await play_through_grpc(embedded, table)
    assert find_chain_break(entries) is None
    report = audit_log(entries)
    assert report.ok, report.problems
    assert table.game.is_over(table.game.replay(e.event for e in entries))
    # Each seat's stream is exactly its redaction of the log; the spectator's the public one.
    for seat, events in streams.items():
        assert events == [table.game.redact(e.event, seat) for e in entries]
