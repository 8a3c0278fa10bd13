"""The faults the reliability suite injects, and the order it injects them in.

Each kind is what an operator meets in production:

- ``kill:<service>``: a process of that service dies at any line (SIGKILL) and comes back;
- ``restart:nats``: the message broker restarts (clients lose their connections; JetStream
  keeps its streams);
- ``crash:postgres``: the database stops without a checkpoint (every connection cut,
  recovery from its WAL) and comes back;
- ``pause:game``: a game replica freezes (SIGSTOP: a long GC pause, a starved VM) for
  longer than the presence grace period, then resumes as if nothing happened.

A plan is drawn from a seed: the short run injects each kind once; the long run keeps
drawing until its time is up.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from tests.reliability.cluster import (
    PRESENCE_GRACE_SECONDS,
    PRESENCE_HEARTBEAT_SECONDS,
    Cluster,
)
from tests.support.processes import ServiceProcess

DOWN_SECONDS: Final = 1.0
"""How long a killed process or a broker stays down before it is started again."""
POSTGRES_DOWN_SECONDS: Final = 2.0
PAUSE_SECONDS: Final = 3 * PRESENCE_HEARTBEAT_SECONDS + PRESENCE_GRACE_SECONDS + 3.0
"""Longer than the presence board takes to count a silent replica's players as gone."""


def fault_kinds(cluster: Cluster) -> list[str]:
    """Every kind of fault this cluster can take, one per service plus the servers."""
    return [*(f"kill:{service}" for service in cluster.services),
            "restart:nats", "crash:postgres", "pause:game"]


@dataclass
class Injected:
    """One fault: what, on which process, when (seconds into the run), and how long the
    system took to have every process listening again."""

    kind: str
    target: str
    at_s: float
    recovered_s: float


@dataclass
class FaultInjector:
    cluster: Cluster
    seed: int
    started: float = field(default_factory=time.monotonic)
    injected: list[Injected] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._chooser = random.Random(self.seed)

    @property
    def counts(self) -> Counter[str]:
        return Counter(fault.kind for fault in self.injected)

    def plan_each_once(self) -> list[str]:
        """Every kind once: the pause first (while the person's match surely runs, so its
        seat goes to a bot and comes back), the others in a seeded order."""
        kinds = [kind for kind in fault_kinds(self.cluster) if kind != "pause:game"]
        self._chooser.shuffle(kinds)
        return ["pause:game", *kinds]

    def draw(self) -> str:
        return self._chooser.choice(fault_kinds(self.cluster))

    async def inject(self, kind: str, *, paused_replica: ServiceProcess | None = None) -> None:
        """Inject one fault and wait until the system is whole again."""
        at = time.monotonic() - self.started
        action, _, target = kind.partition(":")
        began = time.monotonic()
        if action == "kill":
            process = self._chooser.choice(self.cluster.of(target))
            target = process.name
            process.kill()
            await asyncio.sleep(DOWN_SECONDS)
            process.start()
            await process.listening()
        elif action == "restart":
            await asyncio.to_thread(self.cluster.nats.stop)
            await asyncio.sleep(DOWN_SECONDS)
            await asyncio.to_thread(self.cluster.nats.start)
        elif action == "crash":
            await asyncio.to_thread(self.cluster.postgres.crash)
            await asyncio.sleep(POSTGRES_DOWN_SECONDS)
            await asyncio.to_thread(self.cluster.postgres.start)
        elif action == "pause":
            process = paused_replica or self._chooser.choice(self.cluster.of("game"))
            target = process.name
            process.pause()
            await asyncio.sleep(PAUSE_SECONDS)
            process.resume()
        else:
            raise ValueError(f"unknown fault {kind!r}")
        self.injected.append(Injected(kind, target, round(at, 1),
                                      round(time.monotonic() - began, 1)))
