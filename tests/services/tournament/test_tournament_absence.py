"""Absent tournament players on the whole stack (docs/tournaments.md "Absent players"): a
tournament with no round time limit whose registered players never connect still finishes,
bots playing their seats from the grace period on; a player who subscribes to their table
keeps their seat; one who comes late takes it back, as after a reconnection."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import pytest

from dast.v1 import common_pb2, game_pb2, game_pb2_grpc, log_pb2, tournament_pb2
from services.platform.auth import Role
from tests.e2e.helpers import Guest, stack, wait_for
from tests.services.tournament.callers import Caller
from tests.support.tokens import token

pytestmark = pytest.mark.timeout(180)

DISCONNECTED = log_pb2.SEAT_CONTROL_REASON_DISCONNECTED
RECONNECTED = log_pb2.SEAT_CONTROL_REASON_RECONNECTED


async def _tournament(admin: Caller, players: list[Caller], rounds: int) -> str:
    """A Swiss Hokm tournament of two-seat tables, no round time limit and untimed turns,
    with ``players`` registered, started."""
    created = await admin("CreateTournament", tournament_pb2.CreateTournamentRequest(
        settings=tournament_pb2.TournamentSettings(
            name="no-shows", game_type=common_pb2.GAME_TYPE_HOKM, players_per_table=2,
            rounds=rounds, target_score=1, bot_level="random")))
    tournament_id: str = created.tournament.tournament_id
    assert created.tournament.settings.round_time_limit_seconds == 0
    for player in players:
        await player("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id))
    await admin("StartTournament", tournament_pb2.StartTournamentRequest(
        tournament_id=tournament_id))
    return tournament_id


async def _finished(caller: Caller, tournament_id: str) -> tournament_pb2.GetStandingsResponse:
    async def over() -> tournament_pb2.GetStandingsResponse | None:
        reply: tournament_pb2.GetStandingsResponse = await caller(
            "GetStandings", tournament_pb2.GetStandingsRequest(tournament_id=tournament_id))
        finished = reply.tournament.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
        return reply if finished else None

    standings: tournament_pb2.GetStandingsResponse = await wait_for(over, seconds=150,
                                                                    step=0.2)
    return standings


async def _log(channel: grpc.aio.Channel, game_id: str) -> list[log_pb2.Event]:
    admin = (("authorization", f"Bearer {token('auditor', Role.ADMIN)}"),)
    reply = await game_pb2_grpc.GameServiceStub(channel).ExportLog(
        game_pb2.ExportLogRequest(game_id=game_id), metadata=admin, timeout=20)
    return [entry.event for entry in reply.entries]


def _controls(log: list[log_pb2.Event]) -> list[tuple[int, bool, int]]:
    return [(e.seat_control.seat, e.seat_control.bot, e.seat_control.reason)
            for e in log if e.HasField("seat_control")]


def _seat_of(log: list[log_pb2.Event], player_id: str) -> int:
    started = log[0].hokm.match_started
    return next(seat for seat, player in enumerate(started.players)
                if player.player_id == player_id)


async def test_a_tournament_whose_players_never_connect_finishes_with_bots_in_their_seats(
) -> None:
    async with stack(grace_ms=300, tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        admin = Caller(channel, "ops", Role.ADMIN)
        players = [Caller(channel, f"g-absent{number:08d}") for number in range(4)]
        tournament_id = await _tournament(admin, players, rounds=2)
        standings = await _finished(admin, tournament_id)
        assert sorted(line.played for line in standings.standings) == [2, 2, 2, 2]
        # Every seat of every match was handed to a bot for its absent player, once.
        absent = {player.player_id for player in players}
        for round_ in (1, 2):
            for table in (0, 1):
                log = await _log(channel, f"{tournament_id}-r{round_}-t{table}")
                assert log[-1].hokm.WhichOneof("kind") == "match_ended"
                seated = {player.player_id for player in log[0].hokm.match_started.players}
                assert seated <= absent
                assert sorted(_controls(log)) == [(0, True, DISCONNECTED),
                                                  (1, True, DISCONNECTED)]
                requested = {e.seat_control.requested_by for e in log
                             if e.HasField("seat_control")}
                assert requested == {"service:presence"}


async def _subscribed(guest: Guest, game_id: str) -> grpc.aio.UnaryStreamCall[
        game_pb2.SubscribeRequest, game_pb2.SubscribeResponse]:
    """A stream of ``guest`` on ``game_id`` once the match exists (its first reply read)."""
    while True:
        stream = guest.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                      metadata=guest.metadata)
        try:
            await anext(aiter(stream))
            return stream
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            await asyncio.sleep(0.02)  # the table is drawn; its match comes a moment later


async def test_a_subscribed_player_keeps_the_seat_and_a_late_one_takes_it_back() -> None:
    async with stack(grace_ms=2_000, tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        present = await Guest.sign_in(channel, "device-present-1", "Present")
        late = await Guest.sign_in(channel, "device-late-1", "Late")
        callers = [Caller(channel, guest.player_id, token=guest.token)
                   for guest in (present, late)]
        admin = Caller(channel, "ops", Role.ADMIN)
        tournament_id = await _tournament(admin, callers, rounds=1)

        async def table_of(caller: Caller) -> str | None:
            reply = await caller("GetCurrentTable", tournament_pb2.GetCurrentTableRequest(
                tournament_id=tournament_id))
            return str(reply.game_id) or None

        game_id = await wait_for(lambda: table_of(callers[0]), seconds=30, step=0.02)
        # The present player subscribes as soon as the match exists, and holds the stream
        # without playing: the match waits at their turns.
        held = [await _subscribed(present, game_id)]
        try:
            # The late one is taken over after the grace period; a bot plays for them.
            async def taken_over() -> bool:
                view = await late.view(game_id)
                seat = view.view.seat
                control = view.seat_control[seat] if seat < len(view.seat_control) else None
                return control is not None and control.bot and control.reason == DISCONNECTED

            await wait_for(taken_over, seconds=60, step=0.1)
            # They come: their stream gives the seat back as it opens, and both play to
            # the end.
            held.append(await _subscribed(late, game_id))
            view = await late.view(game_id)
            assert not view.seat_control[view.view.seat].bot
            await asyncio.gather(late.play_to_the_end(game_id, seconds=90),
                                 present.play_to_the_end(game_id, seconds=90))
        finally:
            for stream in held:
                stream.cancel()
                with contextlib.suppress(BaseException):
                    await stream
        await _finished(admin, tournament_id)
        log = await _log(channel, game_id)
        late_seat, present_seat = _seat_of(log, late.player_id), _seat_of(log, present.player_id)
        assert _controls(log) == [(late_seat, True, DISCONNECTED),
                                  (late_seat, False, RECONNECTED)]
        assert present_seat != late_seat
