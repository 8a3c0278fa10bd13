"""Table talk's per-player rate shared by every lobby replica of a deployment.

Each replica counting its own messages would let a player whose calls land on three
replicas say three times the quota. So on NATS a player's recent messages are one entry of
a key-value bucket beside the chat stream (``D_CHAT_RATE``, :mod:`services.platform.nats_names`):
the send times of their last ``messages`` messages, under the player's subject token. A
message is counted by writing the entry back only if nobody wrote it since it was read
(the entry's revision); a replica that lost that race reads again. The bucket keeps an
entry one window past its last write, so idle players cost nothing. It lives in memory:
a NATS restart forgets the windows, which lets a player say one window's quota again at
worst.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

import nats
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from services.chat.rules import RateWindows, SendRate, rate_limited
from services.chat.talk_log import NatsTalkLog, TalkLog, TalkUnavailable, sender_token

ATTEMPTS: Final = 8
"""Reads and writes a message gets before it is refused as if the window were full: a
player racing themselves over several replicas more than this is flooding."""


def _times(raw: bytes) -> list[int]:
    """The send times an entry holds (nothing for an entry that is not a list of times:
    nothing but this module writes the bucket, so that is a damaged entry, forgotten)."""
    try:
        times = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(times, list) or not all(type(t) is int for t in times):
        return []
    return times


class NatsSendRate:
    """:class:`~services.chat.rules.SendRate` in the key-value bucket ``bucket``, on the
    connection ``jetstream`` gives (the talk log's)."""

    def __init__(self, jetstream: Callable[[], JetStreamContext], bucket: str, *,
                 messages: int, window_ms: int) -> None:
        self._jetstream = jetstream
        self.bucket = bucket
        self.messages = messages
        self.window_ms = window_ms
        self._kv: KeyValue | None = None

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            jetstream = self._jetstream()
            try:
                self._kv = await jetstream.key_value(self.bucket)
            except nats.js.errors.BucketNotFoundError:
                self._kv = await jetstream.create_key_value(KeyValueConfig(
                    bucket=self.bucket, history=1, storage=StorageType.MEMORY,
                    ttl=self.window_ms / 1000 + 1))
        return self._kv

    async def take(self, player_id: str, now_ms: int) -> None:
        """See :meth:`~services.chat.rules.SendRate.take`.

        :raises TalkUnavailable: when NATS does not answer.
        """
        key = sender_token(player_id)
        try:
            bucket = await self._bucket()
            for _ in range(ATTEMPTS):
                try:
                    entry = await bucket.get(key)
                except nats.js.errors.KeyNotFoundError:
                    sent, revision = [], None
                else:
                    sent, revision = _times(entry.value or b""), entry.revision
                recent = sorted(t for t in sent if now_ms - self.window_ms < t <= now_ms)
                if len(recent) >= self.messages:
                    raise rate_limited(self.messages, self.window_ms,
                                       recent[-self.messages] + self.window_ms - now_ms)
                written = json.dumps([*recent[-(self.messages - 1):], now_ms]
                                     if self.messages > 1 else [now_ms]).encode()
                try:
                    if revision is None:
                        await bucket.create(key, written)
                    else:
                        await bucket.update(key, written, last=revision)
                    return
                except nats.js.errors.KeyWrongLastSequenceError:
                    continue  # another replica counted a message of theirs meanwhile
        except nats.errors.Error as failed:
            raise TalkUnavailable(f"NATS did not count the message: {failed!r}") from failed
        raise rate_limited(self.messages, self.window_ms, 1000)


def send_rate_of(talk: TalkLog, messages: int, window_ms: int) -> SendRate:
    """Where the windows of talk kept in ``talk`` are counted: beside its stream on NATS,
    in the process otherwise (the embedded backend's one lobby)."""
    if isinstance(talk, NatsTalkLog):
        return NatsSendRate(talk.jetstream, talk.rate_bucket, messages=messages,
                            window_ms=window_ms)
    return RateWindows(messages, window_ms)
