"""A JetStream key-value bucket mirrored in memory, and written to in the background: the
shape the revocation list (:mod:`services.platform.revocations`) and the ban list
(:mod:`services.platform.bans`) share.

:class:`MirroredBucket` connects in the background (NATS may be down when the process
starts, or go away later), watches the whole bucket and hands each entry to
:meth:`MirroredBucket._apply` (a deletion as ``None``), so that every read is a dictionary
lookup and costs no request. The watch starts again from a fresh snapshot after an error and
whenever it has been silent for ``resync_ms``, so a watch that died quietly is replaced and
what was missed meanwhile arrives.

Writes (:meth:`MirroredBucket._queue`) are queued and published by a task of their own,
retried every second while NATS is away, the newest value of a key winning; the caller has
applied them to its own mirror already, so this process acts on them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import nats.errors
from nats.aio.client import Client
from nats.js.api import StorageType
from nats.js.kv import KeyValue

from services.platform.config import masked_url
from services.platform.presence_kv import connect_nats, open_bucket

_log = logging.getLogger(__name__)


class MirroredBucket:
    """See the module docstring. ``ttl_seconds``: how long the bucket keeps an entry when
    this process makes it (0: until deleted)."""

    def __init__(self, url: str, *, bucket: str, ttl_seconds: float,
                 resync_ms: int = 30_000) -> None:
        self.url = url
        self.bucket = bucket
        self.ttl_seconds = ttl_seconds
        self.resync_ms = resync_ms
        self._nc: Client | None = None
        self._kv: KeyValue | None = None
        self._pending: dict[str, bytes | None] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = asyncio.Event()

    def _apply(self, key: str, value: bytes | None) -> None:
        """Take in one entry of the bucket (``None``: the key was deleted or purged)."""
        raise NotImplementedError

    def _snapshot_started(self) -> None:
        """A watch starts over: the entries of a snapshot of the bucket follow."""

    def _snapshot_done(self) -> None:
        """The watch has delivered every entry the bucket held when it started."""

    async def start(self, *, wait_seconds: float = 5.0) -> None:
        """Start connecting, mirroring and publishing; wait up to ``wait_seconds`` for the
        first snapshot (with NATS down it starts anyway, and catches up once it is back)."""
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._watch(), name=f"mirror:{self.bucket}"),
                asyncio.create_task(self._publish(), name=f"publish:{self.bucket}"),
            ]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait_seconds)

    def _queue(self, key: str, value: bytes | None) -> None:
        """Publish ``value`` under ``key`` (``None``: delete it) in the background."""
        self._pending[key] = value
        self._wake.set()

    @property
    def waiting(self) -> int:
        """Writes not yet published."""
        return len(self._pending)

    async def _connected(self) -> KeyValue:
        if self._kv is not None:
            return self._kv
        if self._nc is None:
            self._nc = await connect_nats(self.url)
        self._kv = await open_bucket(self._nc, self.bucket, ttl_seconds=self.ttl_seconds,
                                     storage=StorageType.FILE)
        return self._kv

    async def _watch(self) -> None:
        while True:
            try:
                await self._watch_once(await self._connected())
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("bucket %s at %s: watching again", self.bucket,
                             masked_url(self.url), exc_info=True)
                await asyncio.sleep(1.0)

    async def _watch_once(self, kv: KeyValue) -> None:
        """Mirror the bucket from a snapshot until the watch fails or falls silent."""
        watcher = await kv.watchall()
        self._snapshot_started()
        try:
            while True:
                try:
                    entry = await watcher.updates(  # type: ignore[no-untyped-call]
                        timeout=self.resync_ms / 1000)
                except nats.errors.TimeoutError:
                    return  # silent too long: start again from a snapshot
                if entry is None:  # the end of the snapshot
                    self._ready.set()
                    self._snapshot_done()
                    continue
                deleted = entry.operation in ("DEL", "PURGE") or not entry.value
                self._apply(entry.key, None if deleted else entry.value)
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
                    for key, value in list(self._pending.items()):
                        if value is None:
                            await kv.delete(key)
                        else:
                            await kv.put(key, value)
                        if key in self._pending and self._pending[key] == value:
                            del self._pending[key]
                except asyncio.CancelledError:
                    raise
                except Exception:
                    _log.warning("bucket %s at %s: publishing again in 1 s (%d waiting)",
                                 self.bucket, masked_url(self.url), len(self._pending),
                                 exc_info=True)
                    await asyncio.sleep(1.0)

    async def close(self) -> None:
        """Stop mirroring and publishing, and disconnect."""
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
