"""Tournaments on the multi-process stack (PostgreSQL + NATS): throughput, length, rounds.

Every server is its own ``python -m services.compose`` process (what ``deploy/local-stack.sh``
starts) on this run's own PostgreSQL schema and JetStream streams; the tables are bots in
every seat (level ``random``), matches to ``--target`` points, Swiss rounds. One run measures:

- ``tables_per_min_1_replica`` / ``tables_per_min_2_replicas``: matches a tournament of
  ``--rate-players`` completes per minute of its run (from its start to its end, both read
  from its log), on a stack with one game replica, then on one with two (2 bot replicas and
  2 tournament replicas both times). On a machine of two shared cores the ratio is capped by
  the machine (the bots, PostgreSQL and NATS share those cores).
- ``tournament_1024_s``: the time of a ``--players`` (1,024) player tournament of
  ``--rounds`` rounds on the two-replica stack, from the start to the last event.
- ``next_round_s``: for every round after the first, from the last result of the round
  before (the step that also seats the new round) to the last of the new round's matches
  created in the game service (its first event's time); the worst round. Goal: ≤ 2 s at
  256 tables. ``first_table_s_by_round``: the same to the round's first match created.

Every tournament is checked, as the e2e tests check the embedded one: its log verifies (the
engine's audit and the hash chain) and its standings equal a recomputation from the games'
logs. With ``--chaos``, during the second round of the 1,024-player tournament one game, one
bot and one tournament replica are each SIGKILLed and restarted (``make tournament-1024``).

Usage: ``python bench/tournament.py --json [--players 1024] [--rate-players 256] [--chaos]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from dast.v1 import common_pb2, log_pb2, tournament_pb2, tournament_pb2_grpc
from engine import tournament as engine
from services.platform.auth import Role
from services.platform.nats_names import NatsNames
from services.tournament import chain
from tests.support.processes import ServiceProcess
from tests.support.servers import free_port
from tests.support.tokens import token as signed_token
from tests.support.tokens import token_environment

SIGNING_KEY = "7EFAsGnUp4zHFey+CBcvHjthCWzbsquVN2MU7+ETZuI="
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
             grpc.StatusCode.ABORTED)


# ---- processes ------------------------------------------------------------------------


@dataclass
class Stack:
    games: list[ServiceProcess]
    bots: list[ServiceProcess]
    tournaments: list[ServiceProcess]

    @property
    def every(self) -> list[ServiceProcess]:
        return [*self.games, *self.bots, *self.tournaments]

    @property
    def tournament_target(self) -> str:
        return "ipv4:" + ",".join(f"127.0.0.1:{p.port}" for p in self.tournaments)


@dataclass(frozen=True)
class Run:
    """This run's own schema and streams on the shared servers."""

    database_url: str
    nats_url: str
    name: str

    @property
    def schema(self) -> str:
        return f"bench_{self.name}"

    @property
    def scoped_url(self) -> str:
        separator = "&" if "?" in self.database_url else "?"
        return f"{self.database_url}{separator}options=-csearch_path%3D{self.schema}"

    def env(self, game_target: str) -> dict[str, str]:
        return {
            **os.environ, "DAST_DATABASE_URL": self.scoped_url, "DAST_NATS_URL": self.nats_url,
            "DAST_DEPLOYMENT": self.schema,
            "DAST_SIGNING_KEY": SIGNING_KEY,
            "DAST_GAME_TARGET": game_target, "DAST_LOG_LEVEL": "warning",
            # The bots of a benchmark act for thousands of seats at machine speed.
            "DAST_LIMIT_SERVICE_CALLS_PER_SECOND": "1000000",
            "DAST_LIMIT_SERVICE_CALL_BURST": "1000000",
        }


@contextlib.contextmanager
def own_schema(run: Run) -> Iterator[Engine]:
    admin = create_engine(run.database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as db:
        db.execute(text(f'CREATE SCHEMA "{run.schema}"'))
    scoped = create_engine(make_url(run.database_url).update_query_dict(
        {"options": f"-csearch_path={run.schema}"}))
    try:
        yield scoped
    finally:
        scoped.dispose()
        with admin.connect() as db:
            db.execute(text(f'DROP SCHEMA "{run.schema}" CASCADE'))
        admin.dispose()


async def _drop_streams(run: Run) -> None:
    import nats

    with contextlib.suppress(Exception):
        connection = await nats.connect(run.nats_url, connect_timeout=2,
                                        max_reconnect_attempts=0)
        for stream in NatsNames(run.schema).streams:
            with contextlib.suppress(Exception):
                await connection.jetstream().delete_stream(stream)
        await connection.close()


@contextlib.asynccontextmanager
async def stack(run: Run, logs: Path, *, game_replicas: int, bot_replicas: int = 2,
                tournament_replicas: int = 2) -> AsyncIterator[Stack]:
    game_ports = [free_port() for _ in range(game_replicas)]
    env = run.env("ipv4:" + ",".join(f"127.0.0.1:{port}" for port in game_ports))
    tag = f"g{game_replicas}"
    built = Stack(
        [ServiceProcess(f"game-{i}", "game", port, {**env, **token_environment(["game"])},
                        logs / f"{tag}-game-{i}.log")
         for i, port in enumerate(game_ports)],
        [ServiceProcess(f"bot-{i}", "bot", free_port(), {**env, **token_environment(["bot"])},
                        logs / f"{tag}-bot-{i}.log")
         for i in range(bot_replicas)],
        [ServiceProcess(f"tournament-{i}", "tournament", free_port(),
                        {**env, **token_environment(["tournament"])},
                        logs / f"{tag}-tournament-{i}.log")
         for i in range(tournament_replicas)],
    )
    try:
        built.games[0].start()  # the first replica migrates the schema
        await built.games[0].listening()
        for process in built.every[1:]:
            process.start()
        await asyncio.gather(*(process.listening() for process in built.every))
        yield built
    finally:
        for process in built.every:
            process.stop()


# ---- a tournament ---------------------------------------------------------------------


class Host:
    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(
            target, options=[("grpc.lb_policy_name", "round_robin"),
                             ("grpc.initial_reconnect_backoff_ms", 200),
                             ("grpc.max_reconnect_backoff_ms", 2000)])
        self.stub = tournament_pb2_grpc.TournamentServiceStub(self.channel)
        token = signed_token("bench-host", Role.PLAYER)
        self.metadata = (("authorization", f"Bearer {token}"),)

    async def call(self, method: str, request: Any, seconds: float = 60) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            try:
                return await getattr(self.stub, method)(request, metadata=self.metadata,
                                                        timeout=20)
            except grpc.aio.AioRpcError as error:
                if error.code() not in TRANSIENT or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def bot_tournament(self, players: int, rounds: int, target: int) -> str:
        created = await self.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name=f"bench {players}", game_type=common_pb2.GAME_TYPE_HOKM,
                format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=rounds,
                target_score=target, bot_level="random", max_players=players)))
        tournament_id: str = created.tournament.tournament_id
        for _ in range(players):
            await self.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level="random"))
        await self.call("StartTournament",
                        tournament_pb2.StartTournamentRequest(tournament_id=tournament_id))
        return tournament_id

    async def standings(self, tournament_id: str) -> tournament_pb2.GetStandingsResponse:
        reply: tournament_pb2.GetStandingsResponse = await self.call(
            "GetStandings", tournament_pb2.GetStandingsRequest(tournament_id=tournament_id))
        return reply

    async def finished(self, tournament_id: str, seconds: float
                       ) -> tournament_pb2.GetStandingsResponse:
        async with asyncio.timeout(seconds):
            while True:
                reply = await self.standings(tournament_id)
                if reply.tournament.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED:
                    return reply
                await asyncio.sleep(0.5)


# ---- reading the logs back -------------------------------------------------------------


def tournament_events(db: Engine, tournament_id: str) -> list[tuple[bytes, bytes]]:
    with db.connect() as connection:
        rows = connection.execute(text(
            "SELECT body, hash FROM tournament_events WHERE tournament_id = :id ORDER BY seq"),
            {"id": tournament_id}).all()
    return [(bytes(row.body), bytes(row.hash)) for row in rows]


def game_log(db: Engine, game_id: str) -> list[log_pb2.Event]:
    with db.connect() as connection:
        rows = connection.execute(text(
            "SELECT event FROM events WHERE game_id = :id ORDER BY seq"), {"id": game_id}).all()
    events = []
    for row in rows:
        event = log_pb2.Event()
        event.ParseFromString(bytes(row.event))
        events.append(event)
    return events


def game_id_of(tournament_id: str, round_: int, table: int) -> str:
    return f"{tournament_id}-r{round_}-t{table}"


@dataclass
class Checked:
    tables: int
    rounds: int
    seconds: float
    next_round_s: list[float]
    """Per round after the first: from the last result before it to its last match created."""
    first_table_s: list[float]
    """The same to its first match created (the rest of ``next_round_s`` is the spread of
    the creations)."""


def check(db: Engine, tournament_id: str, final: tournament_pb2.GetStandingsResponse
          ) -> Checked:
    """Verify the tournament as the e2e tests do; its figures."""
    links = tournament_events(db, tournament_id)
    assert chain.broken_links(tournament_id, links) == [], "the chain is broken"
    events = [engine.decode_event(body) for body, _ in links]
    problems = engine.verify(events)
    assert problems == [], problems
    created = events[0].body
    assert isinstance(created, engine.TournamentCreated)
    options = created.options
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    results = set()
    started_at = ended_at = 0
    next_round: list[float] = []
    first_table: list[float] = []
    last_result_at = 0
    for event in events:
        body = event.body
        if isinstance(body, engine.TournamentStarted):
            started_at = event.at_ms
        elif isinstance(body, engine.TournamentEnded):
            ended_at = event.at_ms
        elif isinstance(body, engine.ResultRecorded):
            assert (body.round, body.table) not in results, "a result recorded twice"
            results.add((body.round, body.table))
            last_result_at = event.at_ms
        elif isinstance(body, engine.RoundStarted):
            opened = []
            for table in body.tables:
                game_id = game_id_of(tournament_id, body.round, table.table)
                log = game_log(db, game_id)
                assert log, f"{game_id} was never created"
                opened.append(log[0].at_ms)
                _tally(totals, table, log, options)
            if body.round > 1:
                next_round.append((max(opened) - last_result_at) / 1000)
                first_table.append((min(opened) - last_result_at) / 1000)
    published = {line.player_id: (line.match_points, line.game_points, line.tricks, line.won,
                                  line.played) for line in final.standings}
    expected = {entrant: tuple(line) for entrant, line in totals.items()}
    assert published == expected, "the standings differ from the games' logs"
    rounds = sum(isinstance(e.body, engine.RoundStarted) for e in events)
    return Checked(len(results), rounds, (ended_at - started_at) / 1000, next_round,
                   first_table)


def _tally(totals: dict[str, list[int]], table: engine.Table, log: list[log_pb2.Event],
           options: engine.TournamentOptions) -> None:
    """Add a match's figures, read straight from its Hokm events, to its entrants."""
    scores: list[int] = []
    winners: set[int] = set()
    tricks = [0] * len(table.seats)
    for event in log:
        if not event.HasField("hokm"):
            continue
        kind = event.hokm.WhichOneof("kind")
        if kind == "round_ended":
            tricks = [t + n for t, n in zip(tricks, event.hokm.round_ended.tricks, strict=True)]
        elif kind == "match_ended":
            scores = list(event.hokm.match_ended.scores)
            winners = set(event.hokm.match_ended.winners)
    assert scores, "a match of the tournament did not end"
    for seat, place in enumerate(table.seats):
        if not place.entrant_id:
            continue
        line = totals[place.entrant_id]
        won = seat in winners
        line[0] += options.win_points if won else options.loss_points
        line[1] += scores[seat]
        line[2] += sum(tricks[s] for s, p in enumerate(table.seats) if p.side == place.side)
        line[3] += int(won)
        line[4] += 1


# ---- the run ----------------------------------------------------------------------------


async def _chaos(built: Stack, host: Host, tournament_id: str) -> list[str]:
    """Once round 2 has begun and some of its results are in, SIGKILL one game, one bot and
    one tournament replica, and restart each."""
    async with asyncio.timeout(1800):
        while True:
            reply = await host.standings(tournament_id)
            if reply.tournament.round >= 2:
                break
            await asyncio.sleep(0.5)
    await asyncio.sleep(3.0)  # mid-round: tables are being played
    killed = []
    for process in (built.games[1], built.bots[0], built.tournaments[0]):
        process.kill()
        killed.append(f"{process.service}:{process.port}")
    await asyncio.sleep(2.0)
    for process in (built.games[1], built.bots[0], built.tournaments[0]):
        process.start()
    await asyncio.gather(*(p.listening() for p in (built.games[1], built.bots[0],
                                                   built.tournaments[0])))
    return killed


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    run = Run(args.database_url, args.nats_url, uuid.uuid4().hex[:10])
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"players_rate_run": args.rate_players, "rounds": args.rounds,
                               "target_score": args.target}
    try:
        with own_schema(run) as db:
            if not args.skip_rate:
                async with stack(run, logs, game_replicas=1) as built:
                    host = Host(built.tournament_target)
                    tid = await host.bot_tournament(args.rate_players, args.rounds, args.target)
                    checked = check(db, tid, await host.finished(tid, args.timeout))
                    figures["tables_per_min_1_replica"] = round(
                        checked.tables / (checked.seconds / 60), 1)
                    await host.channel.close()
                async with stack(run, logs, game_replicas=2) as built:
                    host = Host(built.tournament_target)
                    tid = await host.bot_tournament(args.rate_players, args.rounds, args.target)
                    checked = check(db, tid, await host.finished(tid, args.timeout))
                    figures["tables_per_min_2_replicas"] = round(
                        checked.tables / (checked.seconds / 60), 1)
                    await host.channel.close()
            if args.players:
                async with stack(run, logs, game_replicas=2) as built:
                    host = Host(built.tournament_target)
                    tid = await host.bot_tournament(args.players, args.rounds, args.target)
                    chaos = (asyncio.create_task(_chaos(built, host, tid))
                             if args.chaos else None)
                    final = await host.finished(tid, args.timeout)
                    killed = await chaos if chaos is not None else []
                    checked = check(db, tid, final)
                    figures[f"tournament_{args.players}_s"] = round(checked.seconds, 1)
                    figures["tables_per_round"] = checked.tables // max(checked.rounds, 1)
                    figures["next_round_s"] = round(max(checked.next_round_s, default=0), 3)
                    figures["next_round_s_by_round"] = [round(s, 3)
                                                        for s in checked.next_round_s]
                    figures["first_table_s_by_round"] = [round(s, 3)
                                                         for s in checked.first_table_s]
                    figures["tables_per_min_big_run"] = round(
                        checked.tables / (checked.seconds / 60), 1)
                    if args.chaos:
                        figures["killed_mid_round"] = killed
                    figures["verified"] = True
                    await host.channel.close()
    finally:
        await _drop_streams(run)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--players", type=int, default=1024,
                        help="players of the big tournament (0: skip it)")
    parser.add_argument("--rate-players", type=int, default=256,
                        help="players of the tournaments measuring tables per minute")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", type=int, default=1, help="match target score")
    parser.add_argument("--chaos", action="store_true",
                        help="SIGKILL a game, a bot and a tournament replica mid-round")
    parser.add_argument("--skip-rate", action="store_true",
                        help="skip the tables-per-minute tournaments")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--logs", default=".dast/bench-tournament")
    parser.add_argument("--database-url",
                        default=os.environ.get("DAST_TEST_DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--nats-url", default=os.environ.get("DAST_TEST_NATS_URL",
                                                             DEFAULT_NATS_URL))
    args = parser.parse_args()
    started = time.monotonic()
    figures = asyncio.run(measure(args))
    figures["bench_wall_s"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
