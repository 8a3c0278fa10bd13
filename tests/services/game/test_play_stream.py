"""``GameService.Play``: a seat's commands and events on one bidirectional stream
(services/game/play.py, docs/clients.md "Play stream").

Every test runs a real server on loopback (the in-memory store and the in-process bus) and
real gRPC streams; matches over Play are compared byte for byte with the same matches played
by unary calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2

from dast.v1 import game_pb2, game_pb2_grpc, hokm_pb2, log_pb2
from engine.core.rng import DeterministicRandom
from services.platform.auth import Role
from services.platform.bans import Ban, InProcessBans
from services.platform.clock import wall_clock_ms
from services.platform.errors import reason_of
from services.platform.limits import MACHINE_SPEED, CallerLimiter, CallerLimits
from services.platform.revocations import InProcessRevocations
from tests.services.game.conftest import Embedded, serve_embedded
from tests.services.game.helpers import choose, next_move, players
from tests.services.game.test_matches import TABLES, Table
from tests.support.tokens import token

FIXED_MS = 1_767_225_600_000
"""The clock of the servers whose logs are compared (a log stamps every event)."""
SEED = bytes(range(32))
Seen = dict[int, list[tuple[bytes, bytes]]]
"""Each seat's events and receipts as its stream carried them (serialized)."""
NO_BDP = (("grpc.http2.bdp_probe", 0),)
"""A client channel whose receive window stays 64 kB: a client not reading fills it soon."""


def serving(*, clock: Callable[[], int] = wall_clock_ms, limiter: CallerLimiter | None = None,
            revocations: InProcessRevocations | None = None,
            bans: InProcessBans | None = None) -> AbstractAsyncContextManager[Embedded]:
    """A game service on loopback (the ``embedded`` fixture's), each test choosing its clock,
    limits, revocations and bans."""
    return serve_embedded(limiter or CallerLimiter(MACHINE_SPEED), clock=clock,
                          revocations=revocations, bans=bans)


class Play:
    """One client's Play stream: send requests, read responses."""

    def __init__(self, channel: grpc.aio.Channel, bearer: str, game_id: str, *,
                 after_seq: int = 0, seat: int | None = None) -> None:
        self._requests: asyncio.Queue[game_pb2.PlayRequest | None] = asyncio.Queue()
        opening = game_pb2.PlayOpen(game_id=game_id, after_seq=after_seq)
        if seat is not None:
            opening.seat = seat
        self._requests.put_nowait(game_pb2.PlayRequest(open=opening))
        self.call = game_pb2_grpc.GameServiceStub(channel).Play(
            self._sent(), metadata=(("authorization", f"Bearer {bearer}"),))

    async def _sent(self) -> AsyncIterator[game_pb2.PlayRequest]:
        while (request := await self._requests.get()) is not None:
            yield request

    def command(self, command_id: str, body: Any, *, game: str = "hokm",
                expected_seq: int | None = None) -> None:
        command = game_pb2.PlayCommand(command_id=command_id)
        getattr(command, game).CopyFrom(body)
        if expected_seq is not None:
            command.expected_seq = expected_seq
        self._requests.put_nowait(game_pb2.PlayRequest(command=command))

    def send(self, request: game_pb2.PlayRequest) -> None:
        self._requests.put_nowait(request)

    async def read(self) -> game_pb2.PlayResponse:
        response = await asyncio.wait_for(self.call.read(), 10)
        assert response is not grpc.aio.EOF, "the stream ended"
        assert isinstance(response, game_pb2.PlayResponse)
        return response

    async def outcome(self, command_id: str) -> tuple[game_pb2.PlayOutcome, list[int]]:
        """The outcome of ``command_id`` and the seqs of the events read before it."""
        seqs = []
        while True:
            response = await self.read()
            if response.HasField("event"):
                seqs.append(response.event.event.seq)
            elif response.HasField("outcome") and response.outcome.command_id == command_id:
                return response.outcome, seqs

    async def event_through(self, seq: int) -> game_pb2.SubscribeResponse:
        while True:
            response = await self.read()
            if response.HasField("event") and response.event.event.seq >= seq:
                return response.event

    async def status(self) -> tuple[grpc.StatusCode, str | None]:
        """How the stream ended (reading what is left)."""
        try:
            while await asyncio.wait_for(self.call.read(), 20) is not grpc.aio.EOF:
                pass
        except grpc.aio.AioRpcError as error:
            return error.code(), reason_of(error)
        return grpc.StatusCode.OK, None

    def close(self) -> None:
        self._requests.put_nowait(None)
        self.call.cancel()


def _reason(status: status_pb2.Status) -> str:
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


async def _created(server: Embedded, table: Table, game_id: str) -> None:
    admin = server.client("operator", Role.ADMIN)
    request = game_pb2.CreateGameRequest(game_type=table.game.GAME_TYPE, game_id=game_id,
                                         players=players(table.seats), server_seed=SEED)
    getattr(request, table.game.NAME).CopyFrom(table.rules)
    await admin.create(request)


async def _play_by_calls(server: Embedded, table: Table) -> tuple[list[bytes], Seen]:
    """The match played by SubmitCommand (moves from GetView), each seat watching by
    Subscribe: the exported log's bytes and each seat's (event, receipt) pairs."""
    await _created(server, table, "match")
    clients = [server.client(f"p{seat}") for seat in range(table.seats)]
    seen: Seen = {seat: [] for seat in range(table.seats)}

    async def watch(seat: int) -> None:
        call = clients[seat].stub.Subscribe(game_pb2.SubscribeRequest(game_id="match"),
                                            metadata=clients[seat].metadata)
        async for response in call:
            seen[seat].append((response.event.SerializeToString(), response.hash))

    watchers = [asyncio.create_task(watch(seat)) for seat in range(table.seats)]
    rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(table.seats)]
    moves = [0] * table.seats
    while (move := await next_move(clients, "match", rngs)) is not None:
        seat, body, seq = move
        await clients[seat].submit("match", f"s{seat}-{moves[seat]}", body, expected_seq=seq,
                                   game=table.game.NAME)
        moves[seat] += 1
    await asyncio.wait_for(asyncio.gather(*watchers), 10)
    log = [entry.SerializeToString() for entry in await clients[0].export("match")]
    return log, seen


async def _play_by_streams(server: Embedded, table: Table) -> tuple[list[bytes], Seen]:
    """The same match, each seat acting on its Play stream from the views it carries."""
    await _created(server, table, "match")
    seen = await play_seats([server.channel] * table.seats, table, "match")
    log = [entry.SerializeToString() for entry in
           await server.client("p0").export("match")]
    return log, seen


async def play_seats(channels: Sequence[grpc.aio.Channel], table: Table, game_id: str) -> Seen:
    """Play ``game_id`` to its end, seat ``s`` (player ``p<s>``) on a Play stream over
    ``channels[s]``, choosing its moves from the views the stream carries; what each seat
    received. Every command's outcome must be OK and come after the events it reports."""
    seen: Seen = {seat: [] for seat in range(table.seats)}

    async def seat_plays(seat: int) -> None:
        stream = Play(channels[seat], token(f"p{seat}"), game_id)
        rng = DeterministicRandom(bytes(32), f"seat/{seat}")
        moves = 0
        outcomes = []
        last_seq = 0
        try:
            async for response in stream.call:
                if response.HasField("outcome"):
                    assert response.outcome.status.code == code_pb2.OK, response.outcome
                    assert response.outcome.last_seq <= last_seq, "an outcome before its events"
                    outcomes.append(response.outcome.command_id)
                    continue
                if not response.HasField("event"):
                    continue
                event = response.event
                assert event.event.seq == last_seq + 1, "an event missed or repeated"
                last_seq = event.event.seq
                seen[seat].append((event.event.SerializeToString(), event.hash))
                if event.turn.your_turn:
                    body = choose(event, rng)
                    stream.command(f"s{seat}-{moves}", body, game=table.game.NAME,
                                   expected_seq=event.event.seq)
                    moves += 1
        finally:
            stream.close()
        # Every command's outcome came, the last one's (which ended the match) included.
        assert outcomes == [f"s{seat}-{move}" for move in range(moves)]

    await asyncio.wait_for(asyncio.gather(*(seat_plays(s) for s in range(table.seats))), 60)
    return seen


@pytest.mark.parametrize("name", list(TABLES))
async def test_a_match_over_play_streams_logs_the_same_bytes_as_over_calls(name: str) -> None:
    table = TABLES[name]
    async with serving(clock=lambda: FIXED_MS) as by_calls:
        unary_log, unary_seen = await _play_by_calls(by_calls, table)
    async with serving(clock=lambda: FIXED_MS) as by_streams:
        play_log, play_seen = await _play_by_streams(by_streams, table)
    assert table.game.is_over(table.game.replay(
        log_pb2.LogEntry.FromString(entry).event for entry in play_log))
    assert play_log == unary_log
    # Each seat's events and receipts, over Play as over Subscribe.
    assert play_seen == unary_seen


async def _hokm_game(server: Embedded, game_id: str = "g1") -> None:
    await _created(server, TABLES["hokm-4"], game_id)


async def _turn(stream: Play) -> game_pb2.SubscribeResponse:
    """The stream's next event telling its seat to act."""
    while True:
        response = await stream.read()
        if response.HasField("event") and response.event.turn.your_turn:
            return response.event


async def test_refused_commands_leave_the_stream_open_and_the_game_going() -> None:
    limits = CallerLimits(calls_per_second=1, call_burst=3)
    async with serving(limiter=CallerLimiter(limits)) as server:
        await _hokm_game(server)
        # A bot service acts first for the seat to act, with the command id "shared".
        clients = [server.client(f"p{seat}") for seat in range(4)]
        rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
        first = await next_move(clients, "g1", rngs)
        assert first is not None
        await server.client("bots", Role.SERVICE).submit(
            "g1", "shared", first[1], expected_seq=first[2], seat=first[0])
        seat = (await clients[0].view("g1")).hokm.turn
        stream = Play(server.channel, token(f"p{seat}"), "g1")
        turn = await _turn(stream)
        move = choose(turn, rngs[seat])
        # An illegal move: the rules refuse it with the status a call gets.
        illegal = hokm_pb2.HokmCommand(play_card=hokm_pb2.PlayCard(card=200))
        stream.command("bad-card", illegal)
        outcome, _ = await stream.outcome("bad-card")
        with pytest.raises(grpc.aio.AioRpcError) as by_call:
            await clients[seat].submit("g1", "bad-card-call", illegal)
        assert outcome.status.code == by_call.value.code().value[0]
        assert _reason(outcome.status) == f"ERROR_REASON_{reason_of(by_call.value)}".upper()
        assert outcome.status.message == by_call.value.details()
        # A stale expected_seq: ABORTED stale_expected_seq.
        stream.command("stale", move, expected_seq=turn.event.seq - 1)
        outcome, _ = await stream.outcome("stale")
        assert outcome.status.code == code_pb2.ABORTED
        assert _reason(outcome.status) == "ERROR_REASON_STALE_EXPECTED_SEQ"
        # Past the caller's SubmitCommand rate (the call above took a token too):
        # RESOURCE_EXHAUSTED rate_limited, with RetryInfo.
        stream.command("flood", illegal)
        outcome, _ = await stream.outcome("flood")
        assert outcome.status.code == code_pb2.RESOURCE_EXHAUSTED
        assert _reason(outcome.status) == "ERROR_REASON_RATE_LIMITED"
        assert any(detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR)
                   for detail in outcome.status.details)
        await asyncio.sleep(1.1)  # a token back in the bucket
        # Still open and the game still going: the legal move, sent with the id another
        # caller used, is a command of its own, accepted after its events.
        stream.command("shared", move, expected_seq=turn.event.seq)
        outcome, seqs = await stream.outcome("shared")
        assert outcome.status.code == code_pb2.OK and not outcome.duplicate
        assert outcome.first_seq == turn.event.seq + 1
        assert seqs and seqs[-1] == outcome.last_seq
        stream.close()


@pytest.mark.parametrize("applied_before_cut", [True, False])
async def test_a_stream_cut_mid_command_resumes_with_the_command_applied_once(
    applied_before_cut: bool,
) -> None:
    async with serving() as server:
        await _hokm_game(server)
        player = server.client("p0")
        seat = (await player.view("g1")).hokm.turn
        first = Play(server.channel, token(f"p{seat}"), "g1")
        turn = await _turn(first)
        move = choose(turn, DeterministicRandom(bytes(32), "cut"))
        first.command("once", move, expected_seq=turn.event.seq)
        # Cut before the app reads the outcome: after the command was applied, or at once
        # (applied or not, whichever the server got to first).
        while applied_before_cut and (await player.view("g1")).seq == turn.event.seq:
            await asyncio.sleep(0.01)
        first.close()
        # Resumed from the last seq received, the command sent again with its id.
        second = Play(server.channel, token(f"p{seat}"), "g1", after_seq=turn.event.seq)
        second.command("once", move, expected_seq=turn.event.seq)
        outcome, seqs = await second.outcome("once")
        assert outcome.status.code == code_pb2.OK
        assert outcome.duplicate or not applied_before_cut
        assert outcome.first_seq == turn.event.seq + 1
        # No event missed nor repeated: every one after the resume point, once, in order,
        # before the outcome.
        assert seqs == list(range(turn.event.seq + 1, outcome.last_seq + 1))
        # Applied once: the log ends with the first attempt's events.
        log = await server.client("operator", Role.ADMIN).export("g1")
        assert log[-1].event.seq == outcome.last_seq
        second.close()


async def test_a_command_resent_after_its_events_were_received_gets_its_outcome_at_once(
) -> None:
    """The app received the command's events, then lost the stream before its outcome: it
    resumes after the last seq it holds (past those events) and resends the command, and
    the duplicate outcome comes at once, though no event will come on the new stream until
    the next seat acts."""
    async with serving() as server:
        await _hokm_game(server)
        seat = (await server.client("p0").view("g1")).hokm.turn
        first = Play(server.channel, token(f"p{seat}"), "g1")
        turn = await _turn(first)
        move = choose(turn, DeterministicRandom(bytes(32), "resent"))
        first.command("held", move, expected_seq=turn.event.seq)
        outcome, _ = await first.outcome("held")
        first.close()
        second = Play(server.channel, token(f"p{seat}"), "g1", after_seq=outcome.last_seq)
        second.command("held", move, expected_seq=turn.event.seq)
        again, seqs = await second.outcome("held")
        assert again.status.code == code_pb2.OK and again.duplicate
        assert (again.first_seq, again.last_seq) == (outcome.first_seq, outcome.last_seq)
        assert seqs == []  # nothing happened since: the outcome did not wait for an event
        second.close()


async def test_a_client_that_stops_reading_is_cut_off_with_a_bounded_queue() -> None:
    async with serving() as server:
        server.service.play_queue_limit = 16
        table = TABLES["hokm-4"]
        long_match = Table(table.game, hokm_pb2.HokmRules(
            variant=hokm_pb2.HOKM_VARIANT_FOUR_PLAYERS, target_score=7), 4, table.visibility)
        await _created(server, long_match, "g1")
        channel = grpc.aio.insecure_channel(server.address, options=NO_BDP)
        idle = Play(channel, token("p1"), "g1")  # opened, never read
        lobby = server.client("bots", Role.SERVICE)
        rngs = [DeterministicRandom(bytes(32), f"seat/{seat}") for seat in range(4)]
        clients = [server.client(f"p{seat}") for seat in range(4)]
        played = 0
        # The whole match, by the service token, while the stream's client reads nothing.
        while (move := await next_move(clients, "g1", rngs)) is not None:
            seat, body, seq = move
            await lobby.submit("g1", f"m{played}", body, expected_seq=seq, seat=seat,
                               game=table.game.NAME)
            played += 1
            # Pings answered with heartbeats the client does not read either.
            idle.send(game_pb2.PlayRequest(ping=game_pb2.PlayPing(ping_id=played)))
        code, reason = await idle.status()
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "stream_backlog")
        # The server queued at most its limit for the stream, whatever the match's length.
        assert 0 < server.service.play_streams.most_queued <= 16
        await channel.close()


async def test_the_token_expires_mid_stream_unless_renewed() -> None:
    async with serving() as server:
        await _hokm_game(server)
        # Renewed in time: the stream outlives its first token.
        renewed = Play(server.channel, token("p2", ttl_seconds=2), "g1")
        renewed.send(game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(
            access_token=token("p2", ttl_seconds=3600))))
        while not (response := await renewed.read()).HasField("renewed"):
            pass
        assert response.renewed.expires_ms > (time.time() + 3000) * 1000
        # Not renewed: UNAUTHENTICATED token_expired when the token expires.
        lapsing = Play(server.channel, token("p3", ttl_seconds=2), "g1")
        assert await asyncio.wait_for(lapsing.status(), 10) == (
            grpc.StatusCode.UNAUTHENTICATED, "token_expired")
        # The renewed one is still open: a ping is answered.
        renewed.send(game_pb2.PlayRequest(ping=game_pb2.PlayPing(ping_id=7)))
        while not (response := await renewed.read()).HasField("heartbeat"):
            pass
        assert response.heartbeat.ping_id in (0, 7)
        # Another player's token is no renewal: the stream ends UNAUTHENTICATED.
        renewed.send(game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(
            access_token=token("p0"))))
        assert await renewed.status() == (grpc.StatusCode.UNAUTHENTICATED, "token_invalid")
        garbage = Play(server.channel, token("p1"), "g1")
        garbage.send(game_pb2.PlayRequest(renewal=game_pb2.PlayRenewal(access_token="x.y.z")))
        assert await garbage.status() == (grpc.StatusCode.UNAUTHENTICATED, "token_invalid")


async def test_an_idle_stream_sends_heartbeats() -> None:
    async with serving() as server:
        server.service.heartbeat_seconds = 0.2
        await _hokm_game(server)
        stream = Play(server.channel, token("p1"), "g1")
        beats = 0
        while beats < 2:
            response = await stream.read()
            if response.HasField("heartbeat"):
                assert response.heartbeat.ping_id == 0 and response.heartbeat.server_time_ms
                beats += 1
        stream.close()


async def test_a_revoked_session_or_a_banned_player_ends_a_play_stream() -> None:
    revocations = InProcessRevocations()
    bans = InProcessBans()
    async with serving(revocations=revocations, bans=bans) as server:
        await _hokm_game(server)
        revoked = Play(server.channel, token("p0", session_id="s-revoked"), "g1")
        banned = Play(server.channel, token("p1"), "g1")
        await revoked.event_through(1)
        await banned.event_through(1)
        await revocations.revoke(["s-revoked"])
        assert await revoked.status() == (grpc.StatusCode.UNAUTHENTICATED, "session_revoked")
        await bans.publish("p1", Ban(until_ms=None, reason="cheating"))
        assert await banned.status() == (grpc.StatusCode.PERMISSION_DENIED, "player_banned")


async def test_a_stream_that_does_not_open_first_is_refused() -> None:
    async with serving() as server:
        await _hokm_game(server)
        call = game_pb2_grpc.GameServiceStub(server.channel).Play(
            iter([game_pb2.PlayRequest(ping=game_pb2.PlayPing(ping_id=1))]),
            metadata=(("authorization", f"Bearer {token('p0')}"),))
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            async for _ in call:
                pass
        assert ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        missing = Play(server.channel, token("p0"), "no-such-game")
        assert await missing.status() == (grpc.StatusCode.NOT_FOUND, "game_not_found")


async def test_a_service_plays_the_seat_it_names_and_only_services_act_automatically() -> None:
    async with serving() as server:
        await _hokm_game(server)
        seat = (await server.client("p0").view("g1")).hokm.turn
        player = Play(server.channel, token(f"p{seat}"), "g1")
        turn = await _turn(player)
        move = choose(turn, DeterministicRandom(bytes(32), "service"))
        automatic = game_pb2.PlayCommand(command_id="auto", expected_seq=turn.event.seq,
                                         hokm=move, automatic=True)
        player.send(game_pb2.PlayRequest(command=automatic))
        outcome, _ = await player.outcome("auto")
        assert outcome.status.code == code_pb2.PERMISSION_DENIED
        assert _reason(outcome.status) == "ERROR_REASON_ROLE_REQUIRED"
        player.close()
        # A bot service's stream for that seat: the seat's view, its command applied.
        bots = Play(server.channel, token("bots", Role.SERVICE), "g1", seat=seat)
        turn = await _turn(bots)
        bots.send(game_pb2.PlayRequest(command=automatic))
        outcome, _ = await bots.outcome("auto")
        assert outcome.status.code == code_pb2.OK and not outcome.duplicate
        log = await server.client("operator", Role.ADMIN).export("g1")
        command = log[outcome.first_seq - 1].event
        assert command.automatic
        bots.close()
