"""Where a table's talk is kept: a JetStream stream of the deployment, or memory in the
embedded mode, each keeping a message for the retention age and no longer.

Talk is not part of a game's log (it is neither signed nor exported): it belongs to the
table, lives for days, and must be easy to let go of. So it is kept apart, in:

- :class:`NatsTalkLog`: the stream ``D_CHAT`` (subjects ``d.chat.<table_id>.<sender>``,
  :mod:`services.platform.nats_names`; ``<sender>`` is ``p`` and the sender's player id
  in hex, so that any id is one subject token) whose ``max_age`` is the retention age
  (``DAST_CHAT_RETENTION_DAYS``): JetStream deletes older messages by itself, and a
  process starting with another age sets it on the stream. A message's ``seq`` is its
  stream sequence, so a table's messages are ordered and a watch (of
  ``d.chat.<table_id>.*``) resumes after any of them. Erasing a player's talk purges
  ``d.chat.*.<sender>``;
- :class:`MemoryTalkLog`: the same in one process, its ages read from the services' clock
  (:mod:`services.platform.clock`), so that tests move time instead of waiting for it.

Both replay a table's kept messages after a ``seq`` and then follow the new ones, and erase
every message of a player whose account is deleted (:meth:`TalkLog.erase_sender`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Final, Protocol

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext, JetStreamManager
from nats.js.api import ConsumerConfig, DeliverPolicy, StorageType, StreamConfig

from dast.v1 import chat_pb2
from services.platform.bus import check_token
from services.platform.clock import Clock, wall_clock_ms

DAY_MS: Final = 86_400_000


class TalkUnavailable(ConnectionError):
    """Where the talk is kept did not answer (NATS down, or no ack in time)."""


class TalkLog(Protocol):
    """The tables' talk."""

    async def start(self) -> None:
        """Connect (and create or update the stream)."""
        ...

    async def close(self) -> None:
        """Disconnect; watches end."""
        ...

    async def append(self, message: chat_pb2.ChatMessage) -> chat_pb2.ChatMessage:
        """Keep ``message`` (its ``table_id`` names the table); it with its ``seq``.

        :raises ValueError: if the table id cannot be a subject token.
        :raises TalkUnavailable: when the talk cannot be reached.
        """
        ...

    def watch(self, table_id: str, after_seq: int) -> AsyncIterator[chat_pb2.ChatMessage]:
        """The table's kept messages after ``after_seq`` in order, then each new one.

        :raises TalkUnavailable: when the talk cannot be reached.
        """
        ...

    async def erase_sender(self, player_id: str) -> None:
        """Delete every kept message ``player_id`` sent, at every table.

        :raises TalkUnavailable: when the talk cannot be reached.
        """
        ...


class MemoryTalkLog:
    """:class:`TalkLog` in one process: each table's messages in order, dropped once older
    than ``retention_ms`` by ``clock``."""

    def __init__(self, retention_ms: int, *, clock: Clock = wall_clock_ms) -> None:
        self.retention_ms = retention_ms
        self.clock = clock
        self._tables: dict[str, deque[chat_pb2.ChatMessage]] = {}
        self._arrived: dict[str, asyncio.Event] = {}
        self._seq = 0
        self._closed = asyncio.Event()

    async def start(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """End every watch."""
        self._closed.set()
        for arrived in self._arrived.values():
            arrived.set()

    def expire(self) -> int:
        """Drop every message older than the retention age; how many went."""
        return sum(self._expire(table_id) for table_id in list(self._tables))

    def _expire(self, table_id: str) -> int:
        kept = self._tables.get(table_id)
        if kept is None:
            return 0
        oldest = self.clock() - self.retention_ms
        dropped = 0
        while kept and kept[0].at_ms < oldest:
            kept.popleft()
            dropped += 1
        if not kept:
            del self._tables[table_id]
        return dropped

    async def append(self, message: chat_pb2.ChatMessage) -> chat_pb2.ChatMessage:
        """See :meth:`TalkLog.append`."""
        check_token("table id", message.table_id)
        self._expire(message.table_id)
        self._seq += 1
        kept = chat_pb2.ChatMessage()
        kept.CopyFrom(message)
        kept.seq = self._seq
        self._tables.setdefault(message.table_id, deque()).append(kept)
        arrived = self._arrived.pop(message.table_id, None)
        if arrived is not None:
            arrived.set()
        return kept

    async def erase_sender(self, player_id: str) -> None:
        """See :meth:`TalkLog.erase_sender`."""
        for table_id, kept in list(self._tables.items()):
            self._tables[table_id] = deque(m for m in kept if m.sender_id != player_id)

    def kept(self, table_id: str) -> list[chat_pb2.ChatMessage]:
        """The table's messages not yet expired, in order."""
        self._expire(table_id)
        return list(self._tables.get(table_id, ()))

    async def watch(self, table_id: str, after_seq: int
                    ) -> AsyncIterator[chat_pb2.ChatMessage]:
        """See :meth:`TalkLog.watch`."""
        cursor = after_seq
        while not self._closed.is_set():
            arrived = self._arrived.setdefault(table_id, asyncio.Event())
            for message in self.kept(table_id):
                if message.seq > cursor:
                    cursor = message.seq
                    yield message
            await arrived.wait()


class NatsTalkLog:
    """:class:`TalkLog` on the deployment's chat stream."""

    def __init__(self, url: str, *, stream: str, subject_prefix: str, retention_ms: int,
                 request_timeout_seconds: float = 2.0) -> None:
        self.url = url
        self.stream = stream
        self.subject_prefix = subject_prefix
        self.retention_ms = retention_ms
        self._timeout = request_timeout_seconds
        self._nc: Client | None = None

    def jetstream(self) -> JetStreamContext:
        """The JetStream API on this log's connection.

        :raises TalkUnavailable: while it is not connected.
        """
        if self._nc is None or not self._nc.is_connected:
            raise TalkUnavailable("table talk is not connected to NATS")
        return self._nc.jetstream(timeout=self._timeout)

    @property
    def rate_bucket(self) -> str:
        """The key-value bucket of the talkers' send windows beside the stream
        (:mod:`services.chat.send_rate`)."""
        return f"{self.stream}_RATE"

    def stream_config(self) -> StreamConfig:
        """The stream as this process wants it: its age is the retention age."""
        return StreamConfig(name=self.stream, subjects=[f"{self.subject_prefix}.>"],
                            storage=StorageType.FILE, max_age=self.retention_ms / 1000)

    async def start(self) -> None:
        """Connect (reconnecting for ever after); create the stream, or give it this
        process's retention age when an operator changed it."""
        self._nc = await nats.connect(self.url, max_reconnect_attempts=-1,
                                      reconnect_time_wait=0.5)
        jetstream = self.jetstream()
        wanted = self.stream_config()
        try:
            info = await jetstream.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            await jetstream.add_stream(wanted)
            return
        if info.config.max_age != wanted.max_age:
            info.config.max_age = wanted.max_age
            await jetstream.update_stream(info.config)

    async def close(self) -> None:
        """Disconnect."""
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
            self._nc = None

    def subject(self, table_id: str, sender_id: str = "*") -> str:
        """The subject of ``sender_id``'s talk at a table (``*``: everyone's)."""
        sender = sender_id if sender_id == "*" else sender_token(sender_id)
        return f"{self.subject_prefix}.{check_token('table id', table_id)}.{sender}"

    async def append(self, message: chat_pb2.ChatMessage) -> chat_pb2.ChatMessage:
        """See :meth:`TalkLog.append`."""
        subject = self.subject(message.table_id, message.sender_id)
        try:
            ack = await self.jetstream().publish(
                subject, message.SerializeToString(deterministic=True))
        except nats.errors.Error as failed:
            raise TalkUnavailable(f"NATS did not take the message: {failed!r}") from failed
        kept = chat_pb2.ChatMessage()
        kept.CopyFrom(message)
        kept.seq = ack.seq
        return kept

    async def watch(self, table_id: str, after_seq: int
                    ) -> AsyncIterator[chat_pb2.ChatMessage]:
        """See :meth:`TalkLog.watch`: an ordered consumer of the table's subject from the
        stream sequence after ``after_seq``."""
        config = (ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                                 opt_start_seq=after_seq + 1) if after_seq
                  else ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
        try:
            subscription = await self.jetstream().subscribe(
                self.subject(table_id), stream=self.stream, ordered_consumer=True,
                config=config)
        except nats.errors.Error as failed:
            raise TalkUnavailable(f"NATS did not open the watch: {failed!r}") from failed
        try:
            async for msg in subscription.messages:
                message = chat_pb2.ChatMessage()
                message.ParseFromString(msg.data)
                message.seq = msg.metadata.sequence.stream
                yield message
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()


    async def erase_sender(self, player_id: str) -> None:
        """See :meth:`TalkLog.erase_sender`: a purge of the sender's subjects."""
        try:
            await self._jetstream_manager().purge_stream(
                self.stream, subject=f"{self.subject_prefix}.*.{sender_token(player_id)}")
        except nats.errors.Error as failed:
            raise TalkUnavailable(f"NATS did not purge the talk: {failed!r}") from failed

    def _jetstream_manager(self) -> JetStreamManager:
        if self._nc is None or not self._nc.is_connected:
            raise TalkUnavailable("table talk is not connected to NATS")
        return self._nc.jsm(timeout=self._timeout)


def sender_token(player_id: str) -> str:
    """``player_id`` as one subject token (never empty): ``p`` and its UTF-8 bytes in hex."""
    return "p" + player_id.encode("utf-8", errors="surrogatepass").hex()


def open_talk_log(nats_url: str | None, *, stream: str, subject_prefix: str,
                  retention_days: float, clock: Clock = wall_clock_ms) -> TalkLog:
    """The deployment's chat stream on ``nats_url``, or a :class:`MemoryTalkLog` without
    one, keeping messages ``retention_days``."""
    retention_ms = int(retention_days * DAY_MS)
    if not nats_url:
        return MemoryTalkLog(retention_ms, clock=clock)
    return NatsTalkLog(nats_url, stream=stream, subject_prefix=subject_prefix,
                       retention_ms=retention_ms)
