"""Limits per caller, end to end: one player flooding streams and commands, and guests
flooding sign-ins, are refused past the limits with RESOURCE_EXHAUSTED and RetryInfo, the
process does not grow with the flood, and another player's game goes on meanwhile.

Runs a whole process (lobby, game, bots) with the default :class:`CallerLimits`, trusting
loopback as a proxy: the flooding player and the other player name different addresses in
``x-forwarded-for`` (from one address, the flood would take the address's share of the
calls in flight from both: tests/services/game/test_stream_budgets.py covers that).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, hokm_pb2, lobby_pb2
from services.platform.errors import reason_of, retry_after_of
from services.platform.limits import CallerLimits
from tests.e2e.helpers import Guest, stack

pytestmark = pytest.mark.timeout(120)
LIMITS = CallerLimits(trusted_proxies=("127.0.0.1/32",))
FLOOD = 1_000
REPEATS = 3
REFUSED_MOVES = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT,
                 grpc.StatusCode.ABORTED)
"""How the game refuses the flood's admitted commands (cards not held, not the turn)."""
HOKM = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=7)


def rss_bytes() -> int:
    """This process's resident memory (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class Addressed(Guest):
    """A guest calling from an address of its own (``x-forwarded-for``)."""

    address: str = ""

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (*super().metadata, ("x-forwarded-for", self.address))

    @classmethod
    async def at(cls, channel: grpc.aio.Channel, device: str, address: str) -> Addressed:
        guest = await cls.sign_in(channel, device)
        assert isinstance(guest, Addressed)
        guest.address = address
        return guest


def assert_exhausted(error: grpc.aio.AioRpcError) -> None:
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    # One player's 1,000 calls at once are also more than its address may have in flight.
    assert reason_of(error) in ("rate_limited", "too_many_streams", "address_limited")
    retry = retry_after_of(error)
    assert retry is not None and 0 <= retry <= 60


async def _open(guest: Guest, game_id: str) -> tuple[grpc.aio.UnaryStreamCall | None,
                                                     grpc.aio.AioRpcError | None]:
    """Open a Subscribe stream; the call once its first event arrived, or the refusal."""
    call = guest.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                metadata=guest.metadata)
    try:
        await call.read()
    except grpc.aio.AioRpcError as error:
        return None, error
    return call, None


async def _victim_plays(guest: Guest, game_id: str, stop: asyncio.Event,
                        latencies: list[float]) -> None:
    """Another player's game, at a person's pace raised tenfold: a move round trip (view,
    and the move when it is their turn) every 30 ms, each one timed."""
    while not stop.is_set():
        started = time.perf_counter()
        await guest.play_move(game_id)
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.03)


@contextlib.asynccontextmanager
async def _victim(guest: Guest, game_id: str) -> AsyncIterator[list[float]]:
    latencies: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(_victim_plays(guest, game_id, stop, latencies))
    try:
        yield latencies
    finally:
        stop.set()
        await task  # raises if any of the victim's calls failed


async def test_a_flood_of_streams_and_commands_is_refused_and_others_play_on() -> None:
    async with stack(timers=False, limits=LIMITS) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        attacker = await Addressed.at(channel, "device-attacker", "203.0.113.1")
        victim = await Addressed.at(channel, "device-victim", "198.51.100.1")
        attacked = await attacker.table_with_bots(HOKM)
        played = await victim.table_with_bots(HOKM)
        seq_before = (await victim.view(played.game_id)).seq
        tasks_before = len(asyncio.all_tasks())
        async with _victim(victim, played.game_id) as latencies:
            # 1,000 streams at once: the player's limit opens, the rest are refused.
            outcomes = await asyncio.gather(
                *(_open(attacker, attacked.game_id) for _ in range(FLOOD)))
            opened = [call for call, _ in outcomes if call is not None]
            refused = [error for _, error in outcomes if error is not None]
            assert len(opened) == LIMITS.streams_per_player
            assert len(refused) == FLOOD - LIMITS.streams_per_player
            for error in refused:
                assert_exhausted(error)
            # More rounds with the limit's streams held: all refused, and the process does
            # not grow with them. RSS is read after a collection at the end of each round
            # (gRPC's and the allocator's buffers move it by tens of MiB within one); from
            # the first of these rounds to the last, an unbounded server would hold 2,000
            # more streams, about 64 MiB at 32 kB each.
            rss_rounds: list[int] = []
            for _ in range(REPEATS):
                await asyncio.sleep(1.0)  # past the burst: the stream limit refuses, not rate
                again = await asyncio.gather(
                    *(_open(attacker, attacked.game_id) for _ in range(FLOOD)))
                assert all(call is None for call, _ in again)
                for _, error in again:
                    assert error is not None
                    assert_exhausted(error)
                assert any(reason_of(error) == "too_many_streams" for _, error in again if error)
                del again
                gc.collect()
                rss_rounds.append(rss_bytes())
            # The victim still opens a stream of their own game.
            own, error = await _open(victim, played.game_id)
            assert own is not None, error
            own.cancel()
            # 1,000 commands at once: past the burst (and what the rate refilled), refused.
            flood_started = time.perf_counter()
            commands = await asyncio.gather(*(
                attacker.call("SubmitCommand", game_pb2.SubmitCommandRequest(
                    game_id=attacked.game_id, command_id=f"flood-{number}",
                    hokm=hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=number % 52))))
                for number in range(FLOOD)), return_exceptions=True)
            elapsed = time.perf_counter() - flood_started
            exhausted = [c for c in commands if isinstance(c, grpc.aio.AioRpcError)
                         and c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED]
            for error in exhausted:
                assert_exhausted(error)
            others = [c for c in commands if isinstance(c, BaseException) and c not in exhausted]
            assert all(isinstance(c, grpc.aio.AioRpcError) and c.code() in REFUSED_MOVES
                       for c in others), others[:3]
            admitted = FLOOD - len(exhausted)
            assert admitted <= LIMITS.call_burst + LIMITS.calls_per_second * elapsed + 1
            # Memory: the refused calls left nothing behind; the open streams are the limit's.
            await asyncio.sleep(0.2)
            task_growth = len(asyncio.all_tasks()) - tasks_before
            await asyncio.sleep(0.5)  # the victim plays on while the attacker holds streams
        for call in opened:
            call.cancel()
        seq_after = (await victim.view(played.game_id)).seq
    # The victim's game went on (its bots wait for the victim's moves).
    assert seq_after > seq_before
    growth = (rss_rounds[-1] - rss_rounds[0]) / 2**20
    print(f"\nvictim move round trips during the flood: {len(latencies)}, median "
          f"{statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms; "
          f"attacker commands admitted {admitted}/{FLOOD} in {elapsed:.2f} s; asyncio tasks "
          f"+{task_growth} with {len(opened)} streams open; RSS {growth:+.1f} MiB over "
          f"{(REPEATS - 1) * FLOOD:,} more refused streams")
    # Loose: two shared cores run the server, the bots, the victim and the attacker's own
    # 1,000 client calls in this one process.
    assert max(latencies) < 5.0
    # Each open stream is 3 server tasks and 1 of this client; refused calls leave none.
    assert task_growth <= 4 * LIMITS.streams_per_player + 20
    assert growth < 16


async def test_a_flood_of_guest_sign_ins_is_refused_per_device_and_per_address() -> None:
    async with stack(timers=False, bots=False, limits=LIMITS) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        player = await Guest.sign_in(channel, "device-an-existing-player")
        table = (await player.call("CreateTable",
                                   lobby_pb2.CreateTableRequest(settings=HOKM))).table

        async def sign_in(device: str) -> grpc.aio.AioRpcError | None:
            try:
                await Guest.sign_in(channel, device)
            except grpc.aio.AioRpcError as error:
                return error
            return None

        # One device: its limit per minute, then refusals (the existing player counts too:
        # it signed in from the same address).
        same_device = [await sign_in("device-flooding") for _ in range(15)]
        allowed = LIMITS.sign_ins_per_minute_per_device
        assert same_device[:allowed] == [None] * allowed
        for error in same_device[allowed:]:
            assert error is not None
            assert_exhausted(error)
            assert "device" in error.details()
        # Many devices from one address: the address's limit, then refusals.
        many = await asyncio.gather(*(sign_in(f"device-many-{n:04d}") for n in range(100)))
        accepted = sum(error is None for error in many)
        budget = LIMITS.sign_ins_per_minute_per_address - 1 - len(same_device)
        assert budget <= accepted <= budget + 2  # the bucket refills one a second meanwhile
        for error in many:
            if error is not None:
                assert_exhausted(error)
        # Signed-in players are not affected.
        again = (await player.call("GetTable",
                                   lobby_pb2.GetTableRequest(table_id=table.table_id))).table
        assert again.table_id == table.table_id
