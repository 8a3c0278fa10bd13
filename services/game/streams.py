"""Subscribe's merge of the stored log and the live bus: no gap, no duplicate, shared fan-out.

A process holds one :class:`_Feed` per game that has open streams, whatever their number:
one live subscription on the bus, one task following it, and a window of the game's latest
entries with the responses already redacted for each projection (a seat, or the public one
of spectators). A stream is then a cursor into that window: when an event arrives the feed
wakes every stream once, each takes the entries after its cursor, and streams of the same
projection send the same bytes, redacted and serialised once (:meth:`GameFeeds.encoded_after`:
per event, projection and envelope, a Subscribe response or a Play message; the server's
response serializer passes bytes through, :func:`services.platform.server.passing_encoded`).
Nothing per event is done per stream but the send itself: no queue, task, redaction,
serialisation or store read of its own.

The merge: the feed subscribes to the bus first; a stream then replays the store's entries
after its ``after_seq`` and follows the feed, skipping any seq already sent. A live entry
further ahead than the next seq (a gap: the bus lost a message) is filled from the store
by the feed, and a slow poll of the store backs the bus up (once per game, not per stream),
so a stream never stalls on an event the bus failed to carry. A stream that falls behind
the window (a client not reading) reads what it missed from the store. A stream ends after
the match's final event (the one revealing the server seed).

Whose turn (game.proto "Whose turn"): the feed folds the game's state along its entries,
once per event for all its streams, starting from the state a Subscribe call loaded (the
log's head when the stream began). Only the last event of a command's batch leaves the
game waiting for a seat (after the fourth card of a trick the rules take the trick in the
same batch), so the feed tells the turn after an event it knows to end a batch: one
followed by an event that records a command (``command_for``), the match's final event, or
the store's head (a batch is appended at once, so the head always ends one). A live event
therefore costs the feed one store read per batch (the rest of the batch comes with it),
not one per event or per stream. Each such response says who acts next, and in the
projection of the seat to act it carries that seat's view: made with the response, once
per event and projection like the redaction. Older events a stream replays from the log
carry no turn (the newest one tells it).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from google.protobuf.message import Message

from dast.v1 import game_pb2, log_pb2
from engine.core.payload import put
from engine.core.protocol import Game
from services.game.turns import NextToAct, fill_turn, named_view, next_to_act
from services.platform.bus import Bus, LiveStream
from services.platform.clock import wall_clock_ms
from services.platform.limits import TokenBuckets, settle_stream
from services.platform.store import EventStore, SeatName

log = logging.getLogger(__name__)

POLL_SECONDS: Final = (0.2, 1.0, 3.0, 10.0)
"""Waits between store polls while the bus is silent (the last one repeats)."""
WINDOW_ENTRIES: Final = 256
"""How many of a game's latest entries (and their redacted responses) a feed keeps."""
REPLAY_CHUNK: Final = 64
"""Entries a stream reads from the store at a time when it replays what the window no longer
holds: a stream holds at most this many of its own, however long the log."""
CATCH_UP_PER_SECOND: Final = 3_000
"""Responses a process sends per second, all together, to streams catching up (more than
:data:`LIVE_LAG` entries behind: replaying a log they missed), in bursts of as many: a
response costs the event loop some 50-100 µs (bench/limits.py, with the machine's load),
so a crowd opening streams from a long match's first event takes at most a sixth to a
third of it, and every other call and live stream the rest. Live entries are never paced."""
LIVE_LAG: Final = 16
"""How far behind the newest entry a stream is still live (a reconnect after a few
seconds away is not paced)."""
OLDER_ENTRIES: Final = 4 * REPLAY_CHUNK
"""Entries older than the window a feed keeps once a stream replaying them read them from the
store, with their responses: a crowd replaying a match from its first event (paced together,
:data:`CATCH_UP_PER_SECOND`) reads each chunk from the store, and redacts and serialises each
entry, once per projection instead of once per stream."""
REPLAYS_AT_ONCE: Final = 8
"""Store reads of streams replaying that a process runs at once: each copies the log's tail
before keeping its chunk, so a crowd opening streams from the first event (a spectator
flood) costs the memory of a few copies at a time, not one per stream."""

_Sent = TypeVar("_Sent")

Seat = int | None
"""A projection: the seat whose view a stream carries, or None for the public one, or
:data:`SEAT_TO_ACT`."""
SEAT_TO_ACT: Final = -1
"""The projection of a bot acting for several seats (``PlayOpen.seat_to_act_views``): the
public events, each telling a turn with the view of the seat to act."""

Envelope = Callable[[game_pb2.SubscribeResponse], Message]
"""The message a response is sent in (a Play stream's ``PlayResponse``); a module-level
function, as it keys the feed's cache of serialised responses."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """A response as sent, serialised (shared between the streams that send it)."""

    seq: int
    """The seq of the event it carries."""
    data: bytes


def _poll_waits(schedule: tuple[float, ...]) -> Iterator[float]:
    yield from schedule
    while True:
        yield schedule[-1]


async def _next_live(live: LiveStream) -> log_pb2.LogEntry | None:
    """The next live entry, or None once the live feed has ended or failed."""
    try:
        return await anext(live)
    except Exception:  # the bus is down: the store poll carries the stream on
        return None


class FeedStopped(RuntimeError):
    """Raised to a stream whose game's feed stopped before the game ended."""


class _Feed:
    """One game's live entries in this process, shared by all its streams (see module doc)."""

    def __init__(
        self, feeds: GameFeeds, game: Game, game_id: str, start_seq: int
    ) -> None:
        self._feeds = feeds
        self.game = game
        self.game_id = game_id
        self.last = start_seq
        """The highest seq the feed has; entries up to it are in the window or the store."""
        self.final_seq: int | None = None
        """The seq of the match's final event (the one revealing the seed), once seen."""
        self._window: collections.deque[log_pb2.LogEntry] = collections.deque(
            maxlen=feeds.window_entries
        )
        self._responses: dict[int, dict[Seat, game_pb2.SubscribeResponse]] = {}
        self._encoded: dict[int, dict[tuple[Seat, Envelope | None], Encoded]] = {}
        self._older: dict[int, log_pb2.LogEntry] = {}
        """Entries before the window that streams replaying read from the store (at most
        :data:`OLDER_ENTRIES`, the first read first dropped); their responses in
        ``_encoded`` too."""
        self._states: dict[int, Any] = {}
        """The game's state after each seq the feed can tell the turn of (see module doc)."""
        self._next: dict[int, NextToAct] = {}
        """Who acts after each seq of ``_states``, worked out once per event."""
        self._batch_ends: set[int] = set()
        """The seqs known to end a command's batch (the game then waits for a seat)."""
        self._waiters: set[asyncio.Future[None]] = set()
        self.streams = 0
        self.ready = asyncio.Event()
        """Set once the bus subscription is live (or known to be down: the poll carries on)."""
        self._task = asyncio.get_running_loop().create_task(
            self._follow(), name=f"feed:{game_id}"
        )
        self._task.add_done_callback(self._report_failure)

    def _report_failure(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("feed %s stopped: %r", self.game_id, task.exception())

    @property
    def stopped(self) -> bool:
        """The feed no longer follows the game (its task ended: the game did, or it failed)."""
        return self._task.done()

    @property
    def ended(self) -> bool:
        """The final event is in the window: the game has nothing more to send."""
        return self.final_seq is not None

    # ---- what streams read ------------------------------------------------------------

    def after(self, cursor: int) -> list[log_pb2.LogEntry] | None:
        """The window's entries after ``cursor``; None if the window no longer reaches back
        to ``cursor + 1`` (the stream must read the store first)."""
        if self.last <= cursor:
            return []
        if not self._window or cursor + 1 < self._window[0].event.seq:
            return None
        first = self._window[0].event.seq
        return list(itertools.islice(self._window, cursor + 1 - first, None))

    def response(self, entry: log_pb2.LogEntry, seat: Seat) -> game_pb2.SubscribeResponse:
        """``entry`` as ``seat`` receives it, redacted (and its turn told) once per
        projection while in the window. Shared between streams: never mutate it."""
        by_seat = self._responses.get(entry.event.seq)
        if by_seat is None:
            return self._made(entry, seat)
        response = by_seat.get(seat)
        if response is None:
            response = self._made(entry, seat)
            by_seat[seat] = response
        return response

    def encoded(self, entry: log_pb2.LogEntry, seat: Seat, envelope: Envelope | None) -> Encoded:
        """:meth:`response`, in ``envelope`` if any, serialised once per projection and
        envelope while in the window."""
        key = (seat, envelope)
        by_key = self._encoded.get(entry.event.seq)
        if by_key is None and entry.event.seq in self._older:
            by_key = self._encoded.setdefault(entry.event.seq, {})
        if by_key is not None and (found := by_key.get(key)) is not None:
            return found
        response = self.response(entry, seat)
        message = response if envelope is None else envelope(response)
        made = Encoded(entry.event.seq, message.SerializeToString())
        if by_key is not None:
            by_key[key] = made
        return made

    def _made(self, entry: log_pb2.LogEntry, seat: Seat) -> game_pb2.SubscribeResponse:
        viewer = None if seat == SEAT_TO_ACT else seat
        response = game_pb2.SubscribeResponse(
            event=self.game.redact(entry.event, viewer), hash=entry.hash,
            server_time_ms=self._feeds.clock(),
        )
        state = self._state_after(entry) if entry.event.seq in self._batch_ends else None
        if state is not None:
            seats = self._next.get(entry.event.seq)
            if seats is None:
                seats = self._next[entry.event.seq] = next_to_act(self.game, state)
            names = self._feeds.names(self.game_id)
            fill_turn(response, self.game, state, viewer, seats, always_view=False,
                      names=names)
            if seat == SEAT_TO_ACT and seats:
                put(response, self.game.SCHEMA, named_view(self.game, state, seats[0], names))
        return response

    def older_after(self, cursor: int) -> list[log_pb2.LogEntry] | None:
        """The kept entries before the window after ``cursor`` as the store would give
        them: a whole chunk, or every entry up to the window; None if not kept."""
        window_start = self._window[0].event.seq if self._window else self.last + 1
        entries: list[log_pb2.LogEntry] = []
        seq = cursor + 1
        while len(entries) < REPLAY_CHUNK and seq < window_start:
            entry = self._older.get(seq)
            if entry is None:
                return None
            entries.append(entry)
            seq += 1
        return entries or None

    def keep_older(self, entries: list[log_pb2.LogEntry]) -> None:
        """Keep those of ``entries`` (read from the store) that are before the window."""
        window_start = self._window[0].event.seq if self._window else self.last + 1
        for entry in entries:
            if entry.event.seq < window_start:
                self._older[entry.event.seq] = entry
        while len(self._older) > OLDER_ENTRIES:
            dropped = next(iter(self._older))
            del self._older[dropped]
            self._encoded.pop(dropped, None)

    def know(self, seq: int, state: Any) -> None:
        """Start (or keep) folding the game's state from ``state``, the state after ``seq``
        (a Subscribe call's snapshot), unless the window has moved past it."""
        if seq in self._states or seq < self.last - self._feeds.window_entries:
            return
        self._states[seq] = state
        self._batch_ends.add(seq)  # a snapshot is of the store's head: a batch's end
        for entry in self._window:  # the window may be ahead of the snapshot: fold on
            if entry.event.seq > seq:
                self._state_after(entry)

    def absorb(self, entries: list[log_pb2.LogEntry]) -> None:
        """Take the entries a stream read from the store (up to its head) that the feed
        has not seen yet, so that their turns are told."""
        self._add(entries, tail_ends_batch=True)

    def _state_after(self, entry: log_pb2.LogEntry) -> Any | None:
        """The state after ``entry``, folded from the one before it when known (entries
        reach the feed and its streams in order); None when the feed cannot tell."""
        seq = entry.event.seq
        state = self._states.get(seq)
        if state is not None:
            return state
        before = self._states.get(seq - 1)
        if before is None:
            return None
        try:
            state = self.game.evolve(before, entry.event)
        except Exception as error:  # never stop a feed over the turn: streams go on without
            log.warning("feed %s: cannot fold seq %d: %r", self.game_id, seq, error)
            return None
        self._states[seq] = state
        return state

    async def changed(self) -> None:
        """Return after the next entry arrives.

        :raises FeedStopped: if the feed stopped before the game ended (a stream then ends
            with an error and its client subscribes again, instead of waiting for nothing).
        """
        if self.stopped:
            raise FeedStopped(f"the live feed of game {self.game_id} stopped")
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)  # a stream closed while waiting leaves nothing

    # ---- the one follower per game ----------------------------------------------------

    def _add(self, entries: list[log_pb2.LogEntry], *, tail_ends_batch: bool) -> None:
        """Append the entries that follow the window; ``tail_ends_batch``: the last of
        ``entries`` is known to end its batch (it was the store's head)."""
        added = False
        for index, entry in enumerate(entries):
            seq = entry.event.seq
            if seq != self.last + 1 or self.ended:
                continue
            if len(self._window) == self._window.maxlen:
                oldest = self._window[0].event.seq
                self._responses.pop(oldest, None)
                self._encoded.pop(oldest, None)
                for old in (oldest - 1, oldest):
                    self._states.pop(old, None)
                    self._next.pop(old, None)
                    self._batch_ends.discard(old)
            final = self.game.revealed_seed(entry.event) is not None
            following = entries[index + 1] if index + 1 < len(entries) else None
            if final or (tail_ends_batch if following is None else self._starts_batch(following)):
                self._batch_ends.add(seq)
            self._state_after(entry)  # once per event, whether or not a stream reads it
            self._window.append(entry)
            self._responses[seq] = {}
            self._encoded[seq] = {}
            self.last = seq
            added = True
            if final:
                self.final_seq = seq
        if added:
            self._wake()

    def add_committed(self, entries: list[log_pb2.LogEntry]) -> None:
        """A batch this process committed (see :meth:`GameFeeds.committed`)."""
        if entries[0].event.seq == self.last + 1:
            self._add(entries, tail_ends_batch=True)

    def _starts_batch(self, entry: log_pb2.LogEntry) -> bool:
        """Whether ``entry`` records a command (the first event of a command's batch)."""
        try:
            return self.game.command_for(entry.event) is not None
        except Exception:  # an event the game cannot read back: the turn goes untold
            return False

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _load(self) -> list[log_pb2.LogEntry]:
        try:
            return await asyncio.to_thread(self._feeds.store.load, self.game_id, self.last)
        except Exception as error:  # the store is down: the next poll tries again
            log.warning("feed %s: store read failed: %r", self.game_id, error)
            return []

    async def _follow(self) -> None:
        live = self._feeds.bus.live(self.game_id)
        pending: asyncio.Future[log_pb2.LogEntry | None] = asyncio.ensure_future(
            _next_live(live)
        )
        try:
            # Nothing published from now on is lost; if the bus is down the store poll carries on.
            with contextlib.suppress(Exception):
                await live.ensure_subscribed()
            self.ready.set()
            self._add(await self._load(), tail_ends_batch=True)
            waits = _poll_waits(self._feeds.poll_seconds)
            while not self.ended:
                done, _ = await asyncio.wait({pending}, timeout=next(waits))
                live_entry = pending.result() if done else None
                if done and live_entry is None:
                    pending = asyncio.get_running_loop().create_future()  # live feed gone: poll
                if live_entry is None:
                    self._add(await self._load(), tail_ends_batch=True)
                    continue
                pending = asyncio.ensure_future(_next_live(live))
                # The bus is alive: the next poll (for a last event it failed to carry)
                # waits a step longer than after a silence, not one store read per event.
                waits = _poll_waits(self._feeds.poll_seconds[1:] or self._feeds.poll_seconds)
                if live_entry.event.seq <= self.last:
                    continue
                if self._feeds.on_live is not None:
                    with contextlib.suppress(Exception):  # a metric never stops a feed
                        self._feeds.on_live(live_entry)
                # The store has the live entry and the rest of its batch (appended at once):
                # reading it tells where the batch ends. Store down: the entry goes on alone.
                stored = await self._load()
                if stored:
                    self._add(stored, tail_ends_batch=True)
                elif live_entry.event.seq == self.last + 1:
                    self._add([live_entry], tail_ends_batch=False)
        finally:
            self.ready.set()
            self._wake()
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
            with contextlib.suppress(Exception):
                await live.aclose()

    def close(self) -> None:
        """Stop following the game (its task ends the bus subscription)."""
        self._task.cancel()


class GameFeeds:
    """The feeds of one process's streams: at most one per game, open while it has streams.

    ``on_live`` sees each live entry once per process (e.g. to measure the bus's lag).
    """

    def __init__(
        self,
        store: EventStore,
        bus: Bus,
        *,
        on_live: Callable[[log_pb2.LogEntry], None] | None = None,
        poll_seconds: tuple[float, ...] = POLL_SECONDS,
        window_entries: int = WINDOW_ENTRIES,
        clock: Callable[[], int] = wall_clock_ms,
        names: Callable[[str], Mapping[str, SeatName]] = lambda _game_id: {},
    ) -> None:
        self.store = store
        self.names = names
        """The seats' names of a game, for the views the responses carry (what the
        replica holds: :meth:`services.game.names.SeatNames.known`)."""
        self.bus = bus
        self.on_live = on_live
        self.clock = clock
        """The server's clock, for ``server_time_ms`` (milliseconds)."""
        self.poll_seconds = poll_seconds
        self.window_entries = window_entries
        self._feeds: dict[str, _Feed] = {}
        self._replays = asyncio.Semaphore(REPLAYS_AT_ONCE)
        self._catch_up = TokenBuckets(CATCH_UP_PER_SECOND, CATCH_UP_PER_SECOND)

    @property
    def open_games(self) -> int:
        """How many games have a feed (streams open) in this process."""
        return len(self._feeds)

    def committed(self, game_id: str, entries: Sequence[log_pb2.LogEntry]) -> None:
        """Entries this process just appended to ``game_id`` (a whole batch, so the last
        ends it): its streams take them at once, without waiting for the bus to carry them
        back or reading the store to find the batch's end; the bus's copy is then skipped
        as already had. A batch that does not follow the feed's last entry (another
        replica's came between) is left to the bus and the store."""
        feed = self._feeds.get(game_id)
        if feed is not None and not feed.stopped and entries:
            feed.add_committed(list(entries))

    def responses_after(
        self, game: Game, game_id: str, after_seq: int, seat: Seat, *,
        head_seq: int | None = None, head_state: Any | None = None,
    ) -> AsyncGenerator[game_pb2.SubscribeResponse, None]:
        """Every entry of ``game_id`` after ``after_seq`` as ``seat`` sees it, stored then
        live, each seq once; ``head_seq`` (the game's seq when the call began, if known)
        spares a new feed reading the store from ``after_seq``, and ``head_state`` (the
        state after ``head_seq``) lets the responses from ``head_seq`` on say whose turn
        it is.

        :raises GameNotFound: if the game does not exist.
        """
        head = None if head_seq is None or head_state is None else (head_seq, head_state)
        # One generator, not one wrapping another: every layer costs each stream each event.
        return self._entries(
            game, game_id, after_seq, head_seq, lambda entry, feed: feed.response(entry, seat),
            head=head,
        )

    def encoded_after(
        self, game: Game, game_id: str, after_seq: int, seat: Seat, *,
        envelope: Envelope | None = None,
        head_seq: int | None = None, head_state: Any | None = None,
    ) -> AsyncGenerator[Encoded, None]:
        """:meth:`responses_after`, each response (in ``envelope`` if any) serialised, once
        for every stream of the same projection and envelope (a spectator flood costs each
        event one serialisation, not one a stream)."""
        head = None if head_seq is None or head_state is None else (head_seq, head_state)
        return self._entries(
            game, game_id, after_seq, head_seq,
            lambda entry, feed: feed.encoded(entry, seat, envelope), head=head,
        )

    def entries_after(
        self, game: Game, game_id: str, after_seq: int, *, head_seq: int | None = None
    ) -> AsyncGenerator[log_pb2.LogEntry, None]:
        """Every entry of ``game_id`` after ``after_seq``, stored then live, each seq once.

        :raises GameNotFound: if the game does not exist.
        """
        return self._entries(game, game_id, after_seq, head_seq, lambda entry, _feed: entry)

    async def _entries(
        self, game: Game, game_id: str, after_seq: int, head_seq: int | None,
        convert: Callable[[log_pb2.LogEntry, _Feed], _Sent],
        *, head: tuple[int, Any] | None = None,
    ) -> AsyncGenerator[_Sent, None]:
        feed = self._feeds.get(game_id)
        if feed is None or (feed.stopped and not feed.ended):  # none yet, or a failed one
            start = after_seq if head_seq is None else min(after_seq, head_seq)
            feed = _Feed(self, game, game_id, start)
            self._feeds[game_id] = feed
        if head is not None:
            feed.know(*head)
        feed.streams += 1
        try:
            await feed.ready.wait()
            cursor = after_seq
            # The window already holds what follows (a stream joining a live game): nothing
            # to read. Otherwise the store's first chunk, then the window or more chunks.
            if feed.after(cursor) is None or head_seq is None or feed.last < head_seq:
                stored = await self._stored_after(feed, cursor)
                if len(stored) < REPLAY_CHUNK:  # up to the store's head
                    feed.absorb(stored)  # entries newer than the feed's: their turns get told
                newest = max(feed.last, head_seq or 0, stored[-1].event.seq if stored else 0)
                for entry in stored:
                    if newest - entry.event.seq >= LIVE_LAG:
                        await self._pace()
                    yield convert(entry, feed)
                    cursor = entry.event.seq
                    if game.revealed_seed(entry.event) is not None:
                        return
            while True:
                fresh = feed.after(cursor)
                from_store = fresh is None
                if fresh is None:  # behind the window: catch up from the store
                    fresh = await self._stored_after(feed, cursor)
                if not fresh:
                    if feed.ended:
                        return
                    settle_stream()  # caught up: no longer opening (services.platform.limits)
                    await feed.changed()
                    continue
                for entry in fresh:
                    if entry.event.seq != cursor + 1:
                        continue
                    if feed.last - entry.event.seq >= LIVE_LAG:
                        await self._pace()
                    yield convert(entry, feed)
                    cursor = entry.event.seq
                    # The feed found the final event once for all its streams.
                    if cursor == feed.final_seq or (
                        from_store and game.revealed_seed(entry.event) is not None
                    ):
                        return
        finally:
            feed.streams -= 1
            if feed.streams == 0 and self._feeds.get(game_id) is feed:
                del self._feeds[game_id]
                feed.close()

    async def _pace(self) -> None:
        """Wait for the process's turn to send one catch-up response."""
        while (wait := self._catch_up.take(None)) > 0:
            await asyncio.sleep(wait)

    async def _stored_after(self, feed: _Feed, cursor: int) -> list[log_pb2.LogEntry]:
        """The store's next :data:`REPLAY_CHUNK` entries after ``cursor``, kept by the feed
        if another stream read them already (at most :data:`REPLAYS_AT_ONCE` store reads at
        once in the process)."""
        kept = feed.older_after(cursor)
        if kept is not None:
            return kept
        async with self._replays:
            kept = feed.older_after(cursor)  # read by another stream while this one waited
            if kept is not None:
                return kept
            stored = await asyncio.to_thread(self._chunk_after, feed.game_id, cursor)
        feed.keep_older(stored)
        return stored

    def _chunk_after(self, game_id: str, cursor: int) -> list[log_pb2.LogEntry]:
        # In the store's thread: the rest of the copy is dropped before the stream sees it.
        return self.store.load(game_id, cursor)[:REPLAY_CHUNK]


async def log_after(
    store: EventStore,
    bus: Bus,
    game: Game,
    game_id: str,
    after_seq: int,
    *,
    on_live: Callable[[log_pb2.LogEntry], None] | None = None,
    poll_seconds: tuple[float, ...] = POLL_SECONDS,
) -> AsyncIterator[log_pb2.LogEntry]:
    """Every entry of ``game_id`` after ``after_seq``, stored then live, each seq once, on
    a feed of its own (a server shares one :class:`GameFeeds` between its streams).

    :raises GameNotFound: if the game does not exist.
    """
    feeds = GameFeeds(store, bus, on_live=on_live, poll_seconds=poll_seconds)
    async for entry in feeds.entries_after(game, game_id, after_seq):
        yield entry
