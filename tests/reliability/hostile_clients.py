"""Hostile clients during the run: the hostile-RPC fuzzing, against the whole system.

A thread of its own (hypothesis drives a synchronous function) sends every method of every
service the cluster serves random and hostile requests (:mod:`tests.support.hostile`) with
missing, expired, forged, garbage and ordinary players' tokens — never an operator's: the
suite attacks as players do. The ids in the requests include the load's real matches, so
the calls reach past the edge checks. A reply is judged by the same rule as in the
property test, except that a process the faults just killed or paused may not answer at all
(``UNAVAILABLE``, ``DEADLINE_EXCEEDED``): those are counted apart.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
from google.protobuf.descriptor import MethodDescriptor
from hypothesis import HealthCheck, given, seed, settings

from services.platform.channels import service_channel
from services.platform.token_keys import TokenKeys
from tests.reliability.load import TRANSIENT
from tests.support.hostile import calls, every_service, reply_problem, send
from tests.support.tokens import mint_with, stranger_token


@dataclass
class HostileClients:
    """Sends ``calls`` hostile requests from a thread; keeps the statuses and problems."""

    addresses: dict[str, str]
    """Full service name (``dast.v1.LobbyService``) -> the gRPC target serving it."""
    keys: TokenKeys
    ids: Sequence[str]
    calls: int
    seed: int
    statuses: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    sent: int = 0
    _thread: threading.Thread | None = field(default=None, init=False)

    def tokens(self) -> dict[str, str | None]:
        return {
            "none": None,
            "stranger": mint_with(self.keys, "g-hostile-stranger"),
            "seated": mint_with(self.keys, "g-hostile-seated"),
            "expired": mint_with(self.keys, "g-hostile-stranger", ttl_seconds=-60),
            "forged": stranger_token("root"),
            "garbage": "not.a.token",
        }

    def methods(self) -> list[MethodDescriptor]:
        return [method for service in every_service() if service.full_name in self.addresses
                for method in service.methods]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hostile-clients", daemon=True)
        self._thread.start()

    async def join(self) -> None:
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    def _run(self) -> None:
        """The thread: its own event loop, driven one hostile call at a time by hypothesis."""
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        channels = loop.run_until_complete(self._open_channels())
        tokens = self.tokens()

        def one(method: MethodDescriptor, payload: bytes, token_name: str) -> None:
            channel = channels[method.containing_service.full_name]
            code, _, error = loop.run_until_complete(
                send(channel, method, payload, tokens[token_name], timeout=3))
            self.sent += 1
            self.statuses[code.name] += 1
            if code in TRANSIENT:
                return  # a process the faults killed or paused did not answer
            problem = reply_problem(code, payload, error)
            if problem is not None:
                self.problems.append(f"{method.name} ({token_name}): {problem}")

        @seed(self.seed)
        @settings(max_examples=self.calls, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(calls(self.methods(), list(self.ids), list(tokens)))
        def attack(call: tuple[MethodDescriptor, bytes, str]) -> None:
            one(*call)

        try:
            attack()
        finally:
            for channel in channels.values():
                loop.run_until_complete(channel.close())
            loop.close()

    async def _open_channels(self) -> dict[str, grpc.aio.Channel]:
        return {name: service_channel(target) for name, target in self.addresses.items()}
