"""The presence board of a deployment ages its records on the clock it is opened with.

The composition root opens it on its own clock (services/compose.py), the one its
reporters and takeovers read, so that a test's clock (or any injected one) governs them all.
"""

from __future__ import annotations

from services.platform.presence_kv import PresenceRecord, open_presence_board


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


async def test_the_embedded_board_reads_the_injected_clock() -> None:
    clock = _Clock(now=1_000)
    board = open_presence_board(None, ttl_ms=500, clock=clock)
    await board.publish(PresenceRecord("g", "r1", at_ms=1_000, open={"p": 1}))
    assert board.last_heard_ms() == 1_000
    clock.now = 1_400  # younger than the ttl by the injected clock: kept
    assert [record.replica_id for record in await board.records()] == ["r1"]
    clock.now = 1_600  # older than the ttl: dropped, though the wall clock says otherwise
    assert await board.records() == []
