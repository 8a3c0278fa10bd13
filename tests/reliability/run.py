"""One run of the reliability suite: load the whole system, break it, check what held.

The run starts the cluster (:mod:`tests.reliability.cluster`), puts the load on it
(:mod:`tests.reliability.load`: bot matches of every variant, a person's match, idle
watchers), starts the hostile clients, injects faults (:mod:`tests.reliability.faults`:
each kind once in a short run; drawn at random until the time is up in a long one), lets
the system settle, and checks everything (:mod:`tests.reliability.checks`). The result
feeds the report (:mod:`tests.reliability.report`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from dast.v1 import common_pb2, game_pb2_grpc, lobby_pb2, lobby_pb2_grpc
from services.platform.channels import service_channel
from services.platform.presence_kv import NatsPresenceBoard
from tests.reliability.checks import Findings, check_everything
from tests.reliability.cluster import Cluster, running_cluster
from tests.reliability.faults import FaultInjector, Injected
from tests.reliability.hostile_clients import HostileClients
from tests.reliability.load import VARIANTS, CallTally, Load, Person, bearer, retrying
from tests.reliability.play_person import PlayPerson
from tests.support.hostile import every_service
from tests.support.tokens import TEST_KEYS

PERSONS_VARIANT = VARIANTS[0]
"""The person sits at a Hokm 4p table (the lobby's default game)."""


@dataclass(frozen=True)
class RunOptions:
    matches: int = 7
    """Bot matches in play at any time (every variant of both games in turn); a new one
    starts whenever one ends, until the faults are over."""
    streams: int = 49
    """Idle watcher streams at any time (spread evenly over the matches in play)."""
    hostile_calls: int = 300
    duration_s: float = 0.0
    """0: inject each kind of fault once; otherwise keep injecting until this long."""
    fault_gap_s: float = 2.0
    """Time between one fault's recovery and the next fault."""
    seed: int = 1


@dataclass
class RunResult:
    options: RunOptions
    services: list[str]
    processes: int
    wall_s: float
    faults: list[Injected]
    findings: Findings
    hostile_sent: int
    hostile_statuses: Counter[str]
    hostile_problems: list[str]
    load_failures: Counter[str]
    load_handled: Counter[str]
    unexpected_failures: dict[str, int]
    person_moves: int
    person_takeovers: int
    person_returns: int
    play_person_moves: int = 0
    """Moves the person on a Play stream made; below, how often it opened the stream
    again, and how many of those were for a stream silent or an outcome overdue."""
    play_person_reconnections: int = 0
    play_person_stuck: int = 0
    play_person_retried: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return not self.problems


Progress = Callable[[str], None]


async def run_suite(options: RunOptions, work_dir: Path, progress: Progress = print
                    ) -> RunResult:
    began = time.monotonic()
    run_tag = f"rel{uuid.uuid4().hex[:6]}"
    async with running_cluster(work_dir) as cluster, \
            service_channel(cluster.game_target) as game_channel, \
            grpc.aio.insecure_channel(cluster.lobby_address) as lobby_channel, \
            grpc.aio.insecure_channel(f"127.0.0.1:{cluster.of('game')[0].port}") as pinned:
        progress(f"cluster up: {', '.join(p.name for p in cluster.processes)}")
        game = game_pb2_grpc.GameServiceStub(game_channel)
        load = Load(game, TEST_KEYS, run_tag)
        stop_load = asyncio.Event()
        sustained = asyncio.create_task(load.sustain(
            options.matches, max(1, options.streams // options.matches), stop_load))
        person = await _seat_a_person(cluster, load.tally, lobby_channel, game,
                                      game_pb2_grpc.GameServiceStub(pinned))
        load.matches[person.game_id] = PERSONS_VARIANT  # its table admits no spectators
        presence = asyncio.create_task(person.hold_stream())
        # The pause is the first fault: it must find the person's stream on the board, or
        # no replica ever saw them and there is no one to take over.
        await _wait_until_on_the_board(cluster.nats.url, person)
        playing = asyncio.create_task(person.play_to_the_end())
        seated = await _seat_a_person(cluster, load.tally, lobby_channel, game, game)
        play_person = PlayPerson(game, seated.token, seated.player_id, seated.game_id,
                                 load.tally)
        load.matches[play_person.game_id] = PERSONS_VARIANT
        streaming = asyncio.create_task(play_person.play_to_the_end())
        hostile = HostileClients(_addresses(cluster), TEST_KEYS,
                                 [person.game_id, "x", person.player_id],
                                 options.hostile_calls, options.seed)
        try:
            hostile.start()
            progress(f"load on: {options.matches} bot matches at a time, "
                     f"{options.streams} watchers, {options.hostile_calls} hostile calls")
            injector = FaultInjector(cluster, options.seed)
            await _inject_faults(injector, options, cluster, progress)
            progress("faults over; settling")
            stop_load.set()
            await sustained
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(180):
                    await asyncio.shield(playing)
                    await asyncio.shield(streaming)
            await hostile.join()
            findings = await check_everything(load, cluster.database_url, cluster.nats.url,
                                              TEST_KEYS, stats_running="stats" in cluster.services)
        finally:
            stop_load.set()
            await load.stop_watching()
            for task in (sustained, presence, playing, streaming):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                    await task

    problems = [*findings.problems, *hostile.problems]
    problems += [f"load clients met {count} × {code}"
                 for code, count in load.tally.unexpected.items()]
    if playing.cancelled() or playing.exception() is not None:
        problems.append(f"the person's match did not end for them: {_outcome(playing)}")
    if streaming.cancelled() or streaming.exception() is not None:
        problems.append(f"the Play person's match did not end for them: {_outcome(streaming)}")
    problems += play_person.problems()
    return RunResult(
        options=options, services=cluster.services, processes=len(cluster.processes),
        wall_s=round(time.monotonic() - began, 1), faults=injector.injected,
        findings=findings, hostile_sent=hostile.sent, hostile_statuses=hostile.statuses,
        hostile_problems=hostile.problems, load_failures=load.tally.failures,
        load_handled=load.tally.handled,
        unexpected_failures=load.tally.unexpected, person_moves=person.moves,
        person_takeovers=findings.takeovers[person.game_id],
        person_returns=findings.returns[person.game_id],
        play_person_moves=play_person.moves,
        play_person_reconnections=play_person.reconnections,
        play_person_stuck=play_person.stuck + play_person.silent,
        play_person_retried=play_person.retried, problems=problems,
    )


async def _seat_a_person(cluster: Cluster, tally: CallTally, lobby_channel: grpc.aio.Channel,
                         game: game_pb2_grpc.GameServiceStub,
                         pinned: game_pb2_grpc.GameServiceStub) -> Person:
    """A guest at a Hokm table the lobby fills with bots; its stream on game replica 0."""
    lobby = lobby_pb2_grpc.LobbyServiceStub(lobby_channel)
    signed = await retrying(tally, lambda: lobby.SignInGuest(
        lobby_pb2.SignInGuestRequest(device_id=f"device-{uuid.uuid4().hex[:8]}",
                                     display_name="Reliability"), timeout=10))
    metadata = bearer(signed.token)
    settings = lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM, target_score=3)
    created = await retrying(tally, lambda: lobby.CreateTable(
        lobby_pb2.CreateTableRequest(settings=settings), metadata=metadata, timeout=10))
    started = await retrying(tally, lambda: lobby.StartGame(
        lobby_pb2.StartGameRequest(table_id=created.table.table_id), metadata=metadata,
        timeout=10))
    return Person(game, pinned, signed.token, signed.player_id, started.table.game_id, tally)


def _addresses(cluster: Cluster) -> dict[str, str]:
    """Where each served service answers: the lobby and stats processes, the game replicas
    for the game, replay and audit services; a service the cluster does not run (the
    tournaments, the accounts and the moderation they serve, any other) has none."""
    addresses: dict[str, str] = {}
    for service in every_service():
        short = service.name.removesuffix("Service").lower()
        if short in cluster.services and short != "game":
            addresses[service.full_name] = f"127.0.0.1:{cluster.of(short)[0].port}"
        elif short in _ON_GAME_REPLICAS:
            addresses[service.full_name] = cluster.game_target
    return addresses


_ON_GAME_REPLICAS = ("game", "replay", "audit")
"""The services a game replica serves."""


async def _wait_until_on_the_board(nats_url: str, person: Person,
                                   seconds: float = 60.0) -> None:
    """Until a game replica's record on the presence board shows the person's stream."""
    board = NatsPresenceBoard(nats_url)
    await board.start()
    try:
        async with asyncio.timeout(seconds):
            while not any(record.game_id == person.game_id and person.player_id in record.open
                          for record in await board.records()):
                await asyncio.sleep(0.05)
    finally:
        await board.close()


async def _inject_faults(injector: FaultInjector, options: RunOptions, cluster: Cluster,
                         progress: Progress) -> None:
    person_replica = cluster.of("game")[0]
    if options.duration_s <= 0:
        kinds = injector.plan_each_once()
        for kind in kinds:
            await asyncio.sleep(options.fault_gap_s)
            await injector.inject(kind, paused_replica=person_replica)
            progress(f"fault: {injector.injected[-1]}")
        return
    deadline = time.monotonic() + options.duration_s
    first_round = injector.plan_each_once()
    while time.monotonic() < deadline:
        await asyncio.sleep(options.fault_gap_s)
        planned = bool(first_round)
        kind = first_round.pop(0) if planned else injector.draw()
        # The planned pause freezes the person's replica (their seat must go to a bot and
        # come back); the drawn ones fall on any replica, as a real stall would.
        await injector.inject(kind, paused_replica=person_replica if planned else None)
        progress(f"fault: {injector.injected[-1]}")


def _outcome(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "still playing when the run ended"
    return repr(task.exception())
