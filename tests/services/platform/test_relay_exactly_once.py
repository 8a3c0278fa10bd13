"""Exactly once in the stream: the relay never stores an event twice, whatever the crash
point and however long NATS was away.

The stream drops a resent ``Nats-Msg-Id`` only within its duplicate window. A relay that
died between publishing and recording how far it got, restarted after the window, would
store those events again; instead it asks the stream what it holds for the game first.
The NATS test shrinks the window to one second (a ``NatsBus`` option) so that waiting it
out takes a moment, not two minutes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import nats
import nats.js.errors
import pytest

from services.platform.bus import InProcessBus, LogEntry
from services.platform.bus_nats import NatsBus
from services.platform.relay import Relay
from services.platform.store import MemoryEventStore, OutboxStore, open_store
from tests.services.platform.helpers import HOKM, continue_log, make_entries
from tests.support.servers import PrivateNats

WINDOW_SECONDS = 1.0


class _BusOptions(TypedDict):
    """The :class:`NatsBus` keyword arguments of the test's stream."""

    stream: str
    subject_prefix: str
    duplicate_window_seconds: float
    request_timeout_seconds: float


class RememberingBus(InProcessBus):
    """An in-process bus that keeps every publish, like a stream without a duplicate window
    (a resend is stored again), and answers what it holds per game."""

    def __init__(self) -> None:
        super().__init__(dedup_window_seconds=1e-9)
        self.stored: list[tuple[str, int]] = []
        self.fail_after: int | None = None
        """Publish this many more entries, then fail (the bus goes down mid-batch)."""
        self.lookups_fail = False

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        for entry in entries:
            if self.fail_after is not None:
                if self.fail_after == 0:
                    raise ConnectionError("bus down mid-batch")
                self.fail_after -= 1
            self.stored.append((game_id, entry.event.seq))
        await super().publish(game_type, game_id, entries)

    async def last_published_seq(self, game_type: str, game_id: str) -> int:
        if self.lookups_fail:
            raise ConnectionError("bus down")
        return max((seq for game, seq in self.stored if game == game_id), default=0)

    def counts(self) -> collections.Counter[tuple[str, int]]:
        return collections.Counter(self.stored)


def _bus_options(name: str, window_seconds: float) -> _BusOptions:
    """A stream and subjects of the test's own, with that duplicate window."""
    tag = uuid.uuid4().hex[:8]
    return {"stream": f"{name.upper()}_{tag}", "subject_prefix": f"{name}{tag}.events",
            "duplicate_window_seconds": window_seconds, "request_timeout_seconds": 0.5}


def _grow(store: OutboxStore, game_id: str, count: int) -> None:
    store.append(game_id, continue_log(store.load(game_id), count), command_id=None)


async def test_a_restarted_relay_publishes_only_what_the_bus_lacks() -> None:
    store, bus = MemoryEventStore(), RememberingBus()
    store.create_game("g1", HOKM, make_entries(1, 5))
    # A relay published seqs 1-3 and died before recording it (its claim ran out).
    claimed = store.claim_unrelayed(lease_ms=0)
    await bus.publish("hokm", "g1", claimed[0].entries[:3])
    relay = Relay(store, bus)
    assert await relay.relay_once() == 5  # all recorded as relayed...
    assert (relay.lookups, relay.skipped_events, relay.published_events) == (1, 3, 2)
    # This relay now knows where the bus stands: later events need no question.
    _grow(store, "g1", 2)
    assert await relay.relay_once() == 2
    assert (relay.lookups, relay.published_events) == (1, 4)
    assert bus.counts() == {("g1", seq): 1 for seq in range(1, 8)}
    assert store.claim_unrelayed() == []


async def test_the_first_touch_of_a_game_in_a_process_looks_even_after_a_clean_release() -> (
    None
):
    # Nothing in the store says anything went wrong (a relay of an older version, say), yet
    # the bus already holds seqs 1-2: a relay that never handled the game asks first.
    store, bus = MemoryEventStore(), RememberingBus()
    store.create_game("g1", HOKM, make_entries(1, 3))
    await bus.publish("hokm", "g1", store.load("g1")[:2])
    relay = Relay(store, bus)
    await relay.relay_once()
    assert relay.published_events == 1
    assert bus.counts() == {("g1", 1): 1, ("g1", 2): 1, ("g1", 3): 1}


async def test_a_publish_that_failed_midway_is_looked_up_before_the_retry() -> None:
    store, bus = MemoryEventStore(), RememberingBus()
    store.create_game("g1", HOKM, make_entries(1, 2))
    relay = Relay(store, bus)
    await relay.relay_once()
    _grow(store, "g1", 4)
    bus.fail_after = 2  # seqs 3 and 4 reach the bus, then it goes down
    with pytest.raises(ConnectionError):
        await relay.relay_once()
    bus.fail_after = None
    lookups, published = relay.lookups, relay.published_events
    await relay.relay_once()
    assert relay.lookups == lookups + 1
    assert relay.published_events == published + 2
    assert bus.counts() == {("g1", seq): 1 for seq in range(1, 7)}


async def test_a_claim_another_replica_left_unfinished_is_looked_up() -> None:
    store, bus = MemoryEventStore(), RememberingBus()
    store.create_game("g1", HOKM, make_entries(1, 1))
    ours = Relay(store, bus)
    await ours.relay_once()  # this relay knows g1...
    _grow(store, "g1", 3)
    # ...but another replica claims it, publishes, and dies before recording anything.
    theirs = store.claim_unrelayed(lease_ms=0)
    await bus.publish("hokm", "g1", theirs[0].entries)
    assert theirs[0].entries[-1].event.seq == 4
    await ours.relay_once()
    assert (ours.skipped_events, ours.published_events) == (3, 1)
    assert bus.counts() == {("g1", seq): 1 for seq in range(1, 5)}
    assert store.claim_unrelayed() == []


async def test_a_failed_lookup_keeps_the_doubt_for_the_next_claim() -> None:
    store, bus = MemoryEventStore(), RememberingBus()
    store.create_game("g1", HOKM, make_entries(1, 2))
    await bus.publish("hokm", "g1", store.load("g1")[:1])
    bus.lookups_fail = True
    with pytest.raises(ConnectionError):
        await Relay(store, bus).relay_once()
    assert [game.interrupted for game in store.claim_unrelayed(lease_ms=0)] == [True]
    bus.lookups_fail = False
    relay = Relay(store, bus)
    await relay.relay_once()
    assert relay.published_events == 1
    assert bus.counts() == {("g1", 1): 1, ("g1", 2): 1}


class MarkRecordingStore(MemoryEventStore):
    """A memory store that records each transaction of relay marks."""

    def __init__(self) -> None:
        super().__init__()
        self.mark_writes: list[list[tuple[str, int]]] = []

    def mark_relayed_many(self, marks: Sequence[tuple[str, int]]) -> None:
        self.mark_writes.append(list(marks))
        super().mark_relayed_many(marks)


@pytest.mark.parametrize(
    ("mark_every_seconds", "writes"),
    [(60.0, [[("g0", 2), ("g1", 2), ("g2", 2)]]), (0.0, [[("g0", 2)], [("g1", 2)], [("g2", 2)]])],
)
async def test_marks_are_written_at_least_every_mark_interval_within_a_pass(
    mark_every_seconds: float, writes: list[list[tuple[str, int]]]
) -> None:
    # A long pass records its progress as it goes, so a crash repeats (and looks up) little.
    # (Marks are written between groups of games published at once: one game per group here.)
    store, bus = MarkRecordingStore(), RememberingBus()
    for game in range(3):
        store.create_game(f"g{game}", HOKM, make_entries(1, 2))
    relay = Relay(store, bus, mark_every_seconds=mark_every_seconds, publish_concurrency=1)
    assert await relay.relay_once() == 6
    assert relay.published_events == 6
    assert store.mark_writes == writes


async def test_the_in_process_bus_is_never_asked() -> None:
    # Its events cannot outlive the process: the relay publishes as it always did.
    store, bus = MemoryEventStore(), InProcessBus()
    store.create_game("g1", HOKM, make_entries(1, 3))
    relay = Relay(store, bus)
    assert await relay.relay_once() == 3
    assert (relay.lookups, relay.published_events) == (0, 3)


async def _stream_contents(url: str, stream: str) -> dict[str, list[int]]:
    """Every message of the stream, as the seqs it holds per subject in stream order."""
    connection = await nats.connect(url)
    try:
        js = connection.jetstream()
        info = await js.stream_info(stream)
        by_subject: dict[str, list[int]] = collections.defaultdict(list)
        for sequence in range(info.state.first_seq, info.state.last_seq + 1):
            message = await js.get_msg(stream, sequence)
            assert message.subject is not None and message.data is not None
            by_subject[message.subject].append(LogEntry.FromString(message.data).event.seq)
        return dict(by_subject)
    finally:
        await connection.close()


async def test_every_event_is_stored_once_after_a_crash_and_an_outage_past_the_window(
    private_nats: PrivateNats, tmp_path: Path
) -> None:
    options = _bus_options("once", WINDOW_SECONDS)
    store_url = f"sqlite:///{tmp_path / 'events.db'}"
    store = open_store(store_url)
    games = {"g1": 6, "g2": 4, "g3": 3, "control": 2}
    for game_id, count in games.items():
        store.create_game(game_id, HOKM, make_entries(1, count))

    # The first life: the relay claims everything and publishes, then every process dies
    # before the relay records how far it got. g1 and the control game went out whole, g2
    # in part, g3 not at all.
    crashed_bus = NatsBus(private_nats.url, **options)
    await crashed_bus.start()
    claimed = {game.game_id: game for game in store.claim_unrelayed(lease_ms=300)}
    await crashed_bus.publish("hokm", "g1", claimed["g1"].entries)
    await crashed_bus.publish("hokm", "g2", claimed["g2"].entries[:2])
    await crashed_bus.publish("hokm", "control", claimed["control"].entries)
    await crashed_bus.close()
    store.close()

    # NATS stays away longer than the duplicate window.
    private_nats.stop()
    await asyncio.sleep(WINDOW_SECONDS + 0.5)
    private_nats.start()

    # The restart: a new process, bus and relay over the same store.
    store = open_store(store_url)
    bus = NatsBus(private_nats.url, **options)
    await bus.start()
    try:
        # The window really is over: a plain resend of the control game's last event is
        # stored again.
        await bus.publish("hokm", "control", store.load("control")[-1:])
        relay = Relay(store, bus)
        await relay.relay_once()
        assert relay.published_events == 2 + 3  # the rest of g2, and g3
        _grow(store, "g1", 2)  # and the games go on
        await relay.relay_once()
        assert relay.published_events == 2 + 3 + 2
        assert store.claim_unrelayed() == []  # everything is recorded as relayed
        contents = await _stream_contents(private_nats.url, bus.stream)
    finally:
        await bus.close()
        store.close()

    subject = f"{options['subject_prefix']}.hokm"
    assert contents == {
        f"{subject}.g1": list(range(1, 9)),
        f"{subject}.g2": [1, 2, 3, 4],
        f"{subject}.g3": [1, 2, 3],
        f"{subject}.control": [1, 2, 2],  # the one resend the relay did not make
    }
    assert relay.skipped_events == 6 + 2 + 2  # g1, g2 and control held that much already


async def _stream_size(url: str, stream: str) -> int:
    connection = await nats.connect(url)
    try:
        return int((await connection.jetstream().stream_info(stream)).state.messages)
    except nats.js.errors.NotFoundError:
        return 0
    finally:
        await connection.close()


async def test_a_window_of_games_keeps_order_and_stores_once_through_a_nats_restart(
    private_nats: PrivateNats, tmp_path: Path
) -> None:
    # Each game's events in seq order, every event once, though the pass publishes many
    # games at once and NATS restarts under it.
    options = _bus_options("window", 120.0)
    store = open_store(f"sqlite:///{tmp_path / 'events.db'}")
    games = [f"g{number:02}" for number in range(24)]
    for game_id in games:
        store.create_game(game_id, HOKM, make_entries(1, 4))
    bus = NatsBus(private_nats.url, **options)
    await bus.start()
    sizes: list[int] = []
    # A window narrower than the games, so that games wait for room within a pass.
    relay = Relay(store, bus, poll_seconds=0.05, max_backoff_seconds=0.2, min_pass_seconds=0,
                  publish_concurrency=8, on_batch=sizes.append)
    relaying = asyncio.create_task(relay.run())
    rounds = 30

    async def play() -> None:
        for _ in range(rounds):
            for game_id in games:
                _grow(store, game_id, 1)
            relay.notify()
            await asyncio.sleep(0.02)

    try:
        playing = asyncio.create_task(play())
        await asyncio.sleep(0.2)
        private_nats.stop()  # mid-play: passes fail, the games go on in the store
        await asyncio.sleep(0.5)
        private_nats.start()
        await playing
        total = len(games) * (4 + rounds)
        for _ in range(300):
            if await _stream_size(private_nats.url, options["stream"]) >= total:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # the last pass marks what it published
    finally:
        relaying.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await relaying
        await bus.close()
    contents = await _stream_contents(private_nats.url, options["stream"])
    try:
        assert store.claim_unrelayed() == []
    finally:
        store.close()
    subject = f"{options['subject_prefix']}.hokm"
    assert contents == {f"{subject}.{game_id}": list(range(1, 4 + rounds + 1))
                        for game_id in games}
    assert relay.failures >= 1  # the restart did land on the relay
    assert max(sizes) > 1 and sum(sizes) == relay.published_events
