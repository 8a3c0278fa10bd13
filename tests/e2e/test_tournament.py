"""Tournaments played end to end on the embedded stack: 64 bots in a Swiss Hokm tournament,
8 in a Swiss tournament of Hand in partnerships.

The standings the service publishes must equal a recomputation from the games' own logs
(written here from the games' final events, not through the service's reader), the tournament's
log must verify (the engine's audit and the service's hash chain), two tournament replicas
on one store must take every step once, and a stack restarted mid-round must finish.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from dast.v1 import common_pb2, log_pb2, tournament_pb2, tournament_pb2_grpc
from engine import tournament as engine
from services.compose import Running, StackOptions, running_stack
from services.platform.auth import Role
from services.platform.bus_nats import NatsBus
from services.platform.limits import MACHINE_SPEED
from services.tournament import chain
from services.tournament.app import TournamentApp
from services.tournament.store import TournamentStore
from tests.conftest import NatsNames
from tests.e2e.helpers import stack
from tests.support.tokens import TEST_KEYS, signer
from tests.support.tokens import token as signed_token

pytestmark = pytest.mark.timeout(180)

PLAYERS = 64
ROUNDS = 3
FINAL_SCORES = {"hokm": "scores", "hand": "totals"}
"""The field of each game's ``match_ended`` event listing the final score per seat."""


@dataclass
class Host:
    """A player hosting tournaments over one channel."""

    stub: tournament_pb2_grpc.TournamentServiceStub
    metadata: tuple[tuple[str, str], ...]

    @classmethod
    def on(cls, channel: grpc.aio.Channel, player_id: str = "host-1") -> Host:
        token = signed_token(player_id, Role.PLAYER)
        return cls(tournament_pb2_grpc.TournamentServiceStub(channel),
                   (("authorization", f"Bearer {token}"),))

    async def call(self, method: str, request: Any) -> Any:
        return await getattr(self.stub, method)(request, metadata=self.metadata, timeout=30)

    async def bot_tournament(self, players: int = PLAYERS, rounds: int = ROUNDS,
                             game_type: common_pb2.GameType.ValueType = (
                                 common_pb2.GAME_TYPE_HOKM),
                             bot_level: str = "random", **settings: Any) -> str:
        """Create a Swiss tournament (Hokm unless told) of ``players`` bots of ``bot_level``
        and start it."""
        created = await self.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name="bots", game_type=game_type,
                format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=rounds, target_score=1,
                bot_level=bot_level, **settings)))
        tournament_id: str = created.tournament.tournament_id
        for _ in range(players):
            await self.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level=bot_level))
        await self.call("StartTournament",
                        tournament_pb2.StartTournamentRequest(tournament_id=tournament_id))
        return tournament_id

    async def finished(self, tournament_id: str, *, seconds: float = 120
                       ) -> tournament_pb2.WatchStandingsResponse:
        """Follow the standings stream until the tournament is over; the last update."""
        last: tournament_pb2.WatchStandingsResponse | None = None
        async with asyncio.timeout(seconds):
            async for update in self.stub.WatchStandings(
                    tournament_pb2.WatchStandingsRequest(tournament_id=tournament_id),
                    metadata=self.metadata):
                last = update
        assert last is not None
        assert last.tournament.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
        return last


def tournament_log(store: TournamentStore, tournament_id: str) -> list[engine.Event]:
    return [engine.decode_event(item.body) for item in store.load(tournament_id)]


def recomputed_standings(run: Running, events: list[engine.Event]
                         ) -> dict[str, tuple[int, int, int, int, int]]:
    """Per entrant (match points, points, tricks, wins, played), from the games' logs."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    tournament_id = events[0].body.tournament_id  # type: ignore[union-attr]
    options = events[0].body.options  # type: ignore[union-attr]
    member = options.variant.game  # the game's member of the log's oneof ("hokm", "hand")
    for event in events:
        if not isinstance(event.body, engine.RoundStarted):
            continue
        for table in event.body.tables:
            game_id = f"{tournament_id}-r{event.body.round}-t{table.table}"
            log = [entry.event for entry in run.store.load(game_id)]
            scores: list[int] = []
            winners: set[int] = set()
            tricks = [0] * len(table.seats)
            for game_event in log:
                if not game_event.HasField(member):  # type: ignore[arg-type]
                    continue
                body = getattr(game_event, member)
                kind = body.WhichOneof("kind")
                if kind == "round_ended" and options.variant.has_tricks:
                    tricks = [t + n for t, n in zip(tricks, body.round_ended.tricks,
                                                    strict=True)]
                elif kind == "match_ended":
                    scores = list(getattr(body.match_ended, FINAL_SCORES[member]))
                    winners = set(body.match_ended.winners)
            assert scores, f"{game_id} did not end"
            for seat, place in enumerate(table.seats):
                if not place.entrant_id:
                    continue
                line = totals[place.entrant_id]
                won = seat in winners
                line[0] += options.win_points if won else options.loss_points
                line[1] += scores[seat]
                partners = [s for s, p in enumerate(table.seats) if p.side == place.side]
                line[2] += sum(tricks[s] for s in partners)
                line[3] += int(won)
                line[4] += 1
    return {entrant: (m, p, t, w, n) for entrant, (m, p, t, w, n) in totals.items()}


def check_finished_tournament(run: Running, store: TournamentStore, tournament_id: str,
                              last: tournament_pb2.WatchStandingsResponse) -> list[engine.Event]:
    events = tournament_log(store, tournament_id)
    assert isinstance(events[-1].body, engine.TournamentEnded)
    # The log verifies: the engine's audit (seed, every choice and standing) and the chain.
    assert engine.verify(events) == []
    stored = store.load(tournament_id)
    assert chain.broken_links(tournament_id, [(s.body, s.hash) for s in stored]) == []
    # Every table of every round has exactly one result.
    results = [(e.body.round, e.body.table) for e in events
               if isinstance(e.body, engine.ResultRecorded)]
    tables = [(e.body.round, t.table) for e in events
              if isinstance(e.body, engine.RoundStarted) for t in e.body.tables]
    assert sorted(results) == sorted(tables) and len(set(results)) == len(results)
    # The published standings equal a recomputation from the games' logs.
    expected = recomputed_standings(run, events)
    published = {line.player_id: (line.match_points, line.game_points, line.tricks, line.won,
                                   line.played) for line in last.standings}
    assert published == expected
    ranked = [line.match_points for line in last.standings]
    assert ranked == sorted(ranked, reverse=True)
    assert [line.rank for line in last.standings] == list(range(1, len(ranked) + 1))
    return events


async def test_a_64_player_swiss_hokm_tournament_of_bots_finishes_with_standings_from_the_games(
) -> None:
    async with stack(tournament_sweep_seconds=0.5) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        tournament_id = await host.bot_tournament()
        last = await host.finished(tournament_id)
        assert run.stack.tournament_store is not None
        events = check_finished_tournament(run, run.stack.tournament_store, tournament_id,
                                           last)
    rounds = [e for e in events if isinstance(e.body, engine.RoundStarted)]
    assert len(rounds) == ROUNDS and all(len(r.body.tables) == PLAYERS // 4  # type: ignore[union-attr]
                                         for r in rounds)
    assert len(last.standings) == PLAYERS


async def test_a_swiss_tournament_of_hand_in_partnerships_plays_partnered_tables_to_the_end(
) -> None:
    players = 8
    async with stack(tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        tournament_id = await host.bot_tournament(
            players=players, rounds=2, game_type=common_pb2.GAME_TYPE_HAND,
            bot_level="greedy", partnerships=True)  # greedy Hand bots end a match sooner
        last = await host.finished(tournament_id)
        assert last.tournament.settings.partnerships
        assert run.stack.tournament_store is not None
        events = check_finished_tournament(run, run.stack.tournament_store, tournament_id,
                                           last)
        variant = events[0].body.options.variant  # type: ignore[union-attr]
        assert variant.game == "hand" and variant.sides == ((0, 2), (1, 3))
        rounds = [e.body for e in events if isinstance(e.body, engine.RoundStarted)]
        assert len(rounds) == 2 and all(len(r.tables) == players // 4 for r in rounds)
        for round_ in rounds:
            for table in round_.tables:
                game_id = f"{tournament_id}-r{round_.round}-t{table.table}"
                first = run.store.load(game_id)[0].event
                assert first.hand.WhichOneof("kind") == "match_started", game_id
                rules = first.hand.match_started.rules
                # The match was created in its team form: 4 players, partners opposite.
                assert rules.players == 4 and rules.partnerships, game_id
                assert [place.side for place in table.seats] == [0, 1, 0, 1], game_id
                # The table's result is per side, read from the partners' shared total and
                # the winning seats of the match's last event.
                ended = run.store.load(game_id)[-1].event.hand.match_ended
                assert ended.totals[0] == ended.totals[2] and ended.totals[1] == ended.totals[3]
                result = next(e.body for e in events if isinstance(e.body, engine.ResultRecorded)
                              and (e.body.round, e.body.table) == (round_.round, table.table))
                assert [side.points for side in result.sides] == list(ended.totals[:2])
                assert result.winners == tuple(sorted({seat % 2 for seat in ended.winners}))
    assert len(last.standings) == players


@contextlib.asynccontextmanager
async def second_replica(run: Running, store_url: str) -> AsyncIterator[TournamentApp]:
    """Another tournament replica over the same store, bus and game service."""
    store = await asyncio.to_thread(TournamentStore.open, store_url)
    app = TournamentApp.build(store, run.stack.tournament_bus, signer=signer("tournament"),
                              sweep_seconds=0.3)
    app.start(run.stack.bus, game_target=run.address)
    try:
        yield app
    finally:
        await app.stop()
        await asyncio.to_thread(store.close)


async def test_two_tournament_replicas_on_one_store_take_every_step_once(tmp_path: Path
                                                                         ) -> None:
    store_url = f"sqlite:///{tmp_path / 'dast.db'}"
    async with stack(store_url=store_url, tournament_sweep_seconds=0.3) as run, \
            second_replica(run, store_url) as other, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        tournament_id = await host.bot_tournament(players=32, rounds=2)
        last = await host.finished(tournament_id)
        first = run.stack.tournament
        assert first is not None and first.conductor is not None
        assert other.conductor is not None
        assert run.stack.tournament_store is not None
        check_finished_tournament(run, run.stack.tournament_store, tournament_id, last)
        # Both replicas reported results (they split the games' events), and no step
        # appended twice (checked above: one result per table, a chain without gaps).
        assert first.conductor.reports > 0 and other.conductor.reports > 0


async def test_a_stack_restarted_mid_round_resumes_the_tournament(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'dast.db'}"
    async with stack(store_url=store_url, tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        tournament_id = await host.bot_tournament(players=32, rounds=2)
        store = run.stack.tournament_store
        assert store is not None
        async with asyncio.timeout(60):
            while not any(isinstance(e.body, engine.ResultRecorded)
                          for e in tournament_log(store, tournament_id)):
                await asyncio.sleep(0.05)
        head = store.head(tournament_id)
    assert head.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING
    async with stack(store_url=store_url, tournament_sweep_seconds=0.3) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        last = await host.finished(tournament_id)
        assert run.stack.tournament_store is not None
        check_finished_tournament(run, run.stack.tournament_store, tournament_id, last)


async def test_a_player_finds_their_table_and_the_round_time_limit_rules_on_unfinished_matches(
) -> None:
    # No presence: no bot takes the absent person's seat, so the match waits for them.
    async with stack(tournament_sweep_seconds=0.3, presence=False) as run, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        created = await host.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                game_type=common_pb2.GAME_TYPE_HOKM, rounds=1, target_score=7,
                round_time_limit_seconds=1, bot_level="random", fill_with_bots=True)))
        tournament_id = created.tournament.tournament_id
        person = Host.on(channel, "person-1")
        await person.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
            tournament_id=tournament_id))
        for _ in range(3):
            await host.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level="random"))
        await host.call("StartTournament",
                        tournament_pb2.StartTournamentRequest(tournament_id=tournament_id))
        table = await person.call("GetCurrentTable", tournament_pb2.GetCurrentTableRequest(
            tournament_id=tournament_id))
        assert table.game_id == f"{tournament_id}-r1-t0" and table.round == 1
        assert table.round_deadline_ms > 0
        # The person never plays: the match cannot end before the round's time runs out.
        last = await host.finished(tournament_id, seconds=30)
        assert run.stack.tournament_store is not None
        events = tournament_log(run.stack.tournament_store, tournament_id)
        results = [e.body for e in events if isinstance(e.body, engine.ResultRecorded)]
        assert [r.timed_out for r in results] == [True]
        assert len(last.standings) == 4
        view_log = [entry.event for entry in run.store.load(table.game_id)]
        assert not any(e.HasField("hokm") and e.hokm.WhichOneof("kind") == "match_ended"
                       for e in view_log)
        assert isinstance(view_log[0], log_pb2.Event)


async def test_two_tournament_replicas_on_postgres_and_nats_finish_a_tournament(
        pg_url: str, nats_url: str, nats_names: NatsNames) -> None:
    options = StackOptions(tournament_sweep_seconds=0.3, presence=False)
    async with running_stack(
        TEST_KEYS, store_url=pg_url, nats_url=nats_url, options=options, limits=MACHINE_SPEED,
        deployment=nats_names.deployment,
    ) as run, second_replica(run, pg_url) as other, \
            grpc.aio.insecure_channel(run.address) as channel:
        host = Host.on(channel)
        tournament_id = await host.bot_tournament(players=8, rounds=2)
        last = await host.finished(tournament_id)
        assert run.stack.tournament_store is not None
        check_finished_tournament(run, run.stack.tournament_store, tournament_id, last)
        # The tournament's events reached its own stream on NATS, each once.
        bus = run.stack.tournament_bus
        assert isinstance(bus, NatsBus)
        assert bus.stream == nats_names.names.tournaments_stream
        # The publisher follows the log on its own task: give it a moment to catch up.
        async with asyncio.timeout(20):
            while (await bus.last_published_seq("tournament", tournament_id)
                   != last.tournament.seq):
                await asyncio.sleep(0.05)
        assert other.conductor is not None
