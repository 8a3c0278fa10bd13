"""``dast play --tournament``: a person enters a tournament and plays every round's match
through the terminal client's own prompt (answering ``a``: the basic bot's move); two
people enter a tournament of registered pairs by naming each other (``--partner``) and play
as one."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

from dast.v1 import common_pb2, tournament_pb2
from services.cli.play import Client
from services.cli.play.session import Session
from services.cli.play.tournament import play_tournament, tournament_channel
from tests.e2e.helpers import stack
from tests.e2e.test_tournament import Host

pytestmark = pytest.mark.timeout(120)


async def test_a_person_enters_a_tournament_with_dast_play_and_plays_each_round() -> None:
    async with stack(tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        created = await host.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name="evening cup", game_type=common_pb2.GAME_TYPE_HOKM, rounds=2,
                target_score=1, bot_level="random")))
        tournament_id = created.tournament.tournament_id
        for _ in range(3):
            await host.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level="random"))
        said: list[str] = []
        finished: list[tournament_pb2.GetStandingsResponse] = []
        failures: list[BaseException] = []
        session = Session(run.address)

        def person() -> None:
            try:
                session.sign_in("device-tournament-player-1", "Person")
                client = Client(session, lambda prompt: "a", said.append)
                with tournament_channel(run.address) as tournaments:
                    finished.append(play_tournament(
                        session.authorized(tournaments), session.player_id, tournament_id,
                        client, said.append, poll_seconds=0.1))
            except BaseException as error:  # reported by the test below
                failures.append(error)
            finally:
                session.close()

        thread = threading.Thread(target=person, daemon=True)
        thread.start()
        async with asyncio.timeout(30):
            while (await host.call("GetStandings", tournament_pb2.GetStandingsRequest(
                    tournament_id=tournament_id))).tournament.entrants < 4:
                await asyncio.sleep(0.05)
        await host.call("StartTournament",
                        tournament_pb2.StartTournamentRequest(tournament_id=tournament_id))
        await asyncio.to_thread(thread.join, 90)
    assert not failures, failures
    assert finished, "the client did not see the end"
    standings = finished[0].standings
    me = next(line for line in standings if line.player_id == session.player_id)
    assert me.played == 2 and len(standings) == 4
    assert any(line.startswith("Round 1,") for line in said)
    assert any(line.startswith("Round 2,") for line in said)
    assert "The tournament is over." in said
    assert any("Match over" in line for line in said)


async def test_two_people_enter_as_a_registered_pair_with_partner_and_play_as_one() -> None:
    async with stack(tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        created = await host.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name="pairs cup", game_type=common_pb2.GAME_TYPE_HOKM, rounds=2,
                target_score=1, bot_level="random", registered_pairs=True)))
        tournament_id = created.tournament.tournament_id
        for _ in range(3):
            await host.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level="random"))
        sessions = [Session(run.address), Session(run.address)]
        for number, session in enumerate(sessions):
            await asyncio.to_thread(session.sign_in, f"device-pair-{number}", f"Partner {number}")
        first, second = sessions
        said: dict[str, list[str]] = {session.player_id: [] for session in sessions}
        finished: dict[str, tournament_pb2.GetStandingsResponse] = {}
        failures: list[BaseException] = []

        def person(session: Session, partner_id: str) -> None:
            lines = said[session.player_id]
            try:
                client = Client(session, lambda prompt: "a", lines.append)
                with tournament_channel(run.address) as tournaments:
                    finished[session.player_id] = play_tournament(
                        session.authorized(tournaments), session.player_id, tournament_id,
                        client, lines.append, poll_seconds=0.1, partner_id=partner_id)
            except BaseException as error:  # reported by the test below
                failures.append(error)
            finally:
                session.close()

        async def entrants() -> int:
            standings: tournament_pb2.GetStandingsResponse = await host.call(
                "GetStandings", tournament_pb2.GetStandingsRequest(tournament_id=tournament_id))
            return standings.tournament.entrants

        threads = [threading.Thread(target=person, args=(first, second.player_id), daemon=True)]
        threads[0].start()
        async with asyncio.timeout(30):
            while not said[first.player_id] and not failures:
                await asyncio.sleep(0.05)
        # One player's ask enters nobody: the pair waits for the partner's.
        assert any("Asked " in line for line in said[first.player_id]), said
        assert await entrants() == 3
        threads.append(threading.Thread(target=person, args=(second, first.player_id),
                                        daemon=True))
        threads[1].start()
        async with asyncio.timeout(30):
            while await entrants() < 4:  # the partner named the first: the pair is in
                await asyncio.sleep(0.05)
            while not any("named you too" in line for line in said[first.player_id]):
                await asyncio.sleep(0.05)
        await host.call("StartTournament",
                        tournament_pb2.StartTournamentRequest(tournament_id=tournament_id))
        for thread in threads:
            await asyncio.to_thread(thread.join, 90)
    assert not failures, failures
    assert set(finished) == {first.player_id, second.player_id}
    pair = f"{first.player_id}+{second.player_id}"
    standings = finished[first.player_id].standings
    assert len(standings) == 4
    ours = next(line for line in standings if line.player_id == pair)
    assert ours.played == 2
    assert said[second.player_id][0] == "Entered pairs cup (4 entrants so far)"
    for session in sessions:
        lines = said[session.player_id]
        assert any(line.startswith("Round 2,") for line in lines), lines
        assert any(line.endswith("<- you") and "pts" in line for line in lines), lines
        assert "The tournament is over." in lines
