"""The bus contract, run against the in-process bus and NATS JetStream (``test_bus.py``).

Subclasses provide ``bus`` (started) and ``replica``: a factory of further buses on the same
backbone, as other processes would hold (the in-process bus returns itself).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from services.platform.bus import Bus, Published
from tests.services.platform.helpers import continue_log, make_entries, seqs

Replica = Callable[[], Awaitable[Bus]]
TIMEOUT = 10.0


async def take(iterator: AsyncIterator[object], count: int) -> list[object]:
    """The next ``count`` items of ``iterator`` (fails after TIMEOUT seconds)."""

    async def collect() -> list[object]:
        return [await anext(iterator) for _ in range(count)]

    return await asyncio.wait_for(collect(), TIMEOUT)


async def nothing_more(iterator: AsyncIterator[object], seconds: float = 0.5) -> bool:
    """True if ``iterator`` yields nothing within ``seconds``."""
    try:
        await asyncio.wait_for(anext(iterator), seconds)
    except TimeoutError:
        return True
    return False


class BusContract:
    """What every :class:`~services.platform.bus.Bus` must do (docs/architecture.md "Event store
    and bus")."""

    async def test_live_sees_events_published_by_any_replica_in_order(
        self, bus: Bus, replica: Replica
    ) -> None:
        other = await replica()
        live = bus.live("g1")
        await live.ensure_subscribed()
        await other.publish("hokm", "g1", make_entries(1, 3))
        assert seqs(await take(live, 3)) == [1, 2, 3]  # type: ignore[arg-type]
        await live.aclose()

    async def test_live_only_sees_its_game(self, bus: Bus) -> None:
        async with bus.live("g1") as live:
            await live.ensure_subscribed()
            await bus.publish("hokm", "g2", make_entries(1, 1))
            await bus.publish("hand", "g1", make_entries(1, 1, at_ms=5))
            [entry] = await take(live, 1)
            assert entry == make_entries(1, 1, at_ms=5)[0]
            assert await nothing_more(live)

    async def test_live_never_repeats_a_seq(self, bus: Bus) -> None:
        log = make_entries(1, 2)
        async with bus.live("g1") as live:
            await live.ensure_subscribed()
            await bus.publish("hokm", "g1", log)
            await bus.publish("hokm", "g1", log)  # a relay resending after a crash
            await bus.publish("hokm", "g1", continue_log(log, 1))
            assert seqs(await take(live, 3)) == [1, 2, 3]  # type: ignore[arg-type]
            assert await nothing_more(live)

    async def test_closed_live_stream_ends(self, bus: Bus) -> None:
        live = bus.live("g1")
        await live.aclose()
        with pytest.raises(StopAsyncIteration):
            await anext(live)

    async def test_durable_consumers_split_events_each_delivered_once(
        self, bus: Bus, replica: Replica
    ) -> None:
        other = await replica()
        workers = [bus.all_events("workers"), other.all_events("workers")]
        received: list[tuple[int, Published]] = []
        total = 12
        done = asyncio.Event()

        async def work(index: int, events: AsyncIterator[Published]) -> None:
            async for published in events:
                received.append((index, published))
                if len(received) >= total:
                    done.set()

        tasks = [asyncio.create_task(work(i, events)) for i, events in enumerate(workers)]
        try:
            for game_id in ("g1", "g2", "g3"):
                log = make_entries(1, 2)
                await bus.publish("hokm", game_id, log)
                await other.publish("hokm", game_id, continue_log(log, 2))
            await asyncio.wait_for(done.wait(), TIMEOUT)
            await asyncio.sleep(0.5)  # room for a duplicate to show up
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        keys = collections.Counter((p.game_id, p.entry.event.seq) for _, p in received)
        expected = {(game_id, seq) for game_id in ("g1", "g2", "g3") for seq in range(1, 5)}
        assert set(keys) == expected
        assert max(keys.values()) == 1
        assert {p.game_type for _, p in received} == {"hokm"}

    async def test_publishing_a_seq_twice_delivers_it_once(self, bus: Bus) -> None:
        # docs/architecture.md "Event store and bus": Nats-Msg-Id = <game_id>:<seq>, so a resend
        # creates no duplicate.
        events = bus.all_events("dedup")
        log = make_entries(1, 2)
        await bus.publish("hokm", "g1", log)
        await bus.publish("hokm", "g1", log[1:])
        await bus.publish("hokm", "g1", continue_log(log, 1))
        received = await take(events, 3)
        assert [(p.game_id, p.entry.event.seq) for p in received] == [  # type: ignore[attr-defined]
            ("g1", 1),
            ("g1", 2),
            ("g1", 3),
        ]
        assert await nothing_more(events)

    async def test_published_carries_game_type_and_the_stored_entry(self, bus: Bus) -> None:
        events = bus.all_events("shape")
        entry = make_entries(1, 1)[0]
        await bus.publish("hand", "table-7", [entry])
        [published] = await take(events, 1)
        assert published == Published("hand", "table-7", entry)

    async def test_closing_the_bus_ends_consumers_and_live_streams(self, bus: Bus) -> None:
        events = bus.all_events("closing")
        live = bus.live("g1")

        async def drain(iterator: AsyncIterator[object]) -> int:
            return len([item async for item in iterator])

        consumers = [asyncio.create_task(drain(events)), asyncio.create_task(drain(live))]
        await asyncio.sleep(0.2)  # both are waiting for events now
        await bus.close()
        done, _ = await asyncio.wait(consumers, timeout=TIMEOUT)
        assert done == set(consumers)
        assert [task.result() for task in consumers] == [0, 0]

    async def test_subject_tokens_are_validated(self, bus: Bus) -> None:
        with pytest.raises(ValueError):
            await bus.publish("hokm", "a.b", make_entries(1, 1))
        with pytest.raises(ValueError):
            await bus.publish("ho km", "g1", make_entries(1, 1))
