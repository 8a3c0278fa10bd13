"""Every RPC of the TournamentService, sent hostile requests (NUL and invalid UTF-8 in every
string, bytes that are no message, random messages built from the descriptors), with
valid, forged and missing tokens, answers with a documented status and no internals, and
the service serves normally afterwards."""

from __future__ import annotations

from typing import Final

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, settings

from dast.v1 import common_pb2, tournament_pb2, tournament_pb2_grpc
from services.platform.auth import Role
from tests.e2e.helpers import stack
from tests.support.hostile import calls, garbage_payloads, reply_problem, send
from tests.support.tokens import stranger_token, token

pytestmark = pytest.mark.timeout(120)

METHODS: Final = list(
    tournament_pb2.DESCRIPTOR.services_by_name["TournamentService"].methods)


async def test_hostile_requests_to_the_tournament_service_get_documented_statuses() -> None:
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host_token = token("host-1")
        created = await tournament_pb2_grpc.TournamentServiceStub(channel).CreateTournament(
            tournament_pb2.CreateTournamentRequest(settings=tournament_pb2.TournamentSettings(
                game_type=common_pb2.GAME_TYPE_HOKM)),
            metadata=(("authorization", f"Bearer {host_token}"),))
        tournament_id = created.tournament.tournament_id
        tokens: dict[str, str | None] = {
            "none": None, "host": host_token, "stranger": token("g-stranger"),
            "admin": token("root", Role.ADMIN),
            "forged": stranger_token("root", Role.ADMIN),
        }
        problems = []
        for method in METHODS:
            for payload in garbage_payloads(method):
                for name, bearer_token in tokens.items():
                    code, _, error = await send(channel, method, payload, bearer_token)
                    problem = reply_problem(code, payload, error)
                    if problem is not None:
                        problems.append(f"{method.name} {name} {payload[:40]!r}: {problem}")
                    if bearer_token is None:
                        assert code == grpc.StatusCode.UNAUTHENTICATED, method.name
        assert not problems, problems
        seen: dict[grpc.StatusCode, int] = {}
        outcomes: list[tuple[MethodDescriptor, bytes, grpc.StatusCode, str | None]] = []

        @settings(max_examples=150, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(calls(METHODS, [tournament_id, "host-1", "g-stranger"], list(tokens)))
        def hostile(call: tuple[MethodDescriptor, bytes, str]) -> None:
            method, payload, token_name = call
            outcomes.append((method, payload, grpc.StatusCode.OK, token_name))

        hostile()
        for method, payload, _, token_name in outcomes:
            assert token_name is not None
            code, _, error = await send(channel, method, payload, tokens[token_name])
            problem = reply_problem(code, payload, error)
            assert problem is None, f"{method.name} {token_name} {payload[:60]!r}: {problem}"
            seen[code] = seen.get(code, 0) + 1
        assert sum(seen.values()) >= 100
        # The service answers normally afterwards.
        standings = await tournament_pb2_grpc.TournamentServiceStub(channel).GetStandings(
            tournament_pb2.GetStandingsRequest(tournament_id=tournament_id),
            metadata=(("authorization", f"Bearer {host_token}"),))
        assert standings.tournament.tournament_id == tournament_id


async def test_nobody_enters_another_player_in_a_pair_without_their_ask() -> None:
    """Naming a stranger as partner used to enter them: their seat then played by a stand-in
    bot, its results counted for them. Now the stranger is entered only by naming back."""
    async with stack(bots=False, timers=False, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)

        def as_player(player_id: str) -> tuple[tuple[str, str]]:
            return (("authorization", f"Bearer {token(player_id)}"),)

        created = await stub.CreateTournament(tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                game_type=common_pb2.GAME_TYPE_HOKM, registered_pairs=True)),
            metadata=as_player("g-host"))
        tournament_id = created.tournament.tournament_id

        async def entrants() -> list[str]:
            reply = await stub.GetStandings(tournament_pb2.GetStandingsRequest(
                tournament_id=tournament_id), metadata=as_player("g-host"))
            return [line.player_id for line in reply.standings]

        async def ask(player_id: str, partner_id: str) -> tournament_pb2.RegisterPlayerResponse:
            reply: tournament_pb2.RegisterPlayerResponse = await stub.RegisterPlayer(
                tournament_pb2.RegisterPlayerRequest(tournament_id=tournament_id,
                                                     partner_id=partner_id),
                metadata=as_player(player_id))
            return reply

        grab = await ask("g-mallory", "g-victim")
        assert grab.waiting_for_partner and not grab.HasField("entrant")
        assert await entrants() == []
        # The victim is free to enter with whomever they choose.
        assert (await ask("g-victim", "g-friend")).waiting_for_partner
        entered = await ask("g-friend", "g-victim")
        assert not entered.waiting_for_partner
        assert entered.entrant.player_id == "g-victim+g-friend"
        assert await entrants() == ["g-victim+g-friend"]
        # Mallory's ask lapsed with the victim's entry, and cannot be answered any more.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await ask("g-victim", "g-mallory")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # A waiting ask is taken back by UnregisterPlayer; an answer then waits in turn.
        await ask("g-ann", "g-bob")
        await stub.UnregisterPlayer(tournament_pb2.UnregisterPlayerRequest(
            tournament_id=tournament_id), metadata=as_player("g-ann"))
        assert (await ask("g-bob", "g-ann")).waiting_for_partner
        assert await entrants() == ["g-victim+g-friend"]
