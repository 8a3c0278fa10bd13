"""Limits per caller: what one player (or one device, or one address) may ask of a process.

A stage of the server's interceptor chain (:mod:`services.platform.server`) admits every
call through :class:`CallerLimiter` before the handler runs:

- **calls per second**, a token bucket per caller and method (a burst of ``call_burst``,
  refilled at ``calls_per_second``), so a player flooding ``SubmitCommand`` slows only
  their own ``SubmitCommand`` calls;
- **open streams** per player (``Subscribe``, ``WatchTable``), counted while they run;
- **guest sign-ins** (the open methods of the dast API) per device id and per peer address,
  per minute.

Going over answers RESOURCE_EXHAUSTED with ``google.rpc.RetryInfo`` (when a retry may
succeed) and ``ErrorInfo`` (``rate_limited`` or ``too_many_streams``). Nothing is shared
between callers, so one caller over its limits changes nothing for another.

The defaults are far above what the mobile app or ``dast play`` does (a person plays a card
every second or two and watches one match and one table).

Service and admin tokens (the lobby, the bots and timers, operators, benchmarks) get their
own limits: one service token acts for every bot seat of every match on the server, so its
load grows with the number of matches; a player's limits would throttle every bot at once.
Their call rate is bounded only against a runaway loop (``service_calls_per_second``), and
they are not limited in streams (they hold none per seat; a bounded number of them exists,
unlike players, whom anyone can create by signing in).

Memory stays bounded: a bucket that has been idle long enough to be full again is
forgotten (forgetting it changes nothing), and at most ``max_tracked_keys`` buckets are
kept per kind (beyond that the least recently used goes first: a flood of distinct keys can
then only give the forgotten callers a fresh bucket, and distinct player keys need distinct
signed tokens, which sign-in limits per address).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Final

import grpc

from services.platform.auth import Identity
from services.platform.errors import Reason, ServiceError

STREAM_RETRY_SECONDS: Final = 1.0
"""RetryInfo of a refused stream: a slot frees when one of the caller's streams ends."""


@dataclass(frozen=True, slots=True)
class CallerLimits:
    """The limits of one process (``DAST_LIMIT_*`` settings, :mod:`services.platform.config`)."""

    streams_per_player: int = 32
    calls_per_second: float = 50.0
    """Per player and method (SubmitCommand, GetView, …), sustained."""
    call_burst: int = 100
    service_calls_per_second: float = 10_000.0
    """Per service or admin token and method: only against a runaway loop."""
    service_call_burst: int = 20_000
    sign_ins_per_minute_per_device: int = 10
    sign_ins_per_minute_per_address: int = 60
    max_tracked_keys: int = 100_000
    """Buckets kept per kind at most (least recently used forgotten first)."""


class TokenBuckets:
    """One token bucket per key: ``burst`` tokens, refilled at ``rate`` per second.

    >>> buckets = TokenBuckets(rate=1.0, burst=2, clock=lambda: 0.0)
    >>> [buckets.take("a"), buckets.take("a"), buckets.take("a"), buckets.take("b")]
    [0.0, 0.0, 1.0, 0.0]
    """

    def __init__(
        self, rate: float, burst: int, *, max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1 or max_keys < 1:
            raise ValueError("a token bucket needs rate > 0, burst ≥ 1 and max_keys ≥ 1")
        self._rate = rate
        self._burst = float(burst)
        self._full_after = burst / rate
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[Hashable, list[float]] = OrderedDict()
        """key → [tokens, when last counted], least recently used first."""

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: Hashable) -> float:
        """Take one token of ``key``'s bucket: 0.0 when there was one, else the seconds until
        there will be (nothing is taken then)."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            self._forget_idle(now)
            bucket = [self._burst, now]
            self._buckets[key] = bucket
        else:
            self._buckets.move_to_end(key)
            bucket[0] = min(self._burst, bucket[0] + (now - bucket[1]) * self._rate)
            bucket[1] = now
        if bucket[0] >= 1.0:
            bucket[0] -= 1.0
            return 0.0
        return (1.0 - bucket[0]) / self._rate

    def _forget_idle(self, now: float) -> None:
        """Drop the least recently used buckets that are full again, and any over the cap."""
        buckets = self._buckets
        while buckets:
            oldest = next(iter(buckets.values()))
            if now - oldest[1] < self._full_after and len(buckets) < self._max_keys:
                return
            buckets.popitem(last=False)


class StreamSlots:
    """Open streams counted per key, at most ``limit`` each (entries exist only while a
    stream is open, so memory follows the streams the process serves anyway)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open_count(self, key: Hashable) -> int:
        """Streams ``key`` holds open now."""
        return self._open.get(key, 0)

    def acquire(self, key: Hashable) -> bool:
        """Count a new stream of ``key``; False (nothing counted) when it holds ``limit``."""
        held = self._open.get(key, 0)
        if held >= self._limit:
            return False
        self._open[key] = held + 1
        return True

    def release(self, key: Hashable) -> None:
        """A stream of ``key`` ended."""
        held = self._open.get(key, 0) - 1
        if held > 0:
            self._open[key] = held
        else:
            self._open.pop(key, None)


def _rate_limited(what: str, retry_after: float) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.RATE_LIMITED,
        f"too many {what}; retry in {retry_after:.2f} s", retry_after=retry_after,
    )


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:1.2.3.4:5678`` → ``ipv4:1.2.3.4``,
    ``ipv6:[::1]:5678`` → ``ipv6:[::1]``); other forms (``unix:…``) stay whole.

    >>> peer_host("ipv6:[::1]:50051")
    'ipv6:[::1]'
    """
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rpartition(":")[0]
    return peer


class CallerLimiter:
    """Admits calls within :class:`CallerLimits` (one per process, used by the server's
    interceptor chain); each method raises RESOURCE_EXHAUSTED for a call over a limit."""

    def __init__(
        self, limits: CallerLimits | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits = limits or CallerLimits()
        keys = limits.max_tracked_keys
        self._player_calls = TokenBuckets(
            limits.calls_per_second, limits.call_burst, max_keys=keys, clock=clock)
        self._service_calls = TokenBuckets(
            limits.service_calls_per_second, limits.service_call_burst, max_keys=keys,
            clock=clock)
        self._devices = TokenBuckets(
            limits.sign_ins_per_minute_per_device / 60, limits.sign_ins_per_minute_per_device,
            max_keys=keys, clock=clock)
        self._addresses = TokenBuckets(
            limits.sign_ins_per_minute_per_address / 60,
            limits.sign_ins_per_minute_per_address, max_keys=keys, clock=clock)
        self.streams = StreamSlots(limits.streams_per_player)

    def tracked(self) -> int:
        """Buckets and stream counters held now (for tests of bounded memory)."""
        return (len(self._player_calls) + len(self._service_calls) + len(self._devices)
                + len(self._addresses) + len(self.streams))

    def admit_call(self, identity: Identity, method: str) -> None:
        """Count one call of ``method`` by ``identity``.

        :raises ServiceError: RESOURCE_EXHAUSTED (``rate_limited``) over the rate.
        """
        buckets = self._service_calls if identity.is_privileged else self._player_calls
        wait = buckets.take((identity, method))
        if wait:
            raise _rate_limited(f"calls of {method.rpartition('/')[2]}", wait)

    def admit_open_call(self, peer: str, device_id: str | None) -> None:
        """Count one call of an open (tokenless) dast method from ``peer`` for ``device_id``.

        :raises ServiceError: RESOURCE_EXHAUSTED (``rate_limited``) over either rate.
        """
        wait = self._addresses.take(peer_host(peer))
        if wait:
            raise _rate_limited("sign-ins from this address", wait)
        if device_id is not None:
            wait = self._devices.take(device_id)
            if wait:
                raise _rate_limited("sign-ins of this device", wait)

    def open_stream(self, identity: Identity) -> bool:
        """Count a stream of ``identity`` opening; False for a service or admin (not
        counted, nothing to release).

        :raises ServiceError: RESOURCE_EXHAUSTED (``too_many_streams``) over the limit.
        """
        if identity.is_privileged:
            return False
        if not self.streams.acquire(identity):
            raise ServiceError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.TOO_MANY_STREAMS,
                f"at most {self.limits.streams_per_player} open streams per player; "
                "close one first", retry_after=STREAM_RETRY_SECONDS,
            )
        return True

    def close_stream(self, identity: Identity) -> None:
        """A stream counted by :meth:`open_stream` ended."""
        self.streams.release(identity)


MACHINE_SPEED: Final = CallerLimits(
    streams_per_player=1_000, calls_per_second=1_000_000.0, call_burst=1_000_000,
    sign_ins_per_minute_per_device=1_000_000, sign_ins_per_minute_per_address=1_000_000,
)
"""Limits no client reaches: for tests and benchmarks whose player clients act at machine
speed (a whole match in a second), where a person's limits would refuse the test itself."""
