"""The event bus on NATS JetStream, for several processes and replicas.

One stream (the deployment's ``<D>_EVENTS``: ``DAST_EVENTS`` by default,
:mod:`services.platform.nats_names`) holds subjects ``<prefix>.<game_type>.<game_id>``
(``dast.events.hokm.<id>``); every message is a serialized ``dast.v1.LogEntry`` with header
``Nats-Msg-Id: <game_id>:<seq>``, so a relay that resends within the stream's duplicate window
(2 minutes here) creates no duplicate. Past the window, the relay asks
:meth:`NatsBus.last_published_seq` (the last message on the game's subject) what the stream
already holds, and publishes only what follows.

Known traps (docs/architecture.md) and how this module meets them:

- Expected-last-subject-sequence is a *stream* sequence, not a game's seq, and a wrong one
  fails with err_code 10071 or 10164. We do not use it: the store's primary key already
  serializes each game, and the message id makes resends harmless.
- JetStream fsyncs every 2 minutes by default, so a server crash can lose acknowledged
  messages. The store stays the source of truth (the relay never deletes what it sent); run
  nats-server >= 2.10 with ``jetstream { sync_interval: always }`` where losing the stream's
  tail matters.
- A nats-py pull subscription can be dead after a server restart (consumer gone, or its
  inbox subscription stale): :meth:`NatsBus.all_events` re-creates it after errors.
- Asking for the last message of a subject that has none (or of a stream not created yet)
  fails with a 404 ``NotFoundError`` rather than returning nothing; while NATS is down it
  fails with a timeout, a closed connection or a 503 ``ServiceUnavailableError`` (an
  ``APIError`` too, so only ``NotFoundError`` may mean "nothing there").
- Live streams use plain core subscriptions on ``<prefix>.*.<game_id>``: they see every
  publish, including a resend that the stream deduplicates, so :class:`LiveStream` drops
  repeats by seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

from services.platform.bus import (
    DEDUP_WINDOW_SECONDS,
    LiveStream,
    LogEntry,
    Published,
    check_token,
    message_id,
    raise_if_cancelling,
)
from services.platform.config import masked_url
from services.platform.nats_names import NatsNames

log = logging.getLogger(__name__)

DEFAULT_STREAM: Final = NatsNames().events_stream
"""The default deployment's events stream."""
DEFAULT_SUBJECT_PREFIX: Final = NatsNames().events_prefix


async def ensure_stream(jetstream: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream ``config`` describes unless one of that name exists."""
    assert config.name is not None
    try:
        await jetstream.stream_info(config.name)
    except nats.js.errors.NotFoundError:
        await jetstream.add_stream(config)


class BusUnavailable(ConnectionError):
    """Raised while the bus has never reached NATS (games go on; the relay retries)."""


@dataclass
class _LiveGame:
    """The core subscription of one game shared by this process's live streams."""

    streams: weakref.WeakSet[LiveStream] = field(default_factory=weakref.WeakSet)
    subscribing: asyncio.Task[Subscription] | None = None


class NatsBus:
    """:class:`~services.platform.bus.Bus` on NATS JetStream.

    ``stream`` and ``subject_prefix`` are parameters so that deployments (and tests) on one
    server stay apart: the composition passes the deployment's
    (:class:`~services.platform.nats_names.NatsNames`).
    """

    def __init__(
        self,
        url: str,
        *,
        stream: str = DEFAULT_STREAM,
        subject_prefix: str = DEFAULT_SUBJECT_PREFIX,
        duplicate_window_seconds: float = DEDUP_WINDOW_SECONDS,
        request_timeout_seconds: float = 2.0,
        ack_wait_seconds: float = 30.0,
        fetch_batch: int = 16,
        connect_wait_seconds: float = 2.0,
        name: str | None = None,
    ) -> None:
        self.url = url
        self.stream = stream
        self.subject_prefix = subject_prefix
        self._duplicate_window = duplicate_window_seconds
        self._timeout = request_timeout_seconds
        self._ack_wait = ack_wait_seconds
        self._fetch_batch = fetch_batch
        self._name = name
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._live: dict[str, _LiveGame] = {}
        self._connect_wait = connect_wait_seconds
        self._last_error_log = -1e9
        self._ready = asyncio.Event()
        self._closed = False
        self._connector: asyncio.Task[None] | None = None

    @property
    def _jetstream(self) -> JetStreamContext:
        if self._js is None:
            raise BusUnavailable(f"not connected to NATS at {masked_url(self.url)}")
        return self._js

    @property
    def connected(self) -> bool:
        """True once the first connection succeeded (nats-py then reconnects on its own)."""
        return self._js is not None

    async def start(self) -> None:
        """Connect and create the stream if missing; if NATS is down, keep trying in the background.

        Waits up to ``connect_wait_seconds``. Games go on meanwhile (docs/architecture.md "Event
        store and bus"): until the first
        connection, :meth:`publish` and :meth:`LiveStream.ensure_subscribed` raise
        :class:`BusUnavailable`, and consumers wait.

        :raises nats.js.errors.APIError: if JetStream refuses the stream (e.g. a subject clash).
        """
        self._connector = asyncio.get_running_loop().create_task(self._connect())
        done, _ = await asyncio.wait({self._connector}, timeout=self._connect_wait)
        if done:
            self._connector.result()
        else:
            log.warning(
                "NATS at %s is unreachable; connecting in the background", masked_url(self.url)
            )

    async def _connect(self) -> None:
        # max_reconnect_attempts=-1 makes nats-py retry the first connection forever too.
        connection = await nats.connect(
            self.url,
            name=self._name,
            allow_reconnect=True,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            connect_timeout=2,
            error_cb=self._on_error,
        )
        self._nc = connection
        jetstream = connection.jetstream(timeout=self._timeout)
        while True:
            try:
                await ensure_stream(jetstream, self._stream_config())
                break
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError) as error:
                log.warning("JetStream is not answering yet (%r); retrying", error)
                await asyncio.sleep(0.5)
        self._js = jetstream
        self._ready.set()
        for game_id, game in self._live.items():  # streams opened while NATS was down
            if game.subscribing is None:
                game.subscribing = self._subscribe_task(game_id)

    async def _on_error(self, error: Exception) -> None:
        # During an outage nats-py reports every failed attempt: log one line per 10 seconds.
        now = time.monotonic()
        if now - self._last_error_log >= 10.0:
            self._last_error_log = now
            log.warning("nats: %r", error)

    def _stream_config(self) -> StreamConfig:
        return StreamConfig(
            name=self.stream,
            subjects=[f"{self.subject_prefix}.>"],
            storage=StorageType.FILE,
            duplicate_window=self._duplicate_window,
        )

    async def ensure_stream(self) -> None:
        """Create the stream unless it exists (identical configs from replicas are idempotent)."""
        await ensure_stream(self._jetstream, self._stream_config())

    async def close(self) -> None:
        """End live streams and consumers, and close the connection."""
        self._closed = True
        if self._connector is not None:
            self._connector.cancel()
            with contextlib.suppress(BaseException):
                await self._connector
        for game in list(self._live.values()):
            for stream in list(game.streams):
                await stream.aclose()
        self._live.clear()
        if self._nc is not None and not self._nc.is_closed:
            await self._nc.close()

    def subject(self, game_type: str, game_id: str) -> str:
        """The subject of a game's events."""
        game_type = check_token("game type", game_type)
        return f"{self.subject_prefix}.{game_type}.{check_token('game id', game_id)}"

    async def publish(self, game_type: str, game_id: str, entries: Sequence[LogEntry]) -> None:
        """See :meth:`Bus.publish`; waits for JetStream's ack of each entry, in order.

        :raises nats.errors.Error: when the server is unreachable or does not ack in time.
        """
        subject = self.subject(game_type, game_id)
        for entry in entries:
            headers = {"Nats-Msg-Id": message_id(game_id, entry.event.seq)}
            payload = entry.SerializeToString(deterministic=True)
            try:
                await self._jetstream.publish(subject, payload, headers=headers)
            except nats.js.errors.NoStreamResponseError:
                # A server that lost its store (or a fresh one) has no stream: make it, retry.
                await self.ensure_stream()
                await self._jetstream.publish(subject, payload, headers=headers)

    async def last_published_seq(self, game_type: str, game_id: str) -> int:
        """See :meth:`~services.platform.bus.RemembersPublished.last_published_seq`: the seq
        of the last message on the game's subject (0 when there is none). Relays publish a
        game's events in seq order, one relay at a time, so the last message holds the
        highest seq.

        :raises nats.errors.Error: when the server is unreachable or does not answer in time.
        """
        subject = self.subject(game_type, game_id)
        try:
            last = await self._jetstream.get_last_msg(self.stream, subject)
        except nats.js.errors.NotFoundError:
            return 0  # nothing on the subject yet, or no stream yet (a fresh server)
        if not last.data:
            raise ValueError(f"the last message on {subject} carries no log entry")
        return int(LogEntry.FromString(last.data).event.seq)

    async def last_events(self) -> list[Published]:
        """The last message on every game's subject (see
        :class:`~services.platform.bus.KnowsLastEvents`): an ephemeral consumer delivering the
        last message per subject, read until it has nothing pending.

        :raises BusUnavailable: while NATS was never reached.
        """
        config = ConsumerConfig(ack_policy=AckPolicy.NONE,
                                deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
        subscription = await self._jetstream.pull_subscribe(
            f"{self.subject_prefix}.>", stream=self.stream, config=config
        )
        found: list[Published] = []
        try:
            pending = (await subscription.consumer_info()).num_pending or 0
            while pending > 0:
                msgs = await subscription.fetch(min(pending, 256), timeout=self._timeout)
                found.extend(self.published(msg) for msg in msgs)
                pending = msgs[-1].metadata.num_pending if msgs else 0
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
        return found

    def live(self, game_id: str) -> LiveStream:
        """See :meth:`Bus.live`; one core subscription per game serves all local streams."""
        check_token("game id", game_id)
        game = self._live.setdefault(game_id, _LiveGame())
        failed = (
            game.subscribing is not None
            and game.subscribing.done()
            and (game.subscribing.cancelled() or game.subscribing.exception() is not None)
        )
        if self.connected and (game.subscribing is None or failed):
            game.subscribing = self._subscribe_task(game_id)

        async def subscribed() -> None:
            if game.subscribing is None or self._nc is None:
                raise BusUnavailable(f"not connected to NATS at {masked_url(self.url)}")
            await game.subscribing
            await self._nc.flush(timeout=max(1, round(self._timeout)))

        stream = LiveStream(game_id, subscribed=subscribed, on_close=self._forget)
        game.streams.add(stream)
        return stream

    def _subscribe_task(self, game_id: str) -> asyncio.Task[Subscription]:
        task = asyncio.get_running_loop().create_task(self._subscribe(game_id))
        # A failure surfaces through ensure_subscribed(); the next live() call retries.
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        return task

    async def _subscribe(self, game_id: str) -> Subscription:
        if self._nc is None:
            raise BusUnavailable(f"not connected to NATS at {masked_url(self.url)}")

        async def deliver(msg: Msg) -> None:
            game = self._live.get(game_id)
            if game is None:
                return
            entry = LogEntry()
            entry.ParseFromString(msg.data)
            for stream in list(game.streams):
                stream.deliver(entry)
            if not game.streams:  # every stream was dropped without aclose()
                self._unsubscribe(game_id)

        return await self._nc.subscribe(f"{self.subject_prefix}.*.{game_id}", cb=deliver)

    def _forget(self, stream: LiveStream) -> None:
        game = self._live.get(stream.game_id)
        if game is not None:
            game.streams.discard(stream)
            if not game.streams:
                self._unsubscribe(stream.game_id)

    def _unsubscribe(self, game_id: str) -> None:
        game = self._live.pop(game_id, None)
        if game is None or game.subscribing is None:
            return
        task = game.subscribing

        async def unsubscribe() -> None:
            with contextlib.suppress(Exception):
                await (await task).unsubscribe()

        asyncio.get_running_loop().create_task(unsubscribe())

    def all_events(self, durable: str | None = None) -> AsyncIterator[Published]:
        """See :meth:`Bus.all_events`: a pull consumer (durable ones start at the stream's head).

        Consumers sharing ``durable`` share one JetStream durable consumer, so replicas split
        the work; ``None`` makes an ephemeral consumer that starts with new messages.
        """
        return self._consume(durable)

    async def _pull_subscription(self, durable: str | None) -> JetStreamContext.PullSubscription:
        config = ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL if durable else DeliverPolicy.NEW,
            ack_wait=self._ack_wait,
        )
        return await self._jetstream.pull_subscribe(
            f"{self.subject_prefix}.>", durable=durable, stream=self.stream, config=config
        )

    def published(self, msg: Msg) -> Published:
        """The event a message of this bus's stream carries (its game from the subject).

        :raises google.protobuf.message.DecodeError: if the payload is no ``LogEntry``.
        """
        game_type, _, game_id = msg.subject[len(self.subject_prefix) + 1 :].partition(".")
        entry = LogEntry()
        entry.ParseFromString(msg.data)
        return Published(game_type, game_id, entry)

    async def _consume(self, durable: str | None) -> AsyncIterator[Published]:
        pulls = pull_batches(lambda: self._pull_subscription(durable), self._fetch_batch,
                             timeout=1.0, name=repr(durable),
                             running=lambda: not self._closed, ready=self._ready)
        async with contextlib.aclosing(pulls):
            async for msgs in pulls:
                for msg in msgs:
                    yield self.published(msg)
                    with contextlib.suppress(nats.errors.Error):
                        await msg.ack()


async def pull_batches(
    subscribe: Callable[[], Awaitable[JetStreamContext.PullSubscription]], batch: int, *,
    timeout: float, name: str, running: Callable[[], bool] = lambda: True,
    ready: asyncio.Event | None = None,
) -> AsyncGenerator[list[Msg], None]:
    """Up to ``batch`` messages at a time from the pull consumer ``subscribe()`` makes, while
    ``running()`` (and, with ``ready``, once it is set: a consumer waits out an outage at
    start-up). After an error the subscription is made again, backing off from 0.1 to 5 s:
    after a NATS restart the consumer, or the inbox, may be gone. A fetch that finds
    nothing within ``timeout`` just fetches again. Close the generator (``aclosing``) to
    unsubscribe at once."""
    subscription: JetStreamContext.PullSubscription | None = None
    backoff = 0.1
    try:
        while running():
            raise_if_cancelling()
            if ready is not None:
                await ready.wait()
            try:
                if subscription is None:
                    subscription = await subscribe()
                msgs = await subscription.fetch(batch, timeout=timeout)
            except nats.errors.TimeoutError:
                continue  # nothing new within the fetch timeout
            except (nats.errors.Error, OSError) as error:
                log.info("re-creating the pull consumer %s after %r", name, error)
                if subscription is not None:
                    with contextlib.suppress(Exception):
                        await subscription.unsubscribe()
                subscription = None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.1
            yield msgs
    finally:
        if subscription is not None:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
