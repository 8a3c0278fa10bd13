"""Limits per caller, per address and per process (services/platform/limits.py): token
buckets, stream slots, sign-ins, the process's budgets of streams and calls in flight, an
address's share of them, spectators per match, and the client address behind a proxy."""

from __future__ import annotations

import grpc
import pytest

from services.platform.auth import Identity, Role
from services.platform.config import Settings
from services.platform.errors import Reason, ServiceError
from services.platform.limits import (
    CallerLimiter,
    CallerLimits,
    ClientAddress,
    StreamTicket,
    TokenBuckets,
    peer_host,
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_burst_then_its_rate() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=10.0, burst=5, clock=clock)
    assert [buckets.take("p") for _ in range(5)] == [0.0] * 5
    assert buckets.take("p") == pytest.approx(0.1)  # one token every 0.1 s
    clock.now += 0.25
    assert [buckets.take("p") for _ in range(2)] == [0.0, 0.0]
    assert buckets.take("p") == pytest.approx(0.05)
    assert buckets.take("q") == 0.0  # another key has its own bucket


def test_idle_buckets_are_forgotten_and_the_count_never_passes_the_cap() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=1.0, burst=2, max_keys=1_000, clock=clock)
    for key in range(500):
        buckets.take(key)
    clock.now += 2.0  # every bucket is full again: forgetting them changes nothing
    buckets.take("new")
    assert len(buckets) == 1
    for key in range(50_000):  # a flood of distinct keys
        buckets.take(("flood", key))
        assert len(buckets) <= 1_000
    # A caller still being limited keeps its bucket while idle ones go.
    clock.now += 10
    buckets.take("busy")
    buckets.take("busy")
    assert buckets.take("busy") > 0
    buckets.take("other")
    assert buckets.take("busy") > 0


def test_a_player_over_the_call_rate_gets_resource_exhausted_with_a_retry_time() -> None:
    clock = Clock()
    limiter = CallerLimiter(CallerLimits(calls_per_second=2.0, call_burst=3), clock=clock)
    alice, bob = Identity("alice", Role.PLAYER), Identity("bob", Role.PLAYER)
    for _ in range(3):
        limiter.admit_call(alice, "/dast.v1.GameService/SubmitCommand")
    with pytest.raises(ServiceError) as refused:
        limiter.admit_call(alice, "/dast.v1.GameService/SubmitCommand")
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.reason == Reason.RATE_LIMITED
    assert refused.value.retry_after == pytest.approx(0.5)
    # Alice's other methods and Bob are untouched.
    limiter.admit_call(alice, "/dast.v1.GameService/GetView")
    for _ in range(3):
        limiter.admit_call(bob, "/dast.v1.GameService/SubmitCommand")


def test_service_tokens_have_their_own_rate_and_no_stream_limit() -> None:
    limiter = CallerLimiter(CallerLimits(calls_per_second=1.0, call_burst=1,
                                         service_calls_per_second=1.0, service_call_burst=50,
                                         streams_per_player=2))
    bots = Identity("bots", Role.SERVICE)
    for _ in range(50):
        limiter.admit_call(bots, "/dast.v1.GameService/SubmitCommand")
        assert limiter.open_stream(bots) is None  # not counted
    with pytest.raises(ServiceError):
        limiter.admit_call(bots, "/dast.v1.GameService/SubmitCommand")


def test_a_player_holds_at_most_its_streams_and_gets_them_back_when_they_close() -> None:
    limiter = CallerLimiter(CallerLimits(streams_per_player=2))
    alice, bob = Identity("alice", Role.PLAYER), Identity("bob", Role.PLAYER)
    first, second = limiter.open_stream(alice), limiter.open_stream(alice)
    assert first is not None and second is not None
    with pytest.raises(ServiceError) as refused:
        limiter.open_stream(alice)
    assert refused.value.reason == Reason.TOO_MANY_STREAMS
    assert refused.value.retry_after is not None
    bobs = limiter.open_stream(bob)
    assert bobs is not None
    first.close()
    first.close()  # closing twice gives back nothing more
    third = limiter.open_stream(alice)
    assert third is not None
    for ticket in (second, third, bobs):
        ticket.close()
    assert limiter.tracked() == 0  # no counter outlives its streams
    assert limiter.in_use() == (0, 0, 0)


def _exhausted(refused: pytest.ExceptionInfo[ServiceError], reason: Reason) -> None:
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.reason == reason
    assert refused.value.retry_after is not None and refused.value.retry_after > 0


def test_the_process_holds_at_most_its_stream_budget_and_an_address_its_share() -> None:
    limiter = CallerLimiter(CallerLimits(streams_per_process=8, address_share=0.5))
    assert limiter.limits.streams_per_address == 4
    here, there, elsewhere = "ipv4:10.0.0.1", "ipv4:10.0.0.2", "ipv4:10.0.0.3"
    # Four players behind one address (a carrier's): its share, then address_limited.
    tickets = [limiter.open_stream(Identity(f"p{n}", Role.PLAYER), here) for n in range(4)]
    with pytest.raises(ServiceError) as refused:
        limiter.open_stream(Identity("p4", Role.PLAYER), here)
    _exhausted(refused, Reason.ADDRESS_LIMITED)
    # Other addresses fill the rest of the process's budget; then server_busy for anyone.
    tickets += [limiter.open_stream(Identity(f"q{n}", Role.PLAYER), there) for n in range(4)]
    with pytest.raises(ServiceError) as refused:
        limiter.open_stream(Identity("r", Role.PLAYER), elsewhere)
    _exhausted(refused, Reason.SERVER_BUSY)
    assert limiter.in_use()[0] == 8
    # Services are never counted nor refused.
    assert limiter.open_stream(Identity("bots", Role.SERVICE), elsewhere) is None
    # A stream that ends frees its place for anyone.
    ticket = tickets.pop()
    assert ticket is not None
    ticket.close()
    again = limiter.open_stream(Identity("r", Role.PLAYER), elsewhere)
    assert again is not None
    for ticket in [*tickets, again]:
        assert ticket is not None
        ticket.close()
    assert limiter.in_use() == (0, 0, 0) and limiter.tracked() == 0


def _spectator(limiter: CallerLimiter, name: str, address: str, game: str) -> StreamTicket:
    ticket = limiter.open_stream(Identity(name, Role.PLAYER), address)
    assert ticket is not None
    try:
        ticket.spectate(game)
    except ServiceError:
        ticket.close()  # as the server's interceptor does when the handler refuses
        raise
    return ticket


def test_spectators_are_capped_per_match_and_leave_room_for_players_own_streams() -> None:
    limiter = CallerLimiter(CallerLimits(streams_per_process=20, spectator_share=0.5,
                                         spectators_per_game=6, address_share=1.0))
    address = "ipv4:10.0.0.1"
    watching = [_spectator(limiter, f"s{n}", address, "game:a") for n in range(6)]
    with pytest.raises(ServiceError) as refused:
        _spectator(limiter, "s6", address, "game:a")
    _exhausted(refused, Reason.TOO_MANY_SPECTATORS)
    # Another match admits its own, up to the process's spectator share (10 of 20).
    other = "ipv4:10.0.0.2"
    watching += [_spectator(limiter, f"t{n}", other, "game:b") for n in range(4)]
    with pytest.raises(ServiceError) as refused:
        _spectator(limiter, "t4", other, "game:b")
    _exhausted(refused, Reason.SERVER_BUSY)
    assert limiter.in_use()[:2] == (10, 10)  # the refused ones hold nothing
    # Seated players' own streams still open: the other half of the budget is theirs.
    seats = [limiter.open_stream(Identity(f"seat{n}", Role.PLAYER), address) for n in range(10)]
    assert all(seat is not None for seat in seats)
    for ticket in [*watching, *seats]:
        assert ticket is not None
        ticket.close()
    assert limiter.in_use() == (0, 0, 0) and limiter.tracked() == 0


def test_an_address_holds_at_most_its_share_of_spectators() -> None:
    limiter = CallerLimiter(CallerLimits(streams_per_process=40, spectator_share=0.5,
                                         spectators_per_game=100, address_share=0.25))
    assert limiter.limits.spectators_per_address == 5
    here = "ipv4:10.0.0.1"
    watching = [_spectator(limiter, f"s{n}", here, "game:a") for n in range(5)]
    with pytest.raises(ServiceError) as refused:
        _spectator(limiter, "s5", here, "game:a")
    _exhausted(refused, Reason.ADDRESS_LIMITED)
    seat = limiter.open_stream(Identity("seated", Role.PLAYER), here)  # the address's rest
    assert seat is not None
    for ticket in [*watching, seat]:
        ticket.close()
    assert limiter.tracked() == 0


def test_calls_in_flight_are_bounded_per_process_and_per_address() -> None:
    limiter = CallerLimiter(CallerLimits(calls_in_flight=4, address_share=0.5))
    here, there, elsewhere = "ipv4:10.0.0.1", "ipv4:10.0.0.2", "ipv4:10.0.0.3"
    limiter.enter_call(here)
    limiter.enter_call(here)
    with pytest.raises(ServiceError) as refused:
        limiter.enter_call(here)
    _exhausted(refused, Reason.ADDRESS_LIMITED)
    limiter.enter_call(there)
    limiter.enter_call(there)
    with pytest.raises(ServiceError) as refused:
        limiter.enter_call(elsewhere)
    _exhausted(refused, Reason.SERVER_BUSY)
    assert refused.value.retry_after is not None and refused.value.retry_after < 1
    # A stream opening counts as a call in flight: refused, it holds nothing afterwards.
    with pytest.raises(ServiceError) as refused:
        limiter.open_stream(Identity("alice", Role.PLAYER), here)
    _exhausted(refused, Reason.ADDRESS_LIMITED)
    assert limiter.streams.open_count(Identity("alice", Role.PLAYER)) == 0
    assert limiter.address_streams.open_count(here) == 0
    limiter.leave_call(here)
    limiter.enter_call(elsewhere)
    for address in (here, there, there, elsewhere):
        limiter.leave_call(address)
    assert limiter.in_use() == (0, 0, 0) and limiter.tracked() == 0


@pytest.mark.parametrize(("peer", "forwarded", "address"), [
    # A trusted proxy: the nearest forwarded address that is not a proxy of ours.
    ("ipv4:10.0.0.5:4000", "198.51.100.7", "ipv4:198.51.100.7"),
    ("ipv4:10.0.0.5:4000", "192.0.2.1, 198.51.100.7, 10.0.0.9", "ipv4:198.51.100.7"),
    ("ipv4:10.0.0.5:4000", "2001:db8::1", "ipv6:[2001:db8::1]"),
    # Nothing forwarded, or a hop that does not parse: the proxy's own address.
    ("ipv4:10.0.0.5:4000", None, "ipv4:10.0.0.5"),
    ("ipv4:10.0.0.5:4000", "198.51.100.7, not-an-ip", "ipv4:10.0.0.5"),
    # Anyone else's header is ignored: a client could write any address in it.
    ("ipv4:203.0.113.4:4000", "198.51.100.7", "ipv4:203.0.113.4"),
])
def test_a_forwarded_address_is_believed_only_from_a_trusted_proxy(
    peer: str, forwarded: str | None, address: str,
) -> None:
    metadata = () if forwarded is None else (("x-forwarded-for", forwarded),)
    assert ClientAddress(["10.0.0.0/8"]).of(peer, lambda: metadata) == address
    assert ClientAddress().of(peer, lambda: metadata) == peer_host(peer)


def test_sign_ins_are_limited_per_device_and_per_address() -> None:
    clock = Clock()
    limiter = CallerLimiter(CallerLimits(sign_ins_per_minute_per_device=2,
                                         sign_ins_per_minute_per_address=5), clock=clock)
    here, there = "ipv4:10.0.0.1:5000", "ipv4:10.0.0.2:6000"
    limiter.admit_open_call(here, "device-1")
    limiter.admit_open_call("ipv4:10.0.0.1:5001", "device-1")  # another port, same address
    with pytest.raises(ServiceError, match="this device") as refused:
        limiter.admit_open_call(there, "device-1")
    assert refused.value.retry_after == pytest.approx(30.0)
    for device in ("device-2", "device-3", "device-4"):  # five calls from here so far
        limiter.admit_open_call(here, device)
    with pytest.raises(ServiceError, match="this address"):
        limiter.admit_open_call(here, "device-5")
    limiter.admit_open_call(there, "device-5")  # another address is untouched
    clock.now += 60
    limiter.admit_open_call(here, "device-1")  # a minute later: refilled


@pytest.mark.parametrize(("peer", "host"), [
    ("ipv4:127.0.0.1:50051", "ipv4:127.0.0.1"),
    ("ipv6:[::1]:50051", "ipv6:[::1]"),
    ("unix:/tmp/dast.sock", "unix:/tmp/dast.sock"),
])
def test_the_peer_address_drops_the_port(peer: str, host: str) -> None:
    assert peer_host(peer) == host


def test_limits_are_read_from_dast_limit_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAST_LIMIT_STREAMS_PER_PLAYER", "5")
    monkeypatch.setenv("DAST_LIMIT_CALLS_PER_SECOND", "2.5")
    monkeypatch.setenv("DAST_LIMIT_SIGN_INS_PER_MINUTE_PER_ADDRESS", "7")
    limits = Settings().caller_limits()
    assert (limits.streams_per_player, limits.calls_per_second) == (5, 2.5)
    assert limits.sign_ins_per_minute_per_address == 7
    assert limits.call_burst == CallerLimits().call_burst  # unset: the default


def test_process_budgets_and_trusted_proxies_are_read_from_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DAST_LIMIT_STREAMS_PER_PROCESS", "900")
    monkeypatch.setenv("DAST_LIMIT_SPECTATORS_PER_GAME", "30")
    monkeypatch.setenv("DAST_LIMIT_CALLS_IN_FLIGHT", "64")
    monkeypatch.setenv("DAST_LIMIT_ADDRESS_SHARE", "0.1")
    monkeypatch.setenv("DAST_LIMIT_SPECTATOR_SHARE", "0.6")
    monkeypatch.setenv("DAST_TRUSTED_PROXIES", "10.0.0.0/8, fd00::/8")
    limits = Settings().caller_limits()
    assert (limits.streams_per_process, limits.spectators_per_game) == (900, 30)
    assert (limits.calls_in_flight, limits.streams_per_address, limits.calls_per_address) == (
        64, 90, 6)
    assert limits.spectator_streams == 540
    assert limits.trusted_proxies == ("10.0.0.0/8", "fd00::/8")
    monkeypatch.setenv("DAST_TRUSTED_PROXIES", "10.0.0.0/8, the-load-balancer")
    with pytest.raises(ValueError, match="the-load-balancer"):
        Settings()
    monkeypatch.setenv("DAST_TRUSTED_PROXIES", "")
    monkeypatch.setenv("DAST_LIMIT_ADDRESS_SHARE", "1.5")
    with pytest.raises(ValueError, match="limit_address_share"):
        Settings()
