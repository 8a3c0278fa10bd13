"""The whole system as separate processes on loopback, each of which may be broken.

A private nats-server and a private PostgreSQL cluster (so that restarting them disturbs no
one else on the machine), then one ``python -m services.compose`` process per service
replica: the lobby, two game replicas, two bot replicas and, where the code has it, the
stats service. Every process can be killed (SIGKILL), paused (SIGSTOP) and resumed, and
started again with the same port and settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from services.compose import KNOWN_SERVICES
from tests.support.processes import ServiceProcess
from tests.support.servers import PrivateNats, PrivatePostgres, free_port
from tests.support.tokens import token_environment

SIGNING_KEY: Final = "G1DCwG9DUhD7w7vhyT9cDP2m2ZqUw6jv0N2QmDq5cGc="
PRESENCE_GRACE_SECONDS: Final = 3.0
PRESENCE_HEARTBEAT_SECONDS: Final = 1.0
"""Both short, so that a game replica paused for a few seconds outlives them: silent for
three heartbeats, then the grace period, and its players' seats go to bots."""
REPLICAS: Final = {"lobby": 1, "game": 2, "bot": 2, "stats": 1}
"""How many processes of each service the cluster runs (stats only where it exists)."""


@dataclass
class Cluster:
    """Every process of the system and the servers under them."""

    nats: PrivateNats
    postgres: PrivatePostgres
    processes: list[ServiceProcess]
    game_target: str

    def of(self, service: str) -> list[ServiceProcess]:
        return [process for process in self.processes if process.service == service]

    @property
    def lobby_address(self) -> str:
        return f"127.0.0.1:{self.of('lobby')[0].port}"

    @property
    def services(self) -> list[str]:
        return sorted({process.service for process in self.processes})

    @property
    def database_url(self) -> str:
        return self.postgres.url


@contextlib.asynccontextmanager
async def running_cluster(work_dir: Path) -> AsyncIterator[Cluster]:
    """Start the servers and every process; stop them all afterwards, whatever happened."""
    work_dir.mkdir(parents=True, exist_ok=True)
    nats = PrivateNats(work_dir / "jetstream")
    postgres = PrivatePostgres()
    processes: list[ServiceProcess] = []
    try:
        await asyncio.to_thread(postgres.initialise)
        await asyncio.to_thread(postgres.start)
        await asyncio.to_thread(nats.start)
        game_ports = [free_port() for _ in range(REPLICAS["game"])]
        game_target = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in game_ports)
        env = {
            **os.environ, "DAST_DATABASE_URL": postgres.url, "DAST_NATS_URL": nats.url,
            "DAST_SIGNING_KEY": SIGNING_KEY,
            "DAST_GAME_TARGET": game_target, "DAST_LOG_LEVEL": "warning",
            "DAST_PRESENCE_GRACE_SECONDS": str(PRESENCE_GRACE_SECONDS),
            "DAST_PRESENCE_HEARTBEAT_SECONDS": str(PRESENCE_HEARTBEAT_SECONDS),
            # The load's people sign in with the lobby's retired device sign-in: the run
            # breaks the game, lobby and bot processes, not the accounts service.
            "DAST_LOBBY_DEVICE_SIGN_IN": "1",
        }
        logs = work_dir / "logs"
        logs.mkdir(exist_ok=True)
        for service, count in REPLICAS.items():
            if service not in KNOWN_SERVICES:
                continue
            for index in range(count):
                port = game_ports[index] if service == "game" else free_port()
                processes.append(ServiceProcess(
                    f"{service}-{index}", service, port,
                    {**env, **token_environment([service])},  # only its own keys
                    logs / f"{service}-{index}.log"))
        first, *others = processes_in_start_order(processes)
        first.start()  # the first game replica migrates the schema
        await first.listening()
        for process in others:
            process.start()
        await asyncio.gather(*(process.listening() for process in others))
        yield Cluster(nats, postgres, processes, game_target)
    finally:
        for process in processes:
            process.stop()
        nats.stop()
        await asyncio.to_thread(postgres.remove)


def processes_in_start_order(processes: list[ServiceProcess]) -> list[ServiceProcess]:
    """A game replica first: it creates the schema the others expect."""
    return sorted(processes, key=lambda process: process.service != "game")
