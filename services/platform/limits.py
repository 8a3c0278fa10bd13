"""Limits per caller, per address and per process: what one player, one device, one network
address, and everyone together may ask of a process.

A stage of the server's interceptor chain (:mod:`services.platform.server`) admits every
call through :class:`CallerLimiter` before the handler runs:

- **calls per second**, a token bucket per caller and method (a burst of ``call_burst``,
  refilled at ``calls_per_second``), so a player flooding ``SubmitCommand`` slows only
  their own ``SubmitCommand`` calls;
- **open streams** per player (``Subscribe``, ``Play``, ``WatchTable``,
  ``WatchStandings``), counted while they run;
- **guest sign-ins** (the open methods of the dast API) per device id and per address, per
  minute;
- **the process's budgets**: at most ``streams_per_process`` open streams and
  ``calls_in_flight`` calls being handled at once (unary calls, and streams until their
  first response: opening one is work too), from players and guests together,
  so that a crowd of callers each within its own limits cannot take the memory and the event
  loop every other player needs;
- **per address**: one network address may hold at most ``address_share`` of each budget
  (a mobile carrier puts many honest players behind one address, so this is a share of the
  process, not a person's allowance);
- **spectators**: a stream a service marks as a spectator's (:func:`admit_spectator`: the
  game service for a player without a seat, the lobby for a table's onlooker) counts
  towards its subject's ``spectators_per_game`` and towards ``spectator_share`` of the
  process's streams (and of its address's). The rest of the budget stays for players'
  own streams: seated players still open theirs when spectators have filled their share.

Going over answers RESOURCE_EXHAUSTED with ``google.rpc.RetryInfo`` and ``ErrorInfo``:
``rate_limited``, ``too_many_streams`` (the player's own), ``too_many_spectators`` (the
match's), ``address_limited`` (the address's share) or ``server_busy`` (the process's
budget).

The address is the peer gRPC reports (``ipv4:1.2.3.4``, port dropped). Behind a proxy or
load balancer that is the proxy's; an operator names the proxies' networks in
``trusted_proxies`` (``DAST_TRUSTED_PROXIES``) and only then is the client address taken
from ``x-forwarded-for``: the nearest entry not itself a trusted proxy. A forwarded header
from any other peer is ignored (anyone can write one).

The defaults follow from what a stream costs (``bench/limits.py``: about 30 kB of memory
and tens of microseconds of the event loop per event it carries): see docs/security.md
"Limits per process and per address".

Service and admin tokens (the lobby, the bots and timers, operators, benchmarks) get their
own limits: one service token acts for every bot seat of every match on the server, so its
load grows with the number of matches; a player's limits would throttle every bot at once.
Their call rate is bounded only against a runaway loop (``service_calls_per_second``), and
they count towards no stream, spectator or in-flight budget (a bounded number of them
exists, unlike players, whom anyone can create by signing in).

Memory stays bounded: a bucket that has been idle long enough to be full again is
forgotten (forgetting it changes nothing), and at most ``max_tracked_keys`` buckets are
kept per kind (beyond that the least recently used goes first: a flood of distinct keys can
then only give the forgotten callers a fresh bucket, and distinct player keys need distinct
signed tokens, which sign-in limits per address). Counters of streams and calls exist only
while those are open.
"""

from __future__ import annotations

import contextvars
import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import grpc

from services.platform.auth import Identity
from services.platform.errors import Reason, ServiceError

STREAM_RETRY_SECONDS: Final = 1.0
"""RetryInfo of a refused stream: a slot frees when one of the caller's streams ends."""
BUSY_STREAM_RETRY_SECONDS: Final = 5.0
"""RetryInfo of a stream refused for a shared budget (the process's, the address's, a
match's spectators): someone else's stream has to end first, so no sooner than a few
seconds (another replica may take it at once)."""
BUSY_CALL_RETRY_SECONDS: Final = 0.5
"""RetryInfo of a unary call refused because too many are being handled: they last
milliseconds, so the budget frees quickly."""
FORWARDED_FOR: Final = "x-forwarded-for"


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
    streams_per_process: int = 8_000
    """Open streams of players and guests on this process (about 30 kB each)."""
    spectator_share: float = 0.5
    """Of ``streams_per_process`` (and of an address's share), what spectators may hold;
    the rest stays for players' own streams."""
    spectators_per_game: int = 64
    """Spectator streams of one match (or onlookers of one table) on this process: each of
    the match's events wakes them all at once, and every other call waits behind them
    (about 50 µs each: 3 ms at 64; docs/security.md)."""
    calls_in_flight: int = 256
    """Calls of players and guests being handled at once on this process (unary calls,
    and streams until their first response)."""
    address_share: float = 0.25
    """Of each process budget, what one address may hold."""
    trusted_proxies: tuple[str, ...] = ()
    """Networks (CIDR) of proxies whose ``x-forwarded-for`` names the client's address."""

    @property
    def streams_per_address(self) -> int:
        """Open streams one address may hold."""
        return max(1, int(self.streams_per_process * self.address_share))

    @property
    def calls_per_address(self) -> int:
        """Unary calls of one address being handled at once."""
        return max(1, int(self.calls_in_flight * self.address_share))

    @property
    def spectator_streams(self) -> int:
        """Spectator streams the process holds at most."""
        return max(1, int(self.streams_per_process * self.spectator_share))

    @property
    def spectators_per_address(self) -> int:
        """Spectator streams one address holds at most."""
        return max(1, int(self.streams_per_address * self.spectator_share))


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
    """Open streams (or calls) counted per key, at most ``limit`` each (entries exist only
    while one is open, so memory follows what the process serves anyway)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._open)

    def open_count(self, key: Hashable) -> int:
        """How many ``key`` holds open now."""
        return self._open.get(key, 0)

    def acquire(self, key: Hashable) -> bool:
        """Count a new one of ``key``; False (nothing counted) when it holds ``limit``."""
        held = self._open.get(key, 0)
        if held >= self.limit:
            return False
        self._open[key] = held + 1
        return True

    def release(self, key: Hashable) -> None:
        """One of ``key`` ended."""
        held = self._open.get(key, 0) - 1
        if held > 0:
            self._open[key] = held
        else:
            self._open.pop(key, None)


class Budget:
    """A count shared by the whole process, at most ``limit``."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def acquire(self) -> bool:
        """Count one more; False (nothing counted) when ``limit`` are in use."""
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def release(self) -> None:
        self.used = max(0, self.used - 1)


def _rate_limited(what: str, retry_after: float) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.RATE_LIMITED,
        f"too many {what}; retry in {retry_after:.2f} s", retry_after=retry_after,
    )


def _exhausted(reason: Reason, message: str, retry_after: float) -> ServiceError:
    return ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, reason,
                        f"{message}; retry in {retry_after:.0f} s" if retry_after >= 1
                        else f"{message}; retry in {retry_after:.1f} s",
                        retry_after=retry_after)


_Step = tuple[Callable[[], bool], Callable[[], None], Callable[[], ServiceError] | None]
"""One count to take: (take it, False when full; give it back; the refusal when full, or
None when taking it raises its own)."""


def _take_all(steps: Sequence[_Step]) -> None:
    """Take every count of ``steps`` in order, or none: the first that is full gives back
    those already taken and raises its refusal."""
    taken: list[Callable[[], None]] = []
    try:
        for take, give_back, refusal in steps:
            if not take():
                assert refusal is not None
                raise refusal()
            taken.append(give_back)
    except ServiceError:
        for give_back in reversed(taken):
            give_back()
        raise


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:1.2.3.4:5678`` → ``ipv4:1.2.3.4``,
    ``ipv6:[::1]:5678`` → ``ipv6:[::1]``); other forms (``unix:…``) stay whole.

    >>> peer_host("ipv6:[::1]:50051")
    'ipv6:[::1]'
    """
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rpartition(":")[0]
    return peer


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    """The networks of ``texts`` (CIDR, or a single address).

    :raises ValueError: naming the first text that is not a network.
    """
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not an address or CIDR network: {text.strip()[:64]!r}") from None
    return tuple(networks)


def _ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address of a host as :func:`peer_host` gives it, or of a bare address."""
    text = host.removeprefix("ipv4:").removeprefix("ipv6:").strip().strip("[]")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class ClientAddress:
    """Finds the client address of a call: the peer, or (only when the peer is a trusted
    proxy) the nearest address of ``x-forwarded-for`` that is not a trusted proxy."""

    def __init__(self, trusted_proxies: Sequence[str] = ()) -> None:
        self._proxies = parse_networks(trusted_proxies)

    def _trusted(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
        return address is not None and any(address in network for network in self._proxies)

    def of(
        self, peer: str, metadata: Callable[[], Iterable[tuple[str, object]] | None] | None = None
    ) -> str:
        """The address key of a call from ``peer`` (``ipv4:1.2.3.4``, ``ipv6:[…]``);
        ``metadata`` gives the call's metadata, read only when the peer is trusted.

        >>> ClientAddress(["10.0.0.0/8"]).of("ipv4:10.1.2.3:555", lambda: (
        ...     ("x-forwarded-for", "203.0.113.9, 10.9.9.9"),))
        'ipv4:203.0.113.9'
        >>> ClientAddress().of("ipv4:10.1.2.3:555", lambda: (("x-forwarded-for", "1.1.1.1"),))
        'ipv4:10.1.2.3'
        """
        host = peer_host(peer)
        if not self._proxies or metadata is None or not self._trusted(_ip_of(host)):
            return host
        hops: list[str] = []
        for key, value in metadata() or ():
            if key == FORWARDED_FOR and isinstance(value, str):
                hops.extend(value.split(","))
        for hop in reversed(hops[-32:]):  # nearest first; a header is bounded by the guard
            address = _ip_of(hop)
            if address is None:
                return host  # a hop we cannot read: trust nothing beyond it
            if not self._trusted(address):
                return f"ipv{address.version}:{address}" if address.version == 4 \
                    else f"ipv6:[{address}]"
        return host


_STREAM: contextvars.ContextVar[StreamTicket | None] = contextvars.ContextVar(
    "dast_stream", default=None
)


class StreamTicket:
    """What one open stream holds of the limits; the server's interceptor closes it when the
    stream ends, however it ends (refused, finished, cancelled, the client gone). Until it
    :meth:`settle` s, the stream also counts as a call in flight: opening it (reading the
    store, replaying what the client missed) is work like a unary call's."""

    __slots__ = ("_closed", "_limiter", "address", "audience", "identity", "opening")

    def __init__(self, limiter: CallerLimiter, identity: Identity, address: str) -> None:
        self._limiter = limiter
        self.identity = identity
        self.address = address
        self.audience: str | None = None
        """The subject this stream watches as a spectator (:meth:`spectate`), if any."""
        self.opening = True
        """Still counted as a call in flight (:meth:`settle`)."""
        self._closed = False

    def spectate(self, subject: str) -> None:
        """Count this stream as a spectator of ``subject`` (e.g. ``game:<id>``).

        :raises ServiceError: RESOURCE_EXHAUSTED: ``too_many_spectators`` when the subject
            has its spectators on this process, ``address_limited`` when the address holds
            its spectators' share, ``server_busy`` when the process does.
        """
        if self.audience is None and not self._closed:
            self._limiter.join_audience(self, subject)
            self.audience = subject

    def settle(self) -> None:
        """The stream is open and caught up (its first response sent, or waiting for news):
        it no longer counts as a call in flight."""
        if self.opening:
            self.opening = False
            self._limiter.leave_call(self.address)

    def close(self) -> None:
        """Give back what the stream held (once; later calls do nothing)."""
        if not self._closed:
            self.settle()
            self._closed = True
            self._limiter.release_stream(self)

    def activate(self) -> None:
        """Make this the stream :func:`admit_spectator` and :func:`settle_stream` refer to
        (in the call's context)."""
        _STREAM.set(self)


def admit_spectator(subject: str) -> None:
    """Count the stream being served as a spectator of ``subject`` (no-op for streams the
    limits do not count: services', admins', or a server without limits).

    :raises ServiceError: RESOURCE_EXHAUSTED as :meth:`StreamTicket.spectate`.
    """
    ticket = _STREAM.get()
    if ticket is not None:
        ticket.spectate(subject)


def settle_stream() -> None:
    """Tell the limits that the stream being served waits for news (caught up): it no
    longer counts as a call in flight (no-op outside a counted stream)."""
    ticket = _STREAM.get()
    if ticket is not None:
        ticket.settle()


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
        self.addresses = ClientAddress(limits.trusted_proxies)
        self.streams = StreamSlots(limits.streams_per_player)
        self.process_streams = Budget(limits.streams_per_process)
        self.process_spectators = Budget(limits.spectator_streams)
        self.address_streams = StreamSlots(limits.streams_per_address)
        self.address_spectators = StreamSlots(limits.spectators_per_address)
        self.audiences = StreamSlots(limits.spectators_per_game)
        self.process_calls = Budget(limits.calls_in_flight)
        self.address_calls = StreamSlots(limits.calls_per_address)

    def tracked(self) -> int:
        """Buckets and counters held now (for tests of bounded memory)."""
        return (len(self._player_calls) + len(self._service_calls) + len(self._devices)
                + len(self._addresses) + self.counters())

    def counters(self) -> int:
        """Counters of open streams and calls held now (none once all have ended)."""
        return (len(self.streams) + len(self.address_streams) + len(self.address_spectators)
                + len(self.audiences) + len(self.address_calls))

    def in_use(self) -> tuple[int, int, int]:
        """(streams, spectator streams, calls in flight) counted now against the process."""
        return (self.process_streams.used, self.process_spectators.used,
                self.process_calls.used)

    def admit_call(self, identity: Identity, method: str) -> None:
        """Count one call of ``method`` by ``identity``.

        :raises ServiceError: RESOURCE_EXHAUSTED (``rate_limited``) over the rate.
        """
        buckets = self._service_calls if identity.is_backend else self._player_calls
        wait = buckets.take((identity, method))
        if wait:
            raise _rate_limited(f"calls of {method.rpartition('/')[2]}", wait)

    def admit_open_call(self, address: str, device_id: str | None) -> None:
        """Count one call of an open (tokenless) dast method from ``address`` (a
        :class:`ClientAddress` key, or a gRPC peer) for ``device_id``.

        :raises ServiceError: RESOURCE_EXHAUSTED (``rate_limited``) over either rate.
        """
        wait = self._addresses.take(peer_host(address))
        if wait:
            raise _rate_limited("sign-ins from this address", wait)
        if device_id is not None:
            wait = self._devices.take(device_id)
            if wait:
                raise _rate_limited("sign-ins of this device", wait)

    def enter_call(self, address: str) -> None:
        """Count a unary call of a player or guest from ``address`` as being handled; the
        caller must :meth:`leave_call` once it is answered.

        :raises ServiceError: RESOURCE_EXHAUSTED: ``address_limited`` when the address has
            its share of the calls in flight, ``server_busy`` when the process has them all.
        """
        if not self.address_calls.acquire(address):
            raise _exhausted(
                Reason.ADDRESS_LIMITED,
                f"this address has {self.address_calls.limit} calls in progress on this "
                "server", BUSY_CALL_RETRY_SECONDS)
        if not self.process_calls.acquire():
            self.address_calls.release(address)
            raise _exhausted(Reason.SERVER_BUSY, "this server is handling all the calls it "
                             "can at once", BUSY_CALL_RETRY_SECONDS)

    def leave_call(self, address: str) -> None:
        """A call counted by :meth:`enter_call` was answered."""
        self.process_calls.release()
        self.address_calls.release(address)

    def open_stream(self, identity: Identity, address: str = "") -> StreamTicket | None:
        """Count a stream of ``identity`` from ``address`` opening: its ticket (close it
        when the stream ends), or None for a service or admin (not counted). The stream
        counts as a call in flight until its ticket settles.

        :raises ServiceError: RESOURCE_EXHAUSTED: ``too_many_streams`` over the player's
            limit, ``address_limited`` over the address's share (of streams, or of calls in
            flight), ``server_busy`` when the process holds its budget.
        """
        if identity.is_backend:
            return None
        _take_all((
            (lambda: self.streams.acquire(identity), lambda: self.streams.release(identity),
             self._too_many_streams),
            (lambda: self._try_call(address), lambda: self.leave_call(address), None),
            (lambda: self.address_streams.acquire(address),
             lambda: self.address_streams.release(address),
             lambda: _exhausted(Reason.ADDRESS_LIMITED,
                                f"this address holds {self.address_streams.limit} open "
                                "streams on this server", BUSY_STREAM_RETRY_SECONDS)),
            (self.process_streams.acquire, self.process_streams.release,
             lambda: _exhausted(Reason.SERVER_BUSY,
                                "this server holds all the streams it serves well",
                                BUSY_STREAM_RETRY_SECONDS)),
        ))
        return StreamTicket(self, identity, address)

    def _too_many_streams(self) -> ServiceError:
        return ServiceError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.TOO_MANY_STREAMS,
            f"at most {self.limits.streams_per_player} open streams per player; "
            "close one first", retry_after=STREAM_RETRY_SECONDS,
        )

    def _try_call(self, address: str) -> bool:
        self.enter_call(address)  # raises its own refusal
        return True

    def join_audience(self, ticket: StreamTicket, subject: str) -> None:
        """Count ``ticket``'s stream as a spectator of ``subject`` (see
        :meth:`StreamTicket.spectate`, which calls this)."""
        address = ticket.address
        _take_all((
            (lambda: self.audiences.acquire(subject), lambda: self.audiences.release(subject),
             lambda: _exhausted(Reason.TOO_MANY_SPECTATORS,
                                f"this match has {self.audiences.limit} spectators on this "
                                "server", BUSY_STREAM_RETRY_SECONDS)),
            (lambda: self.address_spectators.acquire(address),
             lambda: self.address_spectators.release(address),
             lambda: _exhausted(Reason.ADDRESS_LIMITED,
                                f"this address holds {self.address_spectators.limit} "
                                "spectator streams on this server", BUSY_STREAM_RETRY_SECONDS)),
            (self.process_spectators.acquire, self.process_spectators.release,
             lambda: _exhausted(Reason.SERVER_BUSY,
                                "this server holds all the spectator streams it serves well",
                                BUSY_STREAM_RETRY_SECONDS)),
        ))

    def release_stream(self, ticket: StreamTicket) -> None:
        """Give back what ``ticket`` held (:meth:`StreamTicket.close` calls this once)."""
        self.streams.release(ticket.identity)
        self.address_streams.release(ticket.address)
        self.process_streams.release()
        if ticket.audience is not None:
            self.audiences.release(ticket.audience)
            self.address_spectators.release(ticket.address)
            self.process_spectators.release()


MACHINE_SPEED: Final = CallerLimits(
    streams_per_player=1_000, calls_per_second=1_000_000.0, call_burst=1_000_000,
    sign_ins_per_minute_per_device=1_000_000, sign_ins_per_minute_per_address=1_000_000,
    streams_per_process=1_000_000, spectator_share=1.0, spectators_per_game=1_000_000,
    calls_in_flight=1_000_000, address_share=1.0,
)
"""Limits no client reaches: for tests and benchmarks whose player clients act at machine
speed (a whole match in a second) from one address, where a person's limits would refuse
the test itself."""
