"""Revoked sessions, seen by every replica: an access token of a session that ended (signed
out, signed out everywhere, a reused refresh token) stops working on every server at once,
not when it expires.

The accounts service publishes each session it ends (:meth:`Revocations.revoke`); every
server's token check asks :meth:`Revocations.is_revoked` about the ``sid`` of each call's
token (after its cache: a dictionary lookup), and :class:`SessionStreams` ends the open
streams of a revoked session. Two lists behind one interface:

- :class:`InProcessRevocations` for one process (embedded mode, tests);
- :class:`NatsRevocations`, a JetStream key-value bucket (the deployment's ``<D>_REVOKED``,
  :mod:`services.platform.nats_names`; key the session id, value until when it matters)
  whose entries expire after the longest access token's lifetime (and a minute of clock
  skew): past that, the session's tokens have expired anyway. A watcher mirrors the bucket
  in memory, so a check costs no request.

NATS away. A replica cut off from NATS keeps refusing every session its mirror holds, and
learns the revocations it missed when it reaches NATS again (the watch starts over from a
snapshot of the bucket). Until then it accepts the access tokens of sessions revoked
meanwhile: the window is the outage (at most the tokens' lifetime, 15 minutes by default).
A revocation the accounts service cannot publish at once stays queued and is retried every
second while that process runs; the session is refused on that process at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import Final, Protocol

import grpc

from services.platform.clock import wall_clock_ms
from services.platform.errors import Reason, rich_status
from services.platform.kv_mirror import MirroredBucket

_log = logging.getLogger(__name__)

CLOCK_SKEW_MS: Final = 60_000
"""Added to the access tokens' lifetime: how long a revocation is kept."""
_KEY: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a session id looks like (the accounts service's are URL-safe base64): a valid
key-value key as it is."""

Listener = Callable[[str], None]
"""Told the id of each session newly known to be revoked."""


class Revocations(Protocol):
    """Where ended sessions are published and every server reads them."""

    async def start(self) -> None:
        """Connect (idempotent)."""
        ...

    async def revoke(self, session_ids: Iterable[str]) -> None:
        """Publish that ``session_ids`` ended (refused here at once)."""
        ...

    def is_revoked(self, session_id: str) -> bool:
        """Whether ``session_id`` is known to be revoked."""
        ...

    def listen(self, listener: Listener) -> None:
        """Call ``listener`` with each session newly known to be revoked, here or elsewhere."""
        ...

    async def close(self) -> None:
        """Disconnect."""
        ...


class _Mirror:
    """The revoked sessions known here, each until its tokens have expired."""

    def __init__(self, keep_ms: int, clock: Callable[[], int]) -> None:
        self.keep_ms = keep_ms
        self._clock = clock
        self._until: dict[str, int] = {}
        self._listeners: list[Listener] = []

    def is_revoked(self, session_id: str) -> bool:
        """See :class:`Revocations`."""
        until = self._until.get(session_id)
        if until is None:
            return False
        if until > self._clock():
            return True
        del self._until[session_id]
        return False

    def listen(self, listener: Listener) -> None:
        """See :class:`Revocations`."""
        self._listeners.append(listener)

    def _learn(self, session_id: str, until_ms: int) -> None:
        if until_ms <= self._clock():
            return
        known = self._until.get(session_id)
        self._until[session_id] = max(until_ms, known or 0)
        if known is None:
            for listener in self._listeners:
                listener(session_id)

    def _forget_expired(self) -> None:
        now = self._clock()
        for session_id, until in list(self._until.items()):
            if until <= now:
                del self._until[session_id]


class InProcessRevocations(_Mirror):
    """:class:`Revocations` in memory, for one process."""

    def __init__(self, *, keep_ms: int = 15 * 60_000 + CLOCK_SKEW_MS,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        super().__init__(keep_ms, clock)

    async def start(self) -> None:
        """See :class:`Revocations`."""

    async def revoke(self, session_ids: Iterable[str]) -> None:
        """See :class:`Revocations`."""
        until = self._clock() + self.keep_ms
        for session_id in session_ids:
            self._learn(session_id, until)
        self._forget_expired()

    async def close(self) -> None:
        """See :class:`Revocations`."""


class NatsRevocations(MirroredBucket, _Mirror):
    """:class:`Revocations` over a JetStream key-value bucket (see the module docstring and
    :class:`~services.platform.kv_mirror.MirroredBucket`, which connects, watches and
    publishes)."""

    def __init__(self, url: str, *, bucket: str, keep_ms: int, resync_ms: int = 30_000,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        MirroredBucket.__init__(self, url, bucket=bucket, ttl_seconds=keep_ms / 1000,
                                resync_ms=resync_ms)
        _Mirror.__init__(self, keep_ms, clock)

    async def revoke(self, session_ids: Iterable[str]) -> None:
        """See :class:`Revocations`: refused here at once, published in the background."""
        until = self._clock() + self.keep_ms
        for session_id in session_ids:
            if not _KEY.fullmatch(session_id):
                _log.warning("not publishing the revocation of a malformed session id")
                continue
            self._learn(session_id, until)
            self._queue(session_id, json.dumps({"until": until}).encode())

    def _apply(self, key: str, value: bytes | None) -> None:
        if value is None:
            return  # a revocation is never taken back: it only expires
        try:
            until = int(json.loads(value)["until"])
        except (ValueError, KeyError, TypeError):
            _log.warning("ignoring a malformed revocation %s", key)
            return
        self._learn(key, until)

    def _snapshot_done(self) -> None:
        self._forget_expired()


def open_revocations(nats_url: str | None, *, bucket: str, access_minutes: int,
                     clock: Callable[[], int] = wall_clock_ms) -> Revocations:
    """The revocation list of a deployment: JetStream's when ``nats_url`` is set, else in
    memory; revocations are kept ``access_minutes`` (the access tokens' lifetime) and a
    minute."""
    keep_ms = access_minutes * 60_000 + CLOCK_SKEW_MS
    if nats_url:
        return NatsRevocations(nats_url, bucket=bucket, keep_ms=keep_ms, clock=clock)
    return InProcessRevocations(keep_ms=keep_ms, clock=clock)


REVOKED_STATUS: Final = rich_status(
    grpc.StatusCode.UNAUTHENTICATED, Reason.SESSION_REVOKED,
    "this stream's session was signed out (or ended): sign in again")
"""How a stream of a revoked session ends."""


class OpenStream:
    """One open server stream: its task, whether it is suspended at a message it handed to
    gRPC (then it is not cancelled: it ends when it resumes), and the status it must end
    with once ended."""

    __slots__ = ("at_yield", "ended_with", "task")

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self.task = task
        self.at_yield = False
        self.ended_with: grpc.Status | None = None

    def end(self, status: grpc.Status) -> None:
        if self.ended_with is None:
            self.ended_with = status
        if not self.at_yield and self.task is not None:
            self.task.cancel()


class SessionStreams:
    """The server streams open in this process, each under the keys it may be ended by (its
    session id, its player): :meth:`end` ends the streams of a key with a status (a
    revoked session's with UNAUTHENTICATED ``session_revoked``, :meth:`revoked`; a banned
    player's with their ban), wherever they wait: a stream waiting for its next event is
    cancelled, one handing a message to gRPC ends as soon as that is sent."""

    def __init__(self) -> None:
        self._open: dict[str, set[OpenStream]] = {}

    def __len__(self) -> int:
        return len({stream for streams in self._open.values() for stream in streams})

    def enter(self, keys: Iterable[str]) -> OpenStream:
        """Register the stream the current task serves under each of ``keys``."""
        stream = OpenStream(asyncio.current_task())
        for key in keys:
            self._open.setdefault(key, set()).add(stream)
        return stream

    def leave(self, keys: Iterable[str], stream: OpenStream) -> None:
        """The stream ended."""
        for key in keys:
            streams = self._open.get(key)
            if streams is not None:
                streams.discard(stream)
                if not streams:
                    del self._open[key]

    def end(self, key: str, status: grpc.Status) -> None:
        """End every open stream registered under ``key`` with ``status``."""
        for stream in self._open.pop(key, set()):
            stream.end(status)

    def revoked(self, session_id: str) -> None:
        """End every open stream of ``session_id`` (a :data:`Listener`)."""
        self.end(session_id, REVOKED_STATUS)
