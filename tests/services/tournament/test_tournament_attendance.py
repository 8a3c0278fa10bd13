"""Absent tournament players (services/tournament/attendance.py): a player expected at a
match who opens no stream within the presence grace period is taken over by the sweeper
(services/bot/presence.py), as one whose stream went away; a connected player never is; a
late one gets the seat back; the expectation survives the board forgetting it (NATS
restarted) and reaches another replica's sweeper through the NATS bucket."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from dast.v1 import common_pb2, hokm_pb2, log_pb2
from engine.registry import GAMES_BY_NAME
from services.bot.policies import SeatView
from services.bot.presence import Takeovers
from services.platform.presence_kv import InProcessPresenceBoard, PresenceRecord
from services.tournament.attendance import EXPECTATION_PREFIX, Attendance
from services.tournament.store import MatchPlace
from tests.support.presence import nats_boards

pytestmark = pytest.mark.timeout(60)

GRACE_MS = 1_000
GAME = "t1-r1-t0"
PLACE = MatchPlace(GAME, "t1", 1, 0)
DISCONNECTED = log_pb2.SEAT_CONTROL_REASON_DISCONNECTED
RECONNECTED = log_pb2.SEAT_CONTROL_REASON_RECONNECTED


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Match:
    """The game service as a sweeper sees one match: people ``p`` and ``q`` in seats 0 and
    1, bots in 2 and 3; who controls each seat changes as the sweeper asks."""

    def __init__(self) -> None:
        game = GAMES_BY_NAME["hokm"]
        seated = [common_pb2.Player(player_id="p"), common_pb2.Player(player_id="q")] + [
            common_pb2.Player(player_id=f"bot:basic:{seat}", is_bot=True) for seat in (2, 3)]
        state = game.replay(game.start(hokm_pb2.HokmRules(), bytes(32), seated))
        assert state is not None
        self.public = SeatView.of_view(game, state.seq, game.view(state, None))
        self.control = [log_pb2.SeatControl(seat=seat) for seat in range(4)]
        self.changes: list[tuple[int, bool, int]] = []

    async def view(self, game_id: str, seat: int | None) -> SeatView:
        assert game_id == GAME
        return dataclasses.replace(self.public, seat_control=tuple(self.control))

    async def control_seat(self, game_id: str, seat: int, *, bot: bool, bot_level: str,
                           reason: int) -> bool:
        if self.control[seat].bot == bot:
            return False
        self.control[seat] = log_pb2.SeatControl(seat=seat, bot=bot, reason=reason)  # type: ignore[arg-type]
        self.changes.append((seat, bot, reason))
        return True


def _world() -> tuple[Clock, InProcessPresenceBoard, Attendance, Match, Takeovers]:
    clock = Clock()
    board = InProcessPresenceBoard(clock=clock)
    match = Match()
    sweeper = Takeovers(board, match, grace_ms=GRACE_MS, stale_ms=3_000, clock=clock)
    return clock, board, Attendance(board, clock=clock), match, sweeper


async def test_a_player_who_never_subscribes_is_taken_over_after_the_grace_period() -> None:
    clock, _, attendance, match, sweeper = _world()
    await attendance.expect(PLACE, ["p", "q"])
    clock.now += GRACE_MS - 1
    assert await sweeper.sweep() == 0
    clock.now += 1
    assert await sweeper.sweep() == 2
    assert match.changes == [(0, True, DISCONNECTED), (1, True, DISCONNECTED)]
    # The renewal keeps the moment they were expected from: no second takeover, and the
    # seats stay the bots' while nobody comes.
    for _ in range(5):
        clock.now += GRACE_MS
        await attendance.renew(ended=())
        assert await sweeper.sweep() == 0
    assert attendance.expected(GAME) == {"p": 1_000_000, "q": 1_000_000}


async def test_a_connected_player_is_never_taken_over_and_stops_being_expected() -> None:
    clock, board, attendance, match, sweeper = _world()
    await attendance.expect(PLACE, ["p", "q"])
    for _ in range(6):  # p's stream stays open on a game replica, renewed every heartbeat
        await board.publish(PresenceRecord(GAME, "replica-a", clock.now, open={"p": 1}))
        await attendance.renew(ended=())
        await sweeper.sweep()
        clock.now += GRACE_MS // 2
    assert match.changes == [(1, True, DISCONNECTED)]  # q, who never came
    assert attendance.expected(GAME) == {"q": 1_000_000}  # the replica's report took over
    # Once the match has a result, nobody is expected there any more.
    await attendance.renew(ended={GAME})
    assert attendance.places() == []
    assert [r.replica_id for r in await board.records()] == ["replica-a"]


async def test_a_player_who_comes_late_takes_the_seat_back() -> None:
    clock, board, attendance, match, sweeper = _world()
    await attendance.expect(PLACE, ["p"])
    clock.now += GRACE_MS
    assert await sweeper.sweep() == 1
    # p subscribes: the game service gives the seat back as the stream opens (not in
    # this fake), and the sweeper would have given it back anyway:
    await board.publish(PresenceRecord(GAME, "replica-a", clock.now, open={"p": 1}))
    await sweeper.sweep()
    assert match.changes == [(0, True, DISCONNECTED), (0, False, RECONNECTED)]
    # Gone again later, p is taken over as any player whose stream went away.
    left = clock.now + 10
    await board.publish(PresenceRecord(GAME, "replica-a", left, closed={"p": left}))
    await attendance.renew(ended=())
    clock.now = left + GRACE_MS
    assert await sweeper.sweep() == 1
    assert match.changes[-1] == (0, True, DISCONNECTED)


async def test_an_expectation_the_board_forgot_is_published_again() -> None:
    clock, board, attendance, match, sweeper = _world()
    await attendance.expect(PLACE, ["p"])
    await board.remove(GAME, attendance.replica_id)  # NATS restarted: the bucket is empty
    clock.now += GRACE_MS
    assert await sweeper.sweep() == 0
    await attendance.renew(ended=())
    assert await sweeper.sweep() == 1  # since the moment first expected, not the renewal
    assert match.changes == [(0, True, DISCONNECTED)]


async def test_a_match_is_expected_once_and_a_record_names_its_replica() -> None:
    clock, board, attendance, _, _ = _world()
    await attendance.expect(PLACE, ["p"])
    clock.now += 500
    await attendance.expect(PLACE, ["p", "q"])  # found created again (a later sweep)
    (record,) = await board.records()
    assert record.replica_id.startswith(EXPECTATION_PREFIX)
    assert record.closed == {"p": 1_000_000} and record.open == {}
    await attendance.expect(MatchPlace("t1-r1-t1", "t1", 1, 1), [])  # bots only
    assert len(await board.records()) == 1


async def test_a_tournament_replicas_expectation_reaches_another_replicas_sweeper(
        nats_url: str) -> None:
    async with nats_boards(nats_url) as (tournament_board, bot_board):
        attendance = Attendance(tournament_board)
        match = Match()
        sweeper = Takeovers(bot_board, match, grace_ms=200, stale_ms=3_000)
        await attendance.expect(PLACE, ["p"])
        # The bot replica's board hears it through the bucket; its sweeper acts on it.
        async with asyncio.timeout(20):
            while not match.changes:
                await sweeper.sweep()
                await asyncio.sleep(0.05)
    assert match.changes == [(0, True, DISCONNECTED)]


async def test_another_replica_expecting_the_same_match_keeps_the_earliest_moment() -> None:
    clock, board, first, match, sweeper = _world()
    await first.expect(PLACE, ["p"])
    clock.now += 700
    # A second tournament replica's sweep finds the match (or the first one restarted).
    second = Attendance(board, clock=clock)
    await second.expect(PLACE, ["p"])
    assert second.expected(GAME) == {"p": 1_000_000}
    clock.now = 1_000_000 + GRACE_MS
    assert await sweeper.sweep() == 1
    assert match.changes == [(0, True, DISCONNECTED)]
