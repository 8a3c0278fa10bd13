"""Presence shared across replicas (services/platform/presence_kv.py): the reporter's
records, the rule that reads them, and both boards behind one interface."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dast.v1 import common_pb2, hokm_pb2
from engine.registry import GAMES_BY_NAME
from services.bot.policies import SeatView
from services.bot.presence import Takeovers
from services.platform.clock import wall_clock_ms
from services.platform.presence_kv import (
    InProcessPresenceBoard,
    NatsPresenceBoard,
    PresenceBoard,
    PresenceRecord,
    PresenceReporter,
    away_since,
)
from tests.support.presence import nats_boards

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_a_player_with_a_fresh_stream_on_any_replica_is_present() -> None:
    records = [PresenceRecord("g", "a", 10_000, closed={"p": 9_000}),
               PresenceRecord("g", "b", 10_000, open={"p": 2})]
    assert away_since(records, "g", "p", now_ms=10_500, stale_ms=3_000) is None


def test_a_player_gone_from_every_replica_is_away_since_the_last_one_saw_them() -> None:
    records = [PresenceRecord("g", "a", 10_000, closed={"p": 9_000}),
               PresenceRecord("g", "b", 10_000, closed={"p": 9_500}),
               PresenceRecord("other", "b", 10_000, open={"p": 1})]
    assert away_since(records, "g", "p", now_ms=10_500, stale_ms=3_000) == 9_500


def test_the_streams_of_a_replica_that_stopped_reporting_count_as_gone() -> None:
    dead = PresenceRecord("g", "a", 5_000, open={"p": 1})
    assert away_since([dead], "g", "p", now_ms=9_000, stale_ms=3_000) == 5_000
    assert away_since([dead], "g", "p", now_ms=7_000, stale_ms=3_000) is None


def test_a_player_no_replica_ever_saw_is_not_away() -> None:
    assert away_since([PresenceRecord("g", "a", 1, open={"q": 1})], "g", "p",
                      now_ms=10, stale_ms=3) is None


async def test_the_reporter_publishes_changes_renews_records_and_forgets_the_gone() -> None:
    clock = Clock()
    board = InProcessPresenceBoard(clock=clock)
    reporter = PresenceReporter(board, replica_id="r1", heartbeat_ms=1_000, remember_ms=5_000,
                                clock=clock)
    reporter.opened("g", "p")
    reporter.opened("g", "p")
    reporter.closed("g", "p")  # one of two streams closed: still here
    await reporter.flush(["g"])
    [record] = await board.records()
    assert (record.open, record.closed) == ({"p": 1}, {})
    left_at = clock.now
    reporter.closed("g", "p")
    clock.now += 100
    await reporter.flush(["g"])
    [record] = await board.records()
    assert record.open == {} and record.closed == {"p": left_at} and record.at_ms == clock.now
    # Remembered for remember_ms, then the record goes away with nothing left in it.
    clock.now += 6_000
    await reporter.flush(["g"])
    assert await board.records() == []


async def test_the_reporter_run_loop_publishes_a_change_at_once() -> None:
    board = InProcessPresenceBoard()
    reporter = PresenceReporter(board, heartbeat_ms=60_000)
    running = asyncio.create_task(reporter.run())
    try:
        reporter.opened("g", "p")
        for _ in range(100):
            if await board.records():
                break
            await asyncio.sleep(0.01)
        [record] = await board.records()
        assert record.open == {"p": 1}
    finally:
        running.cancel()
        with contextlib.suppress(BaseException):
            await running


class _SilentBoard(InProcessPresenceBoard):
    """A board cut off from the others: its records age, and it knows it."""

    def __init__(self, clock: Clock, heard: int) -> None:
        super().__init__(clock=clock)
        self.heard = heard

    def last_heard_ms(self) -> int | None:
        return self.heard


class _NoCalls:
    async def view(self, game_id: str, seat: int | None) -> SeatView:
        raise AssertionError("the sweeper must not act")

    async def control_seat(self, *args: Any, **kwargs: Any) -> bool:
        raise AssertionError("the sweeper must not act")


async def test_a_sweeper_cut_off_from_the_board_takes_nobody_over() -> None:
    clock = Clock()
    board = _SilentBoard(clock, heard=clock.now - 60_000)
    await board.publish(PresenceRecord("g", "r1", clock.now - 60_000, open={"p": 1}))
    sweeper = Takeovers(board, _NoCalls(), grace_ms=1_000, stale_ms=3_000, clock=clock)
    assert await sweeper.sweep() == 0


def _public_view_with_a_person_in_seat_0() -> SeatView:
    game = GAMES_BY_NAME["hokm"]
    seated = [common_pb2.Player(player_id="p")] + [
        common_pb2.Player(player_id=f"bot:greedy:{seat}", is_bot=True) for seat in (1, 2, 3)]
    state = game.replay(game.start(hokm_pb2.HokmRules(), bytes(32), seated))
    assert state is not None
    return SeatView.of_view(game, state.seq, game.view(state, None))


class _FrozenFirst:
    """A game service behind two replicas, the first call landing on the frozen one: it
    never answers (the connection stays open, as to a SIGSTOPped process)."""

    def __init__(self) -> None:
        self.views = 0
        self.taken: list[int] = []

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        self.views += 1
        if self.views == 1:
            await asyncio.Event().wait()
        return _public_view_with_a_person_in_seat_0()

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> bool:
        self.taken.append(seat)
        return True


async def test_a_call_to_a_frozen_replica_does_not_hold_the_takeover_back() -> None:
    clock = Clock()
    board = InProcessPresenceBoard(clock=clock)
    # The person's replica froze 10 s ago: its last report has gone stale.
    await board.publish(PresenceRecord("g", "frozen", clock.now - 10_000, open={"p": 1}))
    await board.publish(PresenceRecord("", "alive", clock.now))  # the other one heartbeats
    api = _FrozenFirst()
    sweeper = Takeovers(board, api, grace_ms=3_000, stale_ms=3_000, call_seconds=0.05,
                        clock=clock)

    started = asyncio.get_running_loop().time()
    assert await sweeper.sweep() == 0  # the call to the frozen replica is cut short
    assert asyncio.get_running_loop().time() - started < 1.0
    assert api.taken == []
    assert await sweeper.sweep() == 1  # the next sweep asks again, and the seat is taken
    assert api.taken == [0]


class _FrozenReplicaFirst:
    """A game service behind two replicas: the first call about each game lands on the
    frozen one and never answers; the calls that waited at once are counted."""

    def __init__(self, broken: str = "") -> None:
        self.broken = broken
        """A game whose view fails with something no sweeper expects."""
        self.asked: set[str] = set()
        self.waiting = self.most_waiting = 0
        self.taken: list[str] = []

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        if game_id == self.broken:
            raise RuntimeError("a view nobody can read")
        if game_id not in self.asked:
            self.asked.add(game_id)
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
            try:
                await asyncio.Event().wait()
            finally:
                self.waiting -= 1
        return _public_view_with_a_person_in_seat_0()

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> bool:
        self.taken.append(game_id)
        return True


async def _away_in_games(board: InProcessPresenceBoard, clock: Clock, games: int) -> None:
    """A person in each of ``games`` games, all of them on a replica that froze 10 s ago."""
    for number in range(games):
        await board.publish(PresenceRecord(f"g{number:03}", "frozen", clock.now - 10_000,
                                           open={"p": 1}))
    await board.publish(PresenceRecord("", "alive", clock.now))  # the other one heartbeats


async def test_one_sweep_waits_for_a_frozen_replica_once_not_once_per_game() -> None:
    clock = Clock()
    board = InProcessPresenceBoard(clock=clock)
    await _away_in_games(board, clock, 40)
    api = _FrozenReplicaFirst()
    sweeper = Takeovers(board, api, grace_ms=3_000, stale_ms=3_000, call_seconds=0.2,
                        concurrent_games=16, clock=clock)

    assert await sweeper.sweep() == 0  # every first call went to the frozen replica
    # The games were asked about side by side, as many at once as allowed, not one after
    # another (one after another, no two calls would ever have waited together).
    assert api.most_waiting == 16
    assert len(api.asked) == 40 and api.waiting == 0
    assert await sweeper.sweep() == 40  # the next sweep asks again: every seat is taken
    assert sorted(api.taken) == [f"g{number:03}" for number in range(40)]
    assert await sweeper.sweep() == 0  # and each absence is acted on once


async def test_a_game_that_fails_unexpectedly_does_not_stop_the_other_takeovers() -> None:
    clock = Clock()
    board = InProcessPresenceBoard(clock=clock)
    await _away_in_games(board, clock, 3)
    api = _FrozenReplicaFirst(broken="g001")
    api.asked = {"g000", "g002"}  # these calls reach a live replica
    sweeper = Takeovers(board, api, grace_ms=3_000, stale_ms=3_000, call_seconds=0.2,
                        clock=clock)

    assert await sweeper.sweep() == 2
    assert sorted(api.taken) == ["g000", "g002"]
    api.broken = ""
    api.asked.add("g001")
    assert await sweeper.sweep() == 1  # the failed one is asked again at the next sweep
    assert api.taken[-1] == "g001"


def test_a_sweeper_needs_room_for_at_least_one_game() -> None:
    with pytest.raises(ValueError, match="concurrent_games"):
        Takeovers(InProcessPresenceBoard(), _NoCalls(), concurrent_games=0)


@pytest.fixture
async def nats_board(nats_url: str) -> AsyncIterator[tuple[NatsPresenceBoard, NatsPresenceBoard]]:
    async with nats_boards(nats_url) as (writer, reader):
        yield writer, reader


async def _eventually(board: PresenceBoard, count: int) -> list[PresenceRecord]:
    for _ in range(200):
        records = await board.records()
        if len(records) == count:
            return records
        await asyncio.sleep(0.02)
    raise AssertionError(f"the board never held {count} records")


async def test_one_replicas_record_reaches_every_board_through_the_bucket(
    nats_board: tuple[NatsPresenceBoard, NatsPresenceBoard],
) -> None:
    writer, reader = nats_board
    assert reader.last_heard_ms() is not None  # the (empty) snapshot arrived
    # Ids with characters a key may not hold travel encoded.
    record = PresenceRecord("game/1 é", "replica:a", at_ms=wall_clock_ms(), open={"p 1": 1})
    await writer.publish(record)
    assert await _eventually(reader, 1) == [record]
    await writer.remove(record.game_id, record.replica_id)
    assert await _eventually(reader, 0) == []
