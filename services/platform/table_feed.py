"""The tables' feed: the lobby's table changes as events for whoever follows them.

The lobby owns its tables; other services (stats, a lobby replica's watchers, an operator's
tools) learn what happens to them from this feed, never from the lobby's SQL. Each message
is one ``dast.v1.TableUpdate`` (kind, seat, player, the version it produced, and the table as
it stands, invite code removed) on subject ``<prefix>.<table_id>``:

- :class:`NatsTableFeed`: a JetStream stream (the deployment's: ``DAST_TABLES``, subjects
  ``dast.tables.>`` by default, :mod:`services.platform.nats_names`)
  with ``Nats-Msg-Id = <table_id>:<version>:<ordinal>``, so a republish within the
  duplicate window (a lobby killed between publishing and recording it) is stored once;
- :class:`InProcessTableFeed`: the same for one process (embedded mode), fanned out to the
  followers of this process.

Publishing is at least once past the window: followers key what they apply on
``(table_id, version)``, as the lobby's own watch streams do.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Final, Protocol, runtime_checkable

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy, StorageType, StreamConfig

from dast.v1 import lobby_pb2
from services.platform.bus import check_token
from services.platform.bus_nats import ensure_stream
from services.platform.nats_names import NatsNames

DEFAULT_TABLES_STREAM: Final = NatsNames().tables_stream
"""The default deployment's tables stream."""
DEFAULT_TABLES_PREFIX: Final = NatsNames().tables_prefix
DUPLICATE_WINDOW_SECONDS: Final = 120.0


def update_id(update: lobby_pb2.TableUpdate, ordinal: int) -> str:
    """The message id of the ``ordinal``-th update of a table version."""
    return f"{update.table.table_id}:{update.version}:{ordinal}"


@runtime_checkable
class TableFeed(Protocol):
    """Where the lobby publishes its tables' updates."""

    async def start(self) -> None:
        """Connect (and create the stream when missing)."""
        ...

    async def close(self) -> None:
        """Disconnect; followers end."""
        ...

    async def publish(self, updates: Sequence[lobby_pb2.TableUpdate]) -> None:
        """Publish one table version's updates in order (each carries its table).

        :raises ValueError: if a table id cannot be a subject token.
        :raises Exception: whatever the transport raises when it is down (publish again).
        """
        ...

    def follow(self) -> AsyncIterator[lobby_pb2.TableUpdate]:
        """Every table's updates published from now on (registered on return)."""
        ...


class InProcessTableFeed:
    """:class:`TableFeed` inside one process (asyncio queues)."""

    def __init__(self) -> None:
        self._followers: weakref.WeakSet[asyncio.Queue[lobby_pb2.TableUpdate | None]] = (
            weakref.WeakSet()
        )
        self._seen: dict[str, float] = {}
        self._closed = False

    async def start(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """End every follower."""
        self._closed = True
        for queue in list(self._followers):
            queue.put_nowait(None)

    async def publish(self, updates: Sequence[lobby_pb2.TableUpdate]) -> None:
        """See :meth:`TableFeed.publish` (a repeat within the window is dropped)."""
        now = asyncio.get_running_loop().time()
        self._seen = {key: at for key, at in self._seen.items()
                      if now - at < DUPLICATE_WINDOW_SECONDS}
        for ordinal, update in enumerate(updates):
            check_token("table id", update.table.table_id)
            key = update_id(update, ordinal)
            if key in self._seen:
                continue
            self._seen[key] = now
            for queue in list(self._followers):
                queue.put_nowait(update)

    def follow(self) -> AsyncIterator[lobby_pb2.TableUpdate]:
        """See :meth:`TableFeed.follow`."""
        queue: asyncio.Queue[lobby_pb2.TableUpdate | None] = asyncio.Queue()
        self._followers.add(queue)
        return self._drain(queue)

    @staticmethod
    async def _drain(queue: asyncio.Queue[lobby_pb2.TableUpdate | None]
                     ) -> AsyncIterator[lobby_pb2.TableUpdate]:
        while (update := await queue.get()) is not None:
            yield update


class NatsTableFeed:
    """:class:`TableFeed` on a JetStream stream of its own."""

    def __init__(self, url: str, *, stream: str = DEFAULT_TABLES_STREAM,
                 subject_prefix: str = DEFAULT_TABLES_PREFIX,
                 request_timeout_seconds: float = 2.0) -> None:
        self.url = url
        self.stream = stream
        self.subject_prefix = subject_prefix
        self._timeout = request_timeout_seconds
        self._nc: Client | None = None

    def _jetstream(self) -> JetStreamContext:
        if self._nc is None:
            raise ConnectionError("the table feed is not connected to NATS")
        return self._nc.jetstream(timeout=self._timeout)

    async def start(self) -> None:
        """Connect (reconnecting for ever after) and create the stream when missing."""
        self._nc = await nats.connect(self.url, max_reconnect_attempts=-1,
                                      reconnect_time_wait=0.5)
        await ensure_stream(self._jetstream(), StreamConfig(
            name=self.stream, subjects=[f"{self.subject_prefix}.>"],
            storage=StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_SECONDS,
        ))

    async def close(self) -> None:
        """Disconnect."""
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
            self._nc = None

    def subject(self, table_id: str) -> str:
        """The subject of a table's updates."""
        return f"{self.subject_prefix}.{check_token('table id', table_id)}"

    async def publish(self, updates: Sequence[lobby_pb2.TableUpdate]) -> None:
        """See :meth:`TableFeed.publish`."""
        jetstream = self._jetstream()
        for ordinal, update in enumerate(updates):
            await jetstream.publish(
                self.subject(update.table.table_id),
                update.SerializeToString(deterministic=True),
                headers={"Nats-Msg-Id": update_id(update, ordinal)},
            )

    def follow(self) -> AsyncIterator[lobby_pb2.TableUpdate]:
        """See :meth:`TableFeed.follow`: an ephemeral push consumer of new messages."""
        return self._follow()

    async def _follow(self) -> AsyncIterator[lobby_pb2.TableUpdate]:
        subscription = await self._jetstream().subscribe(
            f"{self.subject_prefix}.>", stream=self.stream, ordered_consumer=True,
            deliver_policy=DeliverPolicy.NEW,
        )
        try:
            async for msg in subscription.messages:
                update = lobby_pb2.TableUpdate()
                update.ParseFromString(msg.data)
                yield update
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()


def open_table_feed(nats_url: str | None, **options: str) -> TableFeed:
    """The NATS feed for ``nats_url``, or an :class:`InProcessTableFeed` without one."""
    if not nats_url:
        return InProcessTableFeed()
    return NatsTableFeed(nats_url, **options)  # type: ignore[arg-type]
