"""Limits per caller (services/platform/limits.py): token buckets, stream slots, sign-ins."""

from __future__ import annotations

import grpc
import pytest

from services.platform.auth import Identity, Role
from services.platform.config import Settings
from services.platform.errors import Reason, ServiceError
from services.platform.limits import CallerLimiter, CallerLimits, TokenBuckets, peer_host


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
        assert limiter.open_stream(bots) is False  # not counted
    with pytest.raises(ServiceError):
        limiter.admit_call(bots, "/dast.v1.GameService/SubmitCommand")


def test_a_player_holds_at_most_its_streams_and_gets_them_back_when_they_close() -> None:
    limiter = CallerLimiter(CallerLimits(streams_per_player=2))
    alice, bob = Identity("alice", Role.PLAYER), Identity("bob", Role.PLAYER)
    assert limiter.open_stream(alice) and limiter.open_stream(alice)
    with pytest.raises(ServiceError) as refused:
        limiter.open_stream(alice)
    assert refused.value.reason == Reason.TOO_MANY_STREAMS
    assert refused.value.retry_after is not None
    assert limiter.open_stream(bob)
    limiter.close_stream(alice)
    assert limiter.open_stream(alice)
    for _ in range(2):
        limiter.close_stream(alice)
    limiter.close_stream(bob)
    assert limiter.tracked() == 0  # no counter outlives its streams


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
