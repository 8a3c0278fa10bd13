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
import contextlib
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import Final, Protocol

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js.api import StorageType
from nats.js.kv import KeyValue

from services.platform.clock import wall_clock_ms
from services.platform.config import masked_url
from services.platform.presence_kv import connect_nats, open_bucket

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


class NatsRevocations(_Mirror):
    """:class:`Revocations` over a JetStream key-value bucket (see the module docstring).

    It connects in the background (NATS may be down when the process starts, or go away
    later); the watcher starts again from a fresh snapshot after an error and whenever it
    has been silent for ``resync_ms``, so a watch that died quietly is replaced and what
    was missed meanwhile arrives.
    """

    def __init__(self, url: str, *, bucket: str, keep_ms: int, resync_ms: int = 30_000,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        super().__init__(keep_ms, clock)
        self.url = url
        self.bucket = bucket
        self.resync_ms = resync_ms
        self._nc: Client | None = None
        self._kv: KeyValue | None = None
        self._pending: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = asyncio.Event()

    async def start(self, *, wait_seconds: float = 5.0) -> None:
        """Start connecting, mirroring and publishing; wait up to ``wait_seconds`` for the
        first snapshot (with NATS down it starts anyway, and catches up once it is back)."""
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._watch(), name=f"revocations:{self.bucket}"),
                asyncio.create_task(self._publish(), name=f"revoking:{self.bucket}"),
            ]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait_seconds)

    async def revoke(self, session_ids: Iterable[str]) -> None:
        """See :class:`Revocations`: refused here at once, published in the background."""
        until = self._clock() + self.keep_ms
        for session_id in session_ids:
            if not _KEY.fullmatch(session_id):
                _log.warning("not publishing the revocation of a malformed session id")
                continue
            self._learn(session_id, until)
            self._pending[session_id] = until
        self._wake.set()

    async def _connected(self) -> KeyValue:
        if self._kv is not None:
            return self._kv
        if self._nc is None:
            self._nc = await connect_nats(self.url)
        self._kv = await open_bucket(self._nc, self.bucket, ttl_seconds=self.keep_ms / 1000,
                                     storage=StorageType.FILE)
        return self._kv

    async def _watch(self) -> None:
        while True:
            try:
                await self._watch_once(await self._connected())
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("revocation bucket %s at %s: watching again", self.bucket,
                             masked_url(self.url), exc_info=True)
                await asyncio.sleep(1.0)

    async def _watch_once(self, kv: KeyValue) -> None:
        """Mirror the bucket from a snapshot until the watch fails or falls silent."""
        watcher = await kv.watchall()
        try:
            while True:
                try:
                    entry = await watcher.updates(  # type: ignore[no-untyped-call]
                        timeout=self.resync_ms / 1000)
                except nats.errors.TimeoutError:
                    return  # silent too long: start again from a snapshot
                if entry is None:  # the end of the snapshot
                    self._ready.set()
                    self._forget_expired()
                    continue
                if entry.operation in ("DEL", "PURGE") or not entry.value:
                    continue  # a revocation is never taken back: it only expires
                try:
                    until = int(json.loads(entry.value)["until"])
                except (ValueError, KeyError, TypeError):
                    _log.warning("ignoring a malformed revocation %s", entry.key)
                    continue
                self._learn(entry.key, until)
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]

    async def _publish(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                try:
                    kv = await self._connected()
                    for session_id, until in list(self._pending.items()):
                        await kv.put(session_id, json.dumps({"until": until}).encode())
                        if self._pending.get(session_id) == until:
                            del self._pending[session_id]
                except asyncio.CancelledError:
                    raise
                except Exception:
                    _log.warning("revocation bucket %s at %s: publishing again in 1 s "
                                 "(%d waiting)", self.bucket, masked_url(self.url),
                                 len(self._pending), exc_info=True)
                    await asyncio.sleep(1.0)

    @property
    def waiting(self) -> int:
        """Revocations not yet published."""
        return len(self._pending)

    async def close(self) -> None:
        """See :class:`Revocations`."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
        self._nc, self._kv = None, None


def open_revocations(nats_url: str | None, *, bucket: str, access_minutes: int,
                     clock: Callable[[], int] = wall_clock_ms) -> Revocations:
    """The revocation list of a deployment: JetStream's when ``nats_url`` is set, else in
    memory; revocations are kept ``access_minutes`` (the access tokens' lifetime) and a
    minute."""
    keep_ms = access_minutes * 60_000 + CLOCK_SKEW_MS
    if nats_url:
        return NatsRevocations(nats_url, bucket=bucket, keep_ms=keep_ms, clock=clock)
    return InProcessRevocations(keep_ms=keep_ms, clock=clock)


class _OpenStream:
    """One open server stream of a session: its task, and whether it is suspended at a
    message it handed to gRPC (then it is not cancelled: it ends when it resumes)."""

    __slots__ = ("at_yield", "revoked", "task")

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self.task = task
        self.at_yield = False
        self.revoked = False

    def end(self) -> None:
        self.revoked = True
        if not self.at_yield and self.task is not None:
            self.task.cancel()


class SessionStreams:
    """The server streams open in this process, by session id: :meth:`revoked` ends a
    session's streams (each then answers UNAUTHENTICATED ``session_revoked``), wherever
    they wait: a stream waiting for its next event is cancelled, one handing a message to
    gRPC ends as soon as that is sent."""

    def __init__(self) -> None:
        self._open: dict[str, set[_OpenStream]] = {}

    def __len__(self) -> int:
        return sum(len(streams) for streams in self._open.values())

    def enter(self, session_id: str) -> _OpenStream:
        """Register the stream the current task serves for ``session_id``."""
        stream = _OpenStream(asyncio.current_task())
        self._open.setdefault(session_id, set()).add(stream)
        return stream

    def leave(self, session_id: str, stream: _OpenStream) -> None:
        """The stream ended."""
        streams = self._open.get(session_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self._open[session_id]

    def revoked(self, session_id: str) -> None:
        """End every open stream of ``session_id`` (a :data:`Listener`)."""
        for stream in self._open.pop(session_id, set()):
            stream.end()
