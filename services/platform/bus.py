"""The event bus: appended events fan out to live streams and to consumers.

docs/architecture.md "Event store and bus". Two implementations share one contract:
:class:`InProcessBus` (asyncio queues in one process, the embedded default) and
:class:`services.platform.bus_nats.NatsBus` (NATS JetStream, for several processes);
:func:`open_bus` picks one. Events reach the bus through the relay
(:mod:`services.platform.relay`), never directly from a command, so games go on while the bus
is down. The in-process bus cannot be down, and lives and dies with the process that appends: there
the game service publishes a command's events itself right after the commit (the append
moves the outbox watermark in the same transaction), sparing the relay a re-read.

Delivery guarantees:

- :meth:`Bus.live` yields a game's events published after the stream was opened, in seq
  order and without repeats; it may skip events (a disconnect), so a caller that must not miss
  one fills gaps from the store. Open the stream, ``await stream.ensure_subscribed()``, then
  read the store: nothing published in between is lost.
- :meth:`Bus.all_events` is at-least-once. Consumers sharing a ``durable`` name split the
  events between them; a message is acknowledged when its consumer asks for the next one, so
  a consumer that dies mid-event gets it again (with NATS, after the ack wait). Consumers must
  be idempotent: a projection stores the last ``(game_id, seq)`` it applied.
- Publishing the same ``(game_id, seq)`` twice within the dedup window delivers it once.
  Beyond the window only the publisher can avoid a repeat: a bus that keeps what it was
  sent (:class:`RemembersPublished`, the NATS stream) tells the relay how far each game
  got, and the relay publishes only what comes after.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from dast.v1 import log_pb2
from engine.registry import GAMES
from services.platform.validation import quoted_input

LogEntry = log_pb2.LogEntry

DEDUP_WINDOW_SECONDS = 120.0
"""How long a ``(game_id, seq)`` is remembered to drop a repeated publish (≥ 2 minutes)."""

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Published:
    """One event of one game as consumers of :meth:`Bus.all_events` receive it."""

    game_type: str
    """The game's name (``engine.registry.GAMES_BY_NAME``)."""
    game_id: str
    entry: LogEntry
    """The stored entry (event and chain hash). Shared between consumers: do not mutate it."""


def game_type_name(game_type: int) -> str:
    """The bus name of a ``dast.v1.GameType`` value: the served game's name
    (``GAME_TYPE_HOKM`` → ``"hokm"``; a game registered at run time has its own).

    :raises ValueError: for a value no served game has.
    """
    game = GAMES.get(game_type)
    if game is None:
        raise ValueError(f"no game of type {game_type}")
    return game.NAME


def message_id(game_id: str, seq: int) -> str:
    """The ``Nats-Msg-Id`` of an event: unique per ``(game_id, seq)`` so resends dedupe."""
    return f"{game_id}:{seq}"


def check_token(kind: str, value: str) -> str:
    """Return ``value`` if it can be one token of a NATS subject.

    :raises ValueError: if it is empty or holds a dot, a wildcard or whitespace.
    """
    if not _TOKEN.fullmatch(value):
        raise ValueError(f"{kind} {quoted_input(value)} must match {_TOKEN.pattern} to be a "
                         "subject token")
    return value


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has ended, whatever it ended with (a
    service's background work at shutdown: nothing it raises is left unretrieved)."""
    waiting = list(tasks)
    for task in waiting:
        task.cancel()
    for task in waiting:
        with contextlib.suppress(BaseException):
            await task


def raise_if_cancelling() -> None:
    """Raise CancelledError if the current task has a pending cancel.

    Transports (nats-py) wait with ``asyncio.wait_for``, which on Python 3.11 can swallow a
    cancel that lands just as the reply arrives; loops call this so that they still stop.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class LiveStream:
    """A game's new events, in seq order and without repeats (an ``AsyncIterator``).

    Created by :meth:`Bus.live`; the bus delivers into it. Close it (``aclose``, or
    ``async with``) when done; a stream dropped without closing is forgotten by the bus once
    garbage-collected.
    """

    def __init__(
        self,
        game_id: str,
        *,
        subscribed: Callable[[], Awaitable[None]] | None = None,
        on_close: Callable[[LiveStream], None] | None = None,
    ) -> None:
        self.game_id = game_id
        self._queue: asyncio.Queue[LogEntry | None] = asyncio.Queue()
        self._last_seq = 0
        self._subscribed = subscribed
        self._on_close = on_close
        self._closed = False

    def deliver(self, entry: LogEntry) -> None:
        """Queue an entry for the reader (called by the bus)."""
        if not self._closed:
            self._queue.put_nowait(entry)

    async def ensure_subscribed(self) -> None:
        """Return once every event published from now on will reach this stream."""
        if self._subscribed is not None:
            await self._subscribed()

    def __aiter__(self) -> LiveStream:
        return self

    async def __anext__(self) -> LogEntry:
        while True:
            entry = await self._queue.get()
            if entry is None:
                raise StopAsyncIteration
            if entry.event.seq > self._last_seq:  # a resend or a second relay: seen already
                self._last_seq = entry.event.seq
                return entry

    async def aclose(self) -> None:
        """Stop the stream: iteration ends and the bus forgets it."""
        if self._closed:
            return
        self._closed = True
        self._queue.put_nowait(None)
        if self._on_close is not None:
            self._on_close(self)

    async def __aenter__(self) -> LiveStream:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


@runtime_checkable
class Bus(Protocol):
    """Where appended events go: live streams per game and shared consumers of all games."""

    async def start(self) -> None:
        """Connect (and create the stream when missing)."""
        ...

    async def close(self) -> None:
        """Disconnect; open streams end."""
        ...

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        """Publish a game's entries in order (a repeated ``(game_id, seq)`` is dropped).

        :raises ValueError: if ``game_type`` or ``game_id`` cannot be a subject token.
        :raises Exception: whatever the transport raises when it is down (the relay retries).
        """
        ...

    def live(self, game_id: str) -> LiveStream:
        """A stream of the game's events published from now on, by any replica."""
        ...

    def all_events(self, durable: str | None = None) -> AsyncIterator[Published]:
        """Every game's events, at least once; consumers sharing ``durable`` split them."""
        ...


@runtime_checkable
class RemembersPublished(Protocol):
    """A bus that keeps what it was sent and can say how far a game's events got (NATS).

    The in-process bus has no such memory and needs none: its events cannot outlive the
    process that publishes them.
    """

    async def last_published_seq(self, game_type: str, game_id: str) -> int:
        """The seq of the last event of the game that the bus holds (0: none).

        :raises ValueError: if ``game_type`` or ``game_id`` cannot be a subject token.
        :raises Exception: whatever the transport raises when it is down.
        """
        ...


@runtime_checkable
class KnowsLastEvents(Protocol):
    """A bus that can hand over the last event of every game it carried.

    Consumers whose work lives in memory (pending turn deadlines, games waiting for a bot)
    rebuild it from these when they start, without reading any service's tables: NATS keeps
    the last message of each game's subject; the in-process bus asks the event store of its
    own process (the composition root gives it ``history``).
    """

    async def last_events(self) -> list[Published]:
        """The last event of every game, finished or not, in no particular order.

        :raises Exception: whatever the transport raises when it is down.
        """
        ...


class _Deduplicator:
    """Remembers message ids for a window, like JetStream's duplicate window."""

    def __init__(self, window_seconds: float) -> None:
        self._window = window_seconds
        self._seen: collections.OrderedDict[str, float] = collections.OrderedDict()

    def first_time(self, msg_id: str, now: float) -> bool:
        while self._seen:
            oldest, seen_at = next(iter(self._seen.items()))
            if now - seen_at < self._window:
                break
            del self._seen[oldest]
        if msg_id in self._seen:
            return False
        self._seen[msg_id] = now
        return True


class InProcessBus:
    """The bus inside one process (asyncio queues): the embedded default of ``dast serve``.

    A durable group's queue lives from the first ``all_events(durable)`` call for as long as
    the bus, so its consumers split everything published since; ``all_events(None)`` receives
    what is published after the call.
    """

    def __init__(
        self, *, dedup_window_seconds: float = DEDUP_WINDOW_SECONDS,
        history: Callable[[], Awaitable[list[Published]]] | None = None,
    ) -> None:
        self._dedup = _Deduplicator(dedup_window_seconds)
        self._history = history
        """Where :meth:`last_events` comes from: the event store of this process, since
        the queues keep nothing once delivered (and nothing across a restart)."""
        self._live: dict[str, weakref.WeakSet[LiveStream]] = {}
        self._groups: dict[str, asyncio.Queue[Published | None]] = {}
        self._ephemeral: weakref.WeakSet[asyncio.Queue[Published | None]] = weakref.WeakSet()
        self._closed = False

    async def start(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """End every open live stream and consumer."""
        self._closed = True
        for queue in [*self._groups.values(), *self._ephemeral]:
            queue.put_nowait(None)
        for streams in list(self._live.values()):
            for stream in list(streams):
                await stream.aclose()
        self._live.clear()

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        """See :meth:`Bus.publish`."""
        check_token("game type", game_type)
        check_token("game id", game_id)
        if self._closed:
            raise RuntimeError("the bus is closed")
        now = asyncio.get_running_loop().time()
        # Who receives is fixed for the whole call (nothing here awaits): look it up once.
        streams = list(self._live.get(game_id, ()))
        queues = [*self._groups.values(), *self._ephemeral] if self._ephemeral else list(
            self._groups.values()
        )
        for entry in entries:
            if not self._dedup.first_time(message_id(game_id, entry.event.seq), now):
                continue
            for stream in streams:
                stream.deliver(entry)
            if queues:
                published = Published(game_type, game_id, entry)
                for queue in queues:
                    queue.put_nowait(published)

    async def last_events(self) -> list[Published]:
        """See :class:`KnowsLastEvents` (none without a ``history``)."""
        return await self._history() if self._history is not None else []

    def live(self, game_id: str) -> LiveStream:
        """See :meth:`Bus.live` (subscribed on return)."""
        stream = LiveStream(game_id, on_close=self._forget)
        self._live.setdefault(game_id, weakref.WeakSet()).add(stream)
        return stream

    def _forget(self, stream: LiveStream) -> None:
        streams = self._live.get(stream.game_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self._live[stream.game_id]

    def all_events(self, durable: str | None = None) -> AsyncIterator[Published]:
        """See :meth:`Bus.all_events` (registered on return, before the first ``__anext__``)."""
        if durable is None:
            queue: asyncio.Queue[Published | None] = asyncio.Queue()
            self._ephemeral.add(queue)
        else:
            queue = self._groups.setdefault(durable, asyncio.Queue())
        return self._drain(queue)

    @staticmethod
    async def _drain(queue: asyncio.Queue[Published | None]) -> AsyncIterator[Published]:
        while (published := await queue.get()) is not None:
            yield published
        queue.put_nowait(None)  # other consumers of a durable group end too


def open_bus(nats_url: str | None, **nats_options: object) -> Bus:
    """The NATS bus for ``nats_url``, or an :class:`InProcessBus` when it is None or empty.

    ``nats_options`` go to :class:`~services.platform.bus_nats.NatsBus` (stream name,
    subject prefix, timeouts).
    """
    if not nats_url:
        return InProcessBus()
    from services.platform.bus_nats import NatsBus

    return NatsBus(nats_url, **nats_options)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def running(bus: Bus) -> AsyncIterator[Bus]:
    """Start ``bus`` and close it on exit."""
    await bus.start()
    try:
        yield bus
    finally:
        await bus.close()
