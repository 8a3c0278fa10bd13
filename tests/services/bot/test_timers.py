"""Turn timers (docs/architecture.md "Time"): which deadline is pending, and firing it appends
once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, hokm_pb2, lobby_pb2, log_pb2
from services.bot.client import GrpcGameApi
from services.bot.seats import LogSeats
from services.bot.timers import Deadline, TurnTimers, pending_deadlines
from services.platform.bus import KnowsLastEvents
from tests.e2e.helpers import Guest, stack, wait_for
from tests.support.tokens import signer


class _NoApi:
    async def view(self, game_id: str, seat: int | None) -> object:
        raise AssertionError("not called")

    async def submit(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("not called")


def _event(seq: int, deadline_ms: int = 0, *, final: bool = False) -> log_pb2.Event:
    event = log_pb2.Event(seq=seq, deadline_ms=deadline_ms)
    if final:
        event.hokm.match_ended.server_seed = bytes(32)
    else:
        event.hokm.card_played.seat = 0
    return event


def test_the_latest_deadline_of_a_game_is_pending_and_later_events_clear_it() -> None:
    timers = TurnTimers(_NoApi(), LogSeats())  # type: ignore[arg-type]
    timers.observe("g", "hokm", _event(5, 1_000))
    assert timers.pending["g"] == Deadline(1_000, "g", 5)
    timers.observe("g", "hokm", _event(4, 9_000))  # a redelivery of an older event
    assert timers.pending["g"].seq == 5
    timers.observe("g", "hokm", _event(6))  # the seat acted: no deadline until the next
    assert "g" not in timers.pending
    timers.observe("g", "hokm", _event(7, 2_000))
    timers.observe("g", "hokm", _event(8, final=True))  # the match ended
    assert "g" not in timers.pending


@pytest.mark.timeout(60)
async def test_a_deadline_fired_by_two_replicas_appends_one_automatic_move(
    tmp_path: Path,
) -> None:
    store_url = f"sqlite:///{tmp_path / 'timers.sqlite3'}"
    async with stack(store_url=store_url, timers=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        guest = await Guest.sign_in(channel, "device-two-timers")
        table = await guest.table_with_bots(lobby_pb2.TableSettings(
            game_type=common_pb2.GAME_TYPE_HOKM, turn_seconds=15, target_score=3))

        async def players_turn() -> bool:
            return (await guest.view(table.game_id)).turn == 0

        await wait_for(players_turn)
        bus = run.stack.bus
        assert isinstance(bus, KnowsLastEvents)
        pending = [d for d in pending_deadlines(await bus.last_events())
                   if d.game_id == table.game_id]
        assert len(pending) == 1
        replicas = [TurnTimers(GrpcGameApi(channel, signer("bot")), LogSeats()) for _ in range(2)]
        # Both replicas fire the same deadline, twice each.
        await asyncio.gather(*(r.fire(pending[0]) for r in replicas for _ in range(2)))
        entries = await asyncio.to_thread(run.store.load, table.game_id, pending[0].seq)
        automatic = [e for e in entries if e.event.automatic]
        assert sum(r.fired for r in replicas) == 1
        first = automatic[0].event.hokm
        assert first.WhichOneof("kind") in ("card_played", "trump_declared")
        assert entries[0].event.automatic
        assert isinstance(first, hokm_pb2.HokmEvent)
