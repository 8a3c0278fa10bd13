"""Streams and work bounded per match, per address and per process, end to end.

A flood of spectators from one address (many guests, each opening many spectator streams of
one match) is refused past the match's spectator cap with RESOURCE_EXHAUSTED, RetryInfo and
``too_many_spectators``; the process holds no more streams than the limits allow; another
match's players keep playing; a seated player's own stream still opens; streams that end
(cancelled, or the client's connection gone) give their places back. The address's share
and the process's budget refuse with ``address_limited`` and ``server_busy``, for streams and
for unary calls in flight.

The game service runs on loopback (the ``embedded`` fixture) with small limits. Every client
connects from 127.0.0.1, which the server trusts as a proxy, and names its own address in
``x-forwarded-for``: the attacker, the players and the bystanders are different addresses,
as on the internet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import pytest
from prometheus_client import CollectorRegistry

from dast.v1 import common_pb2, game_pb2, hokm_pb2, lobby_pb2
from engine.core.rng import DeterministicRandom
from services.game.service import GameService
from services.platform.auth import Role
from services.platform.errors import Reason, reason_of, retry_after_of
from services.platform.limits import CallerLimiter, CallerLimits
from services.platform.metrics import GameMetrics
from tests.e2e.helpers import Guest, stack
from tests.services.game.conftest import Embedded
from tests.services.game.helpers import GameClient, next_move, players

pytestmark = pytest.mark.timeout(120)
PROXY = ("127.0.0.1/32",)
LIMITS = CallerLimits(
    streams_per_player=8, calls_per_second=10_000.0, call_burst=10_000,
    sign_ins_per_minute_per_address=10_000, sign_ins_per_minute_per_device=10_000,
    streams_per_process=120, spectator_share=0.5, spectators_per_game=24,
    calls_in_flight=64, address_share=0.5, trusted_proxies=PROXY,
)
"""60 spectator streams in the process, 24 of one match; an address holds 60 streams (30 of
them spectators') and 32 calls in flight."""
ATTACKER = "203.0.113.66"
GUESTS = 12
STREAMS_PER_GUEST = 8


@pytest.fixture
def limiter() -> CallerLimiter:
    return CallerLimiter(LIMITS)


@dataclass
class Served:
    """The ``embedded`` game service, with its server's limiter and a gauge to read."""

    embedded: Embedded
    limiter: CallerLimiter
    registry: CollectorRegistry

    @property
    def address(self) -> str:
        return self.embedded.address

    @property
    def service(self) -> GameService:
        return self.embedded.service

    def client(self, player_id: str, address: str, role: Role = Role.PLAYER) -> GameClient:
        """A caller at ``address`` (sent in ``x-forwarded-for``)."""
        client = self.embedded.client(player_id, role)
        client.metadata = (  # type: ignore[assignment]  # GameClient's holds the token only
            *client.metadata, ("x-forwarded-for", address))
        return client

    def open_streams(self) -> float:
        return self.registry.get_sample_value("dast_open_streams") or 0.0


@pytest.fixture
def served(embedded: Embedded, limiter: CallerLimiter) -> Served:
    registry = CollectorRegistry()
    embedded.service.metrics = GameMetrics(registry)
    return Served(embedded, limiter, registry)


async def _match(served: Served, prefix: str) -> tuple[str, list[GameClient]]:
    """A Hokm match of four players ``<prefix>0..3``, each at an address of its own."""
    created = await served.client("lobby", "198.51.100.1", Role.SERVICE).create(
        game_pb2.CreateGameRequest(game_type=common_pb2.GAME_TYPE_HOKM,
                                   hokm=hokm_pb2.HokmRules(), players=players(4, prefix)))
    return created.game_id, [served.client(f"{prefix}{seat}", f"198.51.100.{10 + seat}")
                             for seat in range(4)]


async def _open(client: GameClient, game_id: str, after_seq: int = 0) -> tuple[
        grpc.aio.UnaryStreamCall | None, grpc.aio.AioRpcError | None]:
    """Open a Subscribe stream: the call once its first event arrived, or the refusal."""
    call = client.stub.Subscribe(game_pb2.SubscribeRequest(game_id=game_id, after_seq=after_seq),
                                 metadata=client.metadata)
    try:
        await call.read()
    except grpc.aio.AioRpcError as error:
        return None, error
    return call, None


def _assert_refused(error: grpc.aio.AioRpcError | None, reason: Reason) -> None:
    assert error is not None
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    assert reason_of(error) == reason, error.details()
    retry = retry_after_of(error)
    assert retry is not None and 0 < retry <= 60


async def _until(condition: object, what: str, seconds: float = 30.0) -> None:
    """Wait until ``condition()`` holds (streams are released as their calls wind down)."""
    async with asyncio.timeout(seconds):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def _play(clients: Sequence[GameClient], game_id: str, moves: int) -> int:
    """Play ``moves`` moves of the match, each seat from its own view; the seq reached."""
    rngs = [DeterministicRandom(bytes(32), f"budgets/{seat}") for seat in range(4)]
    seq = 0
    for number in range(moves):
        chosen = await next_move(clients, game_id, rngs)
        assert chosen is not None
        seat, move, seen = chosen
        reply = await clients[seat].submit(game_id, f"m{number}", move, expected_seq=seen)
        seq = reply.seq
    return seq


async def test_a_spectator_flood_from_one_address_is_refused_and_other_players_play_on(
    served: Served,
) -> None:
    attacked, hosts = await _match(served, "host")
    played, victims = await _match(served, "victim")
    before = (await victims[0].view(played)).seq
    guests = [served.client(f"guest-{number}", ATTACKER) for number in range(GUESTS)]

    async def flood() -> list[tuple[grpc.aio.UnaryStreamCall | None,
                                    grpc.aio.AioRpcError | None]]:
        return await asyncio.gather(*(_open(guest, attacked) for guest in guests
                                      for _ in range(STREAMS_PER_GUEST)))

    # The flood and both matches' play at once: each guest is within its own limits.
    outcomes, _, reached = await asyncio.gather(
        flood(), _play(hosts, attacked, 8), _play(victims, played, 12))
    opened = [call for call, _ in outcomes if call is not None]
    assert len(opened) == LIMITS.spectators_per_game
    for _, error in outcomes:
        if error is not None:
            _assert_refused(error, Reason.TOO_MANY_SPECTATORS)
    # The process holds the match's cap of spectators and nothing of the refused opens.
    assert served.limiter.in_use()[:2] == (LIMITS.spectators_per_game,) * 2
    assert served.open_streams() == LIMITS.spectators_per_game
    # The other match went on: its players' commands and views were answered.
    assert reached > before
    assert (await victims[1].view(played)).seq == reached

    # The match is full of spectators, for anyone at any address…
    _, refused = await _open(served.client("bystander", "192.0.2.200"), attacked)
    _assert_refused(refused, Reason.TOO_MANY_SPECTATORS)
    # …but its seated players' own streams still open.
    seats = [await _open(host, attacked) for host in hosts]
    assert all(call is not None for call, _ in seats), [error for _, error in seats]

    # Cancelled streams give their places back: spectators open again, up to the cap.
    for call in opened:
        call.cancel()
    await _until(lambda: served.limiter.in_use()[1] == 0, "spectators released")
    again = await asyncio.gather(*(_open(guests[n % GUESTS], attacked)
                                   for n in range(LIMITS.spectators_per_game + 1)))
    assert sum(call is not None for call, _ in again) == LIMITS.spectators_per_game
    for call, _ in [*again, *seats]:
        if call is not None:
            call.cancel()
    await _until(lambda: served.limiter.in_use() == (0, 0, 0), "every stream released")
    assert served.limiter.counters() == 0


async def test_streams_of_a_client_that_disconnects_give_their_places_back(
    served: Served,
) -> None:
    attacked, _ = await _match(served, "host")
    async with grpc.aio.insecure_channel(served.address) as gone:
        client = GameClient(gone, "leaver")
        client.metadata = (  # type: ignore[assignment]  # GameClient's holds the token only
            *client.metadata, ("x-forwarded-for", ATTACKER))
        calls = [await _open(client, attacked) for _ in range(STREAMS_PER_GUEST)]
        assert all(call is not None for call, _ in calls)
        await _until(lambda: served.limiter.in_use()[1] == STREAMS_PER_GUEST, "counted")
    # The connection closed without cancelling a single call.
    await _until(lambda: served.limiter.in_use() == (0, 0, 0), "released on disconnect")
    await _until(lambda: served.open_streams() == 0, "the service's streams ended")


async def test_an_address_over_its_share_and_a_process_over_its_budget_are_refused(
    served: Served,
) -> None:
    games = [(await _match(served, f"m{number}-"))[0] for number in range(4)]
    # One address: 30 spectator streams at most (half its 60), whatever the matches.
    crowd = [served.client(f"crowd-{n}", ATTACKER) for n in range(8)]
    held = [await _open(crowd[n % 8], games[n % 2]) for n in range(30)]
    assert all(call is not None for call, _ in held)
    _, refused = await _open(crowd[0], games[2])
    _assert_refused(refused, Reason.ADDRESS_LIMITED)
    # Other addresses fill the process's spectator share (60 of its 120 streams).
    others = [served.client(f"other-{n}", f"192.0.2.{n}") for n in range(30)]
    held += [await _open(other, games[2 + n % 2]) for n, other in enumerate(others)]
    assert all(call is not None for call, _ in held)
    _, refused = await _open(served.client("late", "192.0.2.250"), games[3])
    _assert_refused(refused, Reason.SERVER_BUSY)
    # The other half is the players': seated players open their own streams (8 each) until
    # the process holds its 120, and then the process refuses them too.
    seated = [served.client(f"m{g}-{seat}", f"198.51.100.{100 + 4 * g + seat}")
              for g in range(4) for seat in range(4)]
    own = [await _open(player, games[index // 4]) for index, player in enumerate(seated)
           for _ in range(3)]
    assert all(call is not None for call, _ in own)
    assert served.limiter.in_use()[:2] == (108, 60)
    more = [await _open(player, games[index // 4]) for index, player in enumerate(seated)]
    assert sum(call is not None for call, _ in more) == 12
    assert all(error is None or reason_of(error) == Reason.SERVER_BUSY for _, error in more)
    _assert_refused(next(error for _, error in more if error is not None), Reason.SERVER_BUSY)
    for call, _ in [*held, *own, *more]:
        if call is not None:
            call.cancel()
    await _until(lambda: served.limiter.in_use() == (0, 0, 0), "every stream released")


async def test_unary_calls_in_flight_are_bounded_per_address_and_per_process(
    served: Served, monkeypatch: pytest.MonkeyPatch,
) -> None:
    game_id, _ = await _match(served, "host")
    # Every GetView waits at a gate, so the calls stay in flight until it opens.
    gate = asyncio.Event()
    refresh = served.service.repository.refresh

    async def held_refresh(game: str) -> object:
        await gate.wait()
        return await refresh(game)

    monkeypatch.setattr(served.service.repository, "refresh", held_refresh)
    request = game_pb2.GetViewRequest(game_id=game_id)

    def view(client: GameClient) -> asyncio.Task[object]:
        return asyncio.ensure_future(client.stub.GetView(request, metadata=client.metadata))

    crowd = [served.client(f"crowd-{n}", ATTACKER) for n in range(40)]
    waiting = [view(client) for client in crowd[:32]]
    await _until(lambda: served.limiter.in_use()[2] == 32, "32 calls in flight")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await view(crowd[32])
    _assert_refused(refused.value, Reason.ADDRESS_LIMITED)
    others = [served.client(f"other-{n}", f"192.0.2.{n}") for n in range(32)]
    waiting += [view(client) for client in others]
    await _until(lambda: served.limiter.in_use()[2] == 64, "64 calls in flight")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await view(served.client("late", "192.0.2.250"))
    _assert_refused(refused.value, Reason.SERVER_BUSY)
    # Services are not counted: the lobby and the bots go on while players are refused.
    assert (await served.client("bots", ATTACKER, Role.SERVICE).stub.GetSigningKey(
        game_pb2.GetSigningKeyRequest(), metadata=served.client(
            "bots", ATTACKER, Role.SERVICE).metadata)).public_key
    gate.set()
    for answer in await asyncio.gather(*waiting):
        assert isinstance(answer, game_pb2.GetViewResponse)
    await _until(lambda: served.limiter.in_use() == (0, 0, 0), "every call counted out")


async def test_a_table_admits_its_cap_of_onlookers_and_its_seated_players_still_watch() -> None:
    limits = CallerLimits(spectators_per_game=3, calls_per_second=10_000.0, call_burst=10_000,
                          sign_ins_per_minute_per_address=10_000, trusted_proxies=PROXY)
    async with stack(timers=False, bots=False, limits=limits) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = await Guest.sign_in(channel, "device-of-the-host")
        table = (await host.call("CreateTable", lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)))).table
        request = lobby_pb2.WatchTableRequest(table_id=table.table_id)

        async def watch(guest: Guest, address: str) -> tuple[
                grpc.aio.UnaryStreamCall | None, grpc.aio.AioRpcError | None]:
            call = guest.lobby.WatchTable(
                request, metadata=(*guest.metadata, ("x-forwarded-for", address)))
            try:
                await call.read()
            except grpc.aio.AioRpcError as error:
                return None, error
            return call, None

        onlookers = [await Guest.sign_in(channel, f"device-onlooker-{n}") for n in range(4)]
        watching = [await watch(guest, f"192.0.2.{n}") for n, guest in enumerate(onlookers)]
        assert [call is not None for call, _ in watching] == [True, True, True, False]
        _assert_refused(watching[3][1], Reason.TOO_MANY_SPECTATORS)
        own, error = await watch(host, "198.51.100.7")
        assert own is not None, error
        for call, _ in [*watching, (own, None)]:
            if call is not None:
                call.cancel()
