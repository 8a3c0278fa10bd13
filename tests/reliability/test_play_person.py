"""The reliability run's Play person (tests/reliability/play_person.py) on its own, against a
game service on loopback, in the two situations that stalled an earlier Play client at its
turn with its stream alive (heartbeats, so no silence to notice):

- the store away when the command arrives: its outcome is UNAVAILABLE ``store_unavailable``
  with RetryInfo, the stream stays open, and nothing is appended, so no event ever says
  "act again": the client must send the same command again after the delay;
- the stream resumed at the log's last seq while it is the seat's turn: no event comes, and
  with it no turn: the client must read the view once per stream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg

from dast.v1 import game_pb2_grpc
from services.game.service import GameService
from services.platform.auth import Role
from tests.reliability.load import CallTally
from tests.reliability.play_person import PlayPerson
from tests.services.game.conftest import Embedded
from tests.services.game.test_play_stream import _hokm_game, serving
from tests.support.tokens import token


async def _until(predicate: Any, seconds: float = 20) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():
            await asyncio.sleep(0.02)


async def _person_to_act(server: Embedded) -> PlayPerson:
    """A Play person holding the seat to act first in a fresh Hokm match."""
    await _hokm_game(server)
    seat = (await server.client("p0").view("g1")).hokm.turn
    return PlayPerson(game_pb2_grpc.GameServiceStub(server.channel), token(f"p{seat}"),
                      f"p{seat}", "g1", CallTally())


def _in_order_once(person: PlayPerson) -> bool:
    """Every event the person received, once and in order, from the first."""
    return person.received == list(range(1, len(person.received) + 1))


async def test_a_command_met_by_the_store_away_is_sent_again_and_applied_once(
    monkeypatch: Any,
) -> None:
    async with serving() as server:
        person = await _person_to_act(server)
        real_apply = GameService.apply
        failures = 0

        async def store_away_once(self: GameService, *args: Any) -> Any:
            nonlocal failures
            if failures == 0:
                failures += 1
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return await real_apply(self, *args)

        monkeypatch.setattr(GameService, "apply", store_away_once)
        playing = asyncio.create_task(person.play_to_the_end())
        try:
            await _until(lambda: person.moves >= 1)
        finally:
            playing.cancel()
        # Sent again on the same stream after RetryInfo's delay, applied once, and no
        # event missed or repeated.
        assert failures == 1 and person.retried == 1 and person.reconnections == 0
        assert list(person.applied.values()) == [1] * len(person.applied)
        log = await server.client("operator", Role.ADMIN).export("g1")
        assert _in_order_once(person) and len(log) >= len(person.received)


async def test_a_stream_resumed_at_the_last_seq_on_the_seats_turn_reads_the_view_and_acts() -> None:
    async with serving() as server:
        person = await _person_to_act(server)
        head = (await server.client("p0").view("g1")).seq
        person.received = list(range(1, head + 1))  # it held every event when it dropped
        playing = asyncio.create_task(person.play_to_the_end())
        try:
            await _until(lambda: person.moves >= 1)
        finally:
            playing.cancel()
        log = await server.client("operator", Role.ADMIN).export("g1")
        assert len(log) > head and _in_order_once(person)
        assert list(person.applied.values()) == [1] * len(person.applied)
