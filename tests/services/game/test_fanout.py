"""One process holding many Subscribe streams of one game (issue 9, item 6): the shared
fan-out of services.game.streams gives every stream every event once, in order, redacted
for its own seat, with the chain hash (its receipt), over many connections at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import grpc

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, hokm_pb2, log_pb2
from engine import hokm
from engine.core.rng import DeterministicRandom
from services.game.play import play_event
from services.game.streams import REPLAY_CHUNK, GameFeeds
from services.platform.auth import Role
from services.platform.bus import InProcessBus
from services.platform.store import MemoryEventStore
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import next_move, players
from tests.services.game.test_streams import next_entries, started_game
from tests.support.tokens import token

CONNECTIONS = 20
STREAMS = 1_000
STREAMS_PER_SEAT = 8
MOVES = 6
TIMEOUT = 30.0


@dataclass
class Viewer:
    """One stream: who opened it, the seat it sees, and what it received."""

    player_id: str
    seat: int | None
    received: list[game_pb2.SubscribeResponse] = field(default_factory=list)
    opened: asyncio.Event = field(default_factory=asyncio.Event)


async def _follow(
    stub: game_pb2_grpc.GameServiceStub, viewer: Viewer, game_id: str, after_seq: int
) -> None:
    call = stub.Subscribe(
        game_pb2.SubscribeRequest(game_id=game_id, after_seq=after_seq),
        metadata=(("authorization", f"Bearer {token(viewer.player_id)}"),),
    )
    async for reply in call:
        viewer.received.append(reply)
        viewer.opened.set()


async def _until(predicate: object, timeout: float = TIMEOUT) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_a_thousand_streams_over_twenty_connections_each_get_every_event_once(
    embedded: Embedded,
) -> None:
    service = embedded.client("lobby", Role.SERVICE)
    created = await service.create(game_pb2.CreateGameRequest(
        game_type=common_pb2.GAME_TYPE_HOKM, hokm=hokm_pb2.HokmRules(), players=players(4),
    ))
    game_id, head = created.game_id, created.seq
    # Seated players (each within their own stream limit) and spectators (public view).
    viewers = [Viewer(f"p{seat}", seat) for seat in range(4) for _ in range(STREAMS_PER_SEAT)]
    viewers += [Viewer(f"spectator-{n}", None) for n in range(STREAMS - len(viewers))]
    # A local subchannel pool per channel: each channel is a connection of its own.
    channels = [
        grpc.aio.insecure_channel(embedded.address, options=[("grpc.use_local_subchannel_pool", 1)])
        for _ in range(CONNECTIONS)
    ]
    stubs = [game_pb2_grpc.GameServiceStub(channel) for channel in channels]
    # Each stream starts at the last stored event, so its first reply says it is open.
    streams = [
        asyncio.create_task(_follow(stubs[n % CONNECTIONS], viewer, game_id, head - 1))
        for n, viewer in enumerate(viewers)
    ]
    try:
        await _until(lambda: all(viewer.opened.is_set() for viewer in viewers))
        assert embedded.service.feeds.open_games == 1  # one feed serves all 1,000 streams
        clients = [embedded.client(f"p{seat}") for seat in range(4)]
        rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
        for number in range(MOVES):
            move = await next_move(clients, game_id, rngs)
            assert move is not None
            seat, body, seq = move
            await clients[seat].submit(game_id, f"m{number}", body, expected_seq=seq)
        last = (await service.view(game_id)).seq
        assert last >= head + MOVES
        await _until(lambda: all(
            viewer.received[-1].event.seq >= last for viewer in viewers if viewer.received
        ))
    finally:
        for stream in streams:
            stream.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
        for channel in channels:
            await channel.close()

    stored = embedded.store.load(game_id, head - 1)
    assert [entry.event.seq for entry in stored] == list(range(head, last + 1))
    for viewer in viewers:
        # Every event once, in order, as this stream's seat sees it, with its receipt.
        assert [reply.event.seq for reply in viewer.received] == list(range(head, last + 1))
        for reply, entry in zip(viewer.received, stored, strict=True):
            assert reply.event == hokm.redact(entry.event, viewer.seat)
            assert reply.hash == entry.hash
    # A seat's own cards reach that seat's streams only: redaction differs between them.
    projections = {
        viewer.seat: [reply.event.SerializeToString() for reply in viewer.received]
        for viewer in viewers
    }
    assert len(set(map(tuple, projections.values()))) > 1
    await _until(lambda: embedded.service.feeds.open_games == 0)  # closed with its streams


async def test_a_stream_behind_the_shared_window_reads_what_it_missed_from_the_store() -> None:
    store, bus = MemoryEventStore(), InProcessBus()
    await bus.start()
    entries = started_game(store)
    feeds = GameFeeds(store, bus, poll_seconds=(5.0,), window_entries=2)
    reader = feeds.responses_after(hokm, "g", len(entries) - 1, None)
    first = await anext(reader)  # open: the last stored event
    assert first.event.seq == len(entries)
    for number in range(4):  # more events than the window holds, while the reader waits
        more = next_entries(entries)
        store.append("g", more, command_id=f"c{number}", sender="p1")
        await bus.publish("hokm", "g", more)
        entries += more
    await asyncio.sleep(0.05)
    received = [await asyncio.wait_for(anext(reader), TIMEOUT)
                for _ in range(len(entries) - first.event.seq)]
    await reader.aclose()
    await bus.close()
    assert [reply.event.seq for reply in received] == list(range(first.event.seq + 1,
                                                                 len(entries) + 1))
    assert [reply.hash for reply in received] == [entry.hash for entry in entries[first.event.seq:]]
    assert feeds.open_games == 0


async def test_streams_of_one_projection_send_the_same_bytes_serialised_once() -> None:
    store, bus = MemoryEventStore(), InProcessBus()
    await bus.start()
    entries = started_game(store)
    feeds = GameFeeds(store, bus, poll_seconds=(5.0,))
    after = len(entries) - 1
    spectators = [feeds.encoded_after(hokm, "g", after, None) for _ in range(3)]
    seat_streams = [feeds.encoded_after(hokm, "g", after, 0, envelope=play_event)
                    for _ in range(2)]
    seat_one = feeds.encoded_after(hokm, "g", after, 1, envelope=play_event)
    readers = (*spectators, *seat_streams, seat_one)
    try:
        for reader in readers:  # open: each reads the last stored event
            await asyncio.wait_for(anext(reader), TIMEOUT)
        more = next_entries(entries)  # a live event, through the feed's shared window
        store.append("g", more, command_id="c1", sender="p1")
        await bus.publish("hokm", "g", more)
        entries += more
        public = [await asyncio.wait_for(anext(reader), TIMEOUT) for reader in spectators]
        seat = [await asyncio.wait_for(anext(reader), TIMEOUT) for reader in seat_streams]
        other = await asyncio.wait_for(anext(seat_one), TIMEOUT)
    finally:
        for reader in readers:
            await reader.aclose()
        await bus.close()
    last = more[0]
    # One serialisation per projection and envelope, shared (the same object) by its streams.
    assert all(encoded.data is public[0].data for encoded in public)
    assert all(encoded.data is seat[0].data for encoded in seat)
    assert {encoded.seq for encoded in (*public, *seat, other)} == {last.event.seq}
    spectator_sees = game_pb2.SubscribeResponse.FromString(public[0].data)
    assert spectator_sees.event == hokm.redact(last.event, None)
    assert spectator_sees.hash == last.hash
    # A seat's bytes are its own projection in a Play message; another seat's differ.
    seat_sees = game_pb2.PlayResponse.FromString(seat[0].data).event
    assert seat_sees.event == hokm.redact(last.event, 0)
    assert seat_sees.hash == last.hash
    assert game_pb2.PlayResponse.FromString(other.data).event.event == hokm.redact(last.event, 1)


class CountingStore(MemoryEventStore):
    """A memory store counting its reads of entries."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def load(self, game_id: str, after_seq: int = 0) -> list[log_pb2.LogEntry]:
        self.loads += 1
        return super().load(game_id, after_seq)


async def test_streams_replaying_before_the_window_share_the_store_reads_and_the_bytes(
) -> None:
    store, bus = CountingStore(), InProcessBus()
    await bus.start()
    entries = started_game(store)
    for number in range(6):
        more = next_entries(entries)
        store.append("g", more, command_id=f"c{number}", sender="p1")
        entries += more
    feeds = GameFeeds(store, bus, poll_seconds=(5.0,), window_entries=2)
    live = feeds.encoded_after(hokm, "g", len(entries) - 1, None)  # the feed's window: the tail
    await asyncio.wait_for(anext(live), TIMEOUT)
    reads_before = store.loads
    replaying = [feeds.encoded_after(hokm, "g", 0, None) for _ in range(5)]
    try:
        received = [[await asyncio.wait_for(anext(reader), TIMEOUT) for _ in entries]
                    for reader in replaying]
    finally:
        for reader in (live, *replaying):
            await reader.aclose()
        await bus.close()
    for stream in received:  # every event once, in order, with its receipt
        assert [encoded.seq for encoded in stream] == [e.event.seq for e in entries]
        sent = [game_pb2.SubscribeResponse.FromString(encoded.data) for encoded in stream]
        assert [response.hash for response in sent] == [entry.hash for entry in entries]
        assert [response.event for response in sent] == [hokm.redact(entry.event, None)
                                                        for entry in entries]
    # The entries before the window: read from the store and serialised once for all five.
    older = len(entries) - 2
    assert all(received[n][seq].data is received[0][seq].data
               for n in range(5) for seq in range(older))
    assert store.loads - reads_before <= -(-older // REPLAY_CHUNK) + 1
