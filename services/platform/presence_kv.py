"""Presence shared across replicas: who has a game stream open, by every replica's report.

Each game replica counts the ``Subscribe`` streams it holds per (game, player) and
publishes them as heartbeats (:class:`PresenceReporter`), one record per (game, replica):
the players with a stream open there, and the players whose last stream there closed, with
when. Whoever decides a takeover reads every replica's records (:meth:`PresenceBoard.records`)
and asks :func:`away_since`: a player is present while any replica's fresh record shows a
stream of theirs; otherwise away since the latest moment a replica saw them go (a closed
stream, or the last heartbeat of a replica that stopped reporting: a replica killed with
its streams open). So the decision is taken with every replica's knowledge, and a player
connected anywhere keeps the seat.

Two boards behind one interface:

- :class:`InProcessPresenceBoard` for one process (embedded mode, tests);
- :class:`NatsPresenceBoard`, a JetStream key-value bucket (the deployment's
  ``<D>_PRESENCE``, ``DAST_PRESENCE`` by default: :mod:`services.platform.nats_names`;
  deployments sharing a NATS server never read each other's players; key
  ``<game>.<replica>`` in base64url, value a JSON record) whose entries expire after the
  bucket's TTL, so records of finished games and dead replicas go away by themselves. A
  watcher keeps an in-memory mirror of the bucket, so reading the records costs no request.

While the board itself is cut off (NATS away), every record would age into "a dead
replica's": :meth:`PresenceBoard.last_heard_ms` lets a decider see that and wait instead.

Records carry the reporting replica's clock (``at_ms``); replicas' clocks are assumed to
agree to well within the heartbeat period (NTP).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Protocol

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from services.platform.bus import raise_if_cancelling
from services.platform.clock import wall_clock_ms
from services.platform.config import masked_url
from services.platform.nats_names import NatsNames


async def connect_nats(url: str) -> Client:
    """A NATS connection that keeps reconnecting for as long as it lives (the key-value
    boards' own, apart from the bus's)."""
    return await nats.connect(url, allow_reconnect=True, max_reconnect_attempts=-1,
                              reconnect_time_wait=0.5, connect_timeout=2)


async def open_bucket(nc: Client, bucket: str, *, ttl_seconds: float,
                      storage: StorageType) -> KeyValue:
    """The key-value ``bucket``, made with one value per key and entries kept
    ``ttl_seconds`` when it does not exist yet (whichever process comes first makes it)."""
    jetstream = nc.jetstream()
    try:
        return await jetstream.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        return await jetstream.create_key_value(KeyValueConfig(
            bucket=bucket, ttl=ttl_seconds, history=1, storage=storage,
        ))

_log = logging.getLogger(__name__)

DEFAULT_BUCKET: Final = NatsNames().presence_bucket
"""The default deployment's bucket."""
REPLICA_ALIVE: Final = ""
"""The game id of a replica's own heartbeat record (no real game id is empty)."""


@dataclass(frozen=True, slots=True)
class PresenceRecord:
    """One replica's report on one game: streams open per player, and when the players who
    have none there left (ms)."""

    game_id: str
    replica_id: str
    at_ms: int
    open: dict[str, int] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """The record as stored in the bucket."""
        return json.dumps({"game": self.game_id, "replica": self.replica_id, "at": self.at_ms,
                           "open": self.open, "closed": self.closed},
                          separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> PresenceRecord:
        """Parse a stored record.

        :raises ValueError: if ``data`` is not one.
        """
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise ValueError("a presence record is a JSON object")
        return cls(str(raw["game"]), str(raw["replica"]), int(raw["at"]),
                   {str(k): int(v) for k, v in dict(raw["open"]).items()},
                   {str(k): int(v) for k, v in dict(raw["closed"]).items()})


class PresenceBoard(Protocol):
    """Where replicas publish their records and deciders read everybody's."""

    async def start(self) -> None:
        """Connect (idempotent)."""
        ...

    async def publish(self, record: PresenceRecord) -> None:
        """Store ``record`` in place of its replica's previous one for the game."""
        ...

    async def remove(self, game_id: str, replica_id: str) -> None:
        """Drop the replica's record of ``game_id`` (nothing left to report)."""
        ...

    async def records(self) -> list[PresenceRecord]:
        """Every replica's latest record not older than the board's TTL."""
        ...

    def last_heard_ms(self) -> int | None:
        """When the board last heard from the shared store (None: never). Records older
        than that may be out of date: a decider must not read silence as absence."""
        ...

    async def close(self) -> None:
        """Disconnect."""
        ...


def away_since(records: Iterable[PresenceRecord], game_id: str, player_id: str, *,
               now_ms: int, stale_ms: int) -> int | None:
    """When ``player_id`` was last seen on ``game_id`` by any replica, if no replica has a
    stream of theirs open now; None while one has (or when no replica ever saw them).

    A record older than ``stale_ms`` comes from a replica that stopped reporting (it died
    with its streams): its open streams count as gone since its last heartbeat.

    >>> r = PresenceRecord("g", "r1", at_ms=1_000, closed={"p": 900})
    >>> away_since([r], "g", "p", now_ms=1_500, stale_ms=3_000)
    900
    >>> away_since([r, PresenceRecord("g", "r2", 1_400, open={"p": 1})], "g", "p",
    ...            now_ms=1_500, stale_ms=3_000) is None
    True
    """
    latest: int | None = None
    for record in records:
        if record.game_id != game_id:
            continue
        if record.open.get(player_id, 0) > 0:
            if now_ms - record.at_ms <= stale_ms:
                return None
            seen = record.at_ms
        elif player_id in record.closed:
            seen = record.closed[player_id]
        else:
            continue
        latest = seen if latest is None else max(latest, seen)
    return latest


class InProcessPresenceBoard:
    """:class:`PresenceBoard` in memory, for one process."""

    def __init__(self, *, ttl_ms: int = 600_000,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.ttl_ms = ttl_ms
        self._clock = clock
        self._records: dict[tuple[str, str], PresenceRecord] = {}

    async def start(self) -> None:
        """See :class:`PresenceBoard`."""

    async def publish(self, record: PresenceRecord) -> None:
        """See :class:`PresenceBoard`."""
        self._records[(record.game_id, record.replica_id)] = record

    async def remove(self, game_id: str, replica_id: str) -> None:
        """See :class:`PresenceBoard`."""
        self._records.pop((game_id, replica_id), None)

    async def records(self) -> list[PresenceRecord]:
        """See :class:`PresenceBoard`."""
        oldest = self._clock() - self.ttl_ms
        for key, record in list(self._records.items()):
            if record.at_ms < oldest:
                del self._records[key]
        return list(self._records.values())

    def last_heard_ms(self) -> int | None:
        """See :class:`PresenceBoard` (memory is always up to date)."""
        return self._clock()

    async def close(self) -> None:
        """See :class:`PresenceBoard`."""


def _key_part(text: str) -> str:
    """``text`` as a key token: base64url without padding (letters, digits, ``-``, ``_``)."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=") or "-"


class NatsPresenceBoard:
    """:class:`PresenceBoard` over a JetStream key-value bucket (see the module docstring).

    It connects in the background (NATS may be down when the process starts, or go away
    later): meanwhile :meth:`publish` raises (the reporter retries at its next heartbeat) and
    :meth:`records` serves the mirror as it last was, while :meth:`last_heard_ms` tells how
    old that is. The watcher is started again from a fresh snapshot after an error and
    whenever it has been silent for ``resync_ms`` (a live bucket hears every reporter's
    heartbeat), so a watch that died quietly is replaced.
    """

    def __init__(self, url: str, *, bucket: str = DEFAULT_BUCKET, ttl_ms: int = 600_000,
                 resync_ms: int = 10_000, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.url = url
        self.bucket = bucket
        self.ttl_ms = ttl_ms
        self.resync_ms = resync_ms
        self._clock = clock
        self._nc: Client | None = None
        self._kv: KeyValue | None = None
        self._mirror: dict[str, PresenceRecord] = {}
        self._heard_ms: int | None = None
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def start(self, *, wait_seconds: float = 5.0) -> None:
        """Start connecting and mirroring; wait up to ``wait_seconds`` for the first snapshot
        (a board whose NATS is down starts anyway, and catches up once it is back)."""
        if self._running is None:
            self._running = asyncio.create_task(self._run(), name=f"presence:{self.bucket}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait_seconds)

    async def _run(self) -> None:
        while True:
            try:
                if self._kv is None:
                    await self._connect()
                await self._watch_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("presence bucket %s at %s: watching again", self.bucket,
                             masked_url(self.url), exc_info=True)
                await asyncio.sleep(1.0)

    async def _connect(self) -> None:
        if self._nc is None:
            self._nc = await connect_nats(self.url)
        self._kv = await open_bucket(self._nc, self.bucket, ttl_seconds=self.ttl_ms / 1000,
                                     storage=StorageType.MEMORY)

    async def _watch_once(self) -> None:
        """Mirror the bucket from a fresh snapshot until the watch fails or falls silent."""
        assert self._kv is not None
        watcher = await self._kv.watchall()
        try:
            fresh: dict[str, PresenceRecord] | None = {}
            while True:
                try:
                    entry = await watcher.updates(  # type: ignore[no-untyped-call]
                        timeout=self.resync_ms / 1000)
                except nats.errors.TimeoutError:
                    return  # silent too long: start again from a snapshot
                self._heard_ms = self._clock()
                if entry is None:  # the end of the snapshot
                    if fresh is not None:
                        self._mirror, fresh = fresh, None
                        self._ready.set()
                    continue
                target = fresh if fresh is not None else self._mirror
                if entry.operation in ("DEL", "PURGE") or not entry.value:
                    target.pop(entry.key, None)
                    continue
                try:
                    target[entry.key] = PresenceRecord.from_bytes(entry.value)
                except (ValueError, KeyError, TypeError):
                    _log.warning("ignoring a malformed presence record %s", entry.key)
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]

    def _key(self, game_id: str, replica_id: str) -> str:
        return f"{_key_part(game_id)}.{_key_part(replica_id)}"

    async def publish(self, record: PresenceRecord) -> None:
        """See :class:`PresenceBoard`.

        :raises ConnectionError: while the bucket is not reachable yet.
        """
        if self._kv is None:
            raise ConnectionError(f"presence bucket {self.bucket} not reached yet")
        key = self._key(record.game_id, record.replica_id)
        await self._kv.put(key, record.to_bytes())

    async def remove(self, game_id: str, replica_id: str) -> None:
        """See :class:`PresenceBoard`.

        :raises ConnectionError: while the bucket is not reachable yet.
        """
        if self._kv is None:
            raise ConnectionError(f"presence bucket {self.bucket} not reached yet")
        with contextlib.suppress(nats.js.errors.KeyNotFoundError):
            await self._kv.delete(self._key(game_id, replica_id))

    async def records(self) -> list[PresenceRecord]:
        """See :class:`PresenceBoard` (the mirror; expired entries leave it here too, since
        the bucket's own expiry may send the watcher no notice)."""
        oldest = self._clock() - self.ttl_ms
        for key, record in list(self._mirror.items()):
            if record.at_ms < oldest:
                del self._mirror[key]
        return list(self._mirror.values())

    def last_heard_ms(self) -> int | None:
        """See :class:`PresenceBoard`."""
        return self._heard_ms

    async def close(self) -> None:
        """See :class:`PresenceBoard`."""
        if self._running is not None:
            self._running.cancel()
            with contextlib.suppress(BaseException):
                await self._running
            self._running = None
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
        self._nc, self._kv = None, None


def open_presence_board(nats_url: str | None, *, bucket: str = DEFAULT_BUCKET,
                        ttl_ms: int = 600_000,
                        clock: Callable[[], int] = wall_clock_ms) -> PresenceBoard:
    """The board of a deployment: JetStream's when ``nats_url`` is set, else in memory.

    ``clock`` ages the records and the mirror: the composition passes the clock its
    reporters and takeovers read, so that they all agree on how old a report is.
    """
    if nats_url:
        return NatsPresenceBoard(nats_url, bucket=bucket, ttl_ms=ttl_ms, clock=clock)
    return InProcessPresenceBoard(ttl_ms=ttl_ms, clock=clock)


class StreamPresence(Protocol):
    """The game service's hook: told when a seated player's stream opens and closes."""

    def opened(self, game_id: str, player_id: str) -> None:
        """A stream of ``player_id`` on ``game_id`` opened."""
        ...

    def closed(self, game_id: str, player_id: str) -> None:
        """That stream closed (however it ended)."""
        ...


class PresenceReporter:
    """A game replica's :class:`StreamPresence`: counts its streams and publishes them.

    A change (a player's first stream, or their last one closing) is published at once;
    every ``heartbeat_ms`` each game's record is published again, so that a record that
    stops being renewed means a dead replica. A player gone from this replica is kept in the
    record's ``closed`` for ``remember_ms`` (longer than any grace), then forgotten.
    """

    def __init__(self, board: PresenceBoard, *, replica_id: str | None = None,
                 heartbeat_ms: int = 5_000, remember_ms: int = 300_000,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.board = board
        self.replica_id = replica_id or uuid.uuid4().hex
        self.heartbeat_ms = heartbeat_ms
        self.remember_ms = remember_ms
        self._clock = clock
        self._open: dict[str, dict[str, int]] = {}
        self._closed: dict[str, dict[str, int]] = {}
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()

    def opened(self, game_id: str, player_id: str) -> None:
        """See :class:`StreamPresence`."""
        players = self._open.setdefault(game_id, {})
        players[player_id] = players.get(player_id, 0) + 1
        if players[player_id] == 1:
            self._closed.get(game_id, {}).pop(player_id, None)
            self._changed(game_id)

    def closed(self, game_id: str, player_id: str) -> None:
        """See :class:`StreamPresence`."""
        players = self._open.get(game_id, {})
        left = players.get(player_id, 0) - 1
        if left > 0:
            players[player_id] = left
            return
        players.pop(player_id, None)
        self._closed.setdefault(game_id, {})[player_id] = self._clock()
        self._changed(game_id)

    def streams(self, game_id: str, player_id: str) -> int:
        """The streams of ``player_id`` on ``game_id`` open on this replica."""
        return self._open.get(game_id, {}).get(player_id, 0)

    def _changed(self, game_id: str) -> None:
        self._dirty.add(game_id)
        self._wake.set()

    def _record(self, game_id: str, now: int) -> PresenceRecord | None:
        closed = self._closed.get(game_id, {})
        for player, since in list(closed.items()):
            if now - since > self.remember_ms:
                del closed[player]
        opened = self._open.get(game_id, {})
        if not opened and not closed:
            self._open.pop(game_id, None)
            self._closed.pop(game_id, None)
            return None
        return PresenceRecord(game_id, self.replica_id, now, dict(opened), dict(closed))

    async def flush(self, game_ids: Iterable[str]) -> None:
        """Publish the records of ``game_ids`` now (a game with nothing left is removed)."""
        now = self._clock()
        for game_id in list(game_ids):
            record = self._record(game_id, now)
            try:
                if record is None:
                    await self.board.remove(game_id, self.replica_id)
                else:
                    await self.board.publish(record)
            except Exception:
                self._dirty.add(game_id)  # NATS away: the next heartbeat tries again
                _log.warning("presence report of game %s failed", game_id, exc_info=True)

    async def run(self) -> None:
        """Publish changes as they happen and every game's record each heartbeat, forever."""
        next_beat = self._clock() + self.heartbeat_ms
        while True:
            raise_if_cancelling()  # wait_for below may swallow a cancel on Python 3.11
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(),
                                       max(next_beat - self._clock(), 1) / 1000)
            self._wake.clear()
            if self._clock() >= next_beat:
                next_beat = self._clock() + self.heartbeat_ms
                games = set(self._open) | set(self._closed) | self._dirty
                await self._announce_alive()
            else:
                games = set(self._dirty)
            self._dirty.clear()
            await self.flush(games)

    async def _announce_alive(self) -> None:
        """This replica's own heartbeat, streams or not: while any replica is alive the
        board is heard from, so a decider tells a replica that froze or died (its records
        age) from the board being cut off (every record ages)."""
        try:
            await self.board.publish(PresenceRecord(REPLICA_ALIVE, self.replica_id,
                                                    self._clock()))
        except Exception:
            _log.warning("presence heartbeat failed", exc_info=True)
