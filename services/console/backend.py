"""The console's calls to the other services, over their gRPC APIs only.

Each service is reached at the target the deployment names for it
(:class:`ConsoleTargets`); every call carries the signed-in operator's bearer token, so each
service checks the operator's rights itself and the moderation log records who acted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from dast.v1 import (
    audit_pb2_grpc,
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    moderation_pb2_grpc,
    replay_pb2_grpc,
    reports_pb2_grpc,
    stats_pb2_grpc,
    tournament_pb2_grpc,
)
from services.platform.channels import service_channel

CONSOLE_SERVICES: Final = ("game", "lobby", "accounts", "stats", "tournament")
"""The services the console calls (the bots have no API of their own)."""
GRPC_SERVICES: Final[Mapping[str, tuple[str, ...]]] = {
    "game": ("dast.v1.GameService", "dast.v1.ReplayService", "dast.v1.AuditService"),
    "lobby": ("dast.v1.LobbyService", "dast.v1.ReportService", "dast.v1.ChatService"),
    "accounts": ("dast.v1.AccountsService", "dast.v1.ModerationService"),
    "stats": ("dast.v1.StatsService",),
    "tournament": ("dast.v1.TournamentService",),
}
"""The gRPC services each dast service serves (what the overview's health checks ask for)."""
CALL_SECONDS: Final = 10.0
TABLES_PAGE: Final = 500
MAX_TABLE_PAGES: Final = 100
"""The most pages of tables one listing reads (50,000 tables)."""
HEALTH_SECONDS: Final = 2.0


class TargetsError(ValueError):
    """A ``DAST_CONSOLE_TARGETS`` that does not parse."""


@dataclass(frozen=True)
class ConsoleTargets:
    """Where each service listens: a gRPC target per service name (``host:port``, or
    ``ipv4:host:port,host:port`` for several replicas, or ``dns:///name:port``)."""

    by_service: Mapping[str, str]

    @classmethod
    def parse(cls, text: str, default: str = "") -> ConsoleTargets:
        """``game=host:port;lobby=host:port;…`` (``;``-separated, since a target may list
        replicas with commas); a service left out is reached at ``default``.

        :raises TargetsError: for an unknown service, a missing ``=`` or an empty target.
        """
        found: dict[str, str] = {}
        for part in (piece.strip() for piece in text.split(";")):
            if not part:
                continue
            name, sign, target = (value.strip() for value in part.partition("="))
            if not sign or not target:
                raise TargetsError(f"DAST_CONSOLE_TARGETS: {part!r} is not service=target")
            if name not in CONSOLE_SERVICES:
                raise TargetsError(f"DAST_CONSOLE_TARGETS: unknown service {name!r}; known: "
                                   f"{', '.join(CONSOLE_SERVICES)}")
            found[name] = target
        missing = [name for name in CONSOLE_SERVICES if name not in found]
        if missing and not default:
            raise TargetsError(
                f"DAST_CONSOLE_TARGETS names no target for {', '.join(missing)} (and no "
                "DAST_GAME_TARGET to fall back on)")
        return cls({name: found.get(name, default) for name in CONSOLE_SERVICES})

    def replicas(self, service: str) -> list[str]:
        """The addresses a target lists (one for a name a resolver spreads)."""
        target = self.by_service[service]
        scheme, sep, rest = target.partition(":")
        if sep and scheme in ("ipv4", "ipv6"):
            return [address.strip() for address in rest.split(",") if address.strip()]
        return [target]


@dataclass(frozen=True)
class ReplicaHealth:
    """One replica's answer to the gRPC health checks of its services."""

    service: str
    address: str
    serving: bool
    detail: str


def bearer(token: str) -> tuple[tuple[str, str]]:
    """The ``authorization`` metadata of ``token``."""
    return (("authorization", f"Bearer {token}"),)


class Backend:
    """Stubs of every service the console calls, over one channel per target."""

    def __init__(self, targets: ConsoleTargets) -> None:
        self.targets = targets
        self._channels: dict[str, grpc.aio.Channel] = {}

    def channel(self, target: str) -> grpc.aio.Channel:
        """The (shared) channel to ``target``, opened on first use."""
        if target not in self._channels:
            self._channels[target] = service_channel(target)
        return self._channels[target]

    def _of(self, service: str) -> grpc.aio.Channel:
        return self.channel(self.targets.by_service[service])

    @property
    def lobby(self) -> lobby_pb2_grpc.LobbyServiceStub:
        return lobby_pb2_grpc.LobbyServiceStub(self._of("lobby"))

    @property
    def reports(self) -> reports_pb2_grpc.ReportServiceStub:
        return reports_pb2_grpc.ReportServiceStub(self._of("lobby"))

    @property
    def game(self) -> game_pb2_grpc.GameServiceStub:
        return game_pb2_grpc.GameServiceStub(self._of("game"))

    @property
    def replay(self) -> replay_pb2_grpc.ReplayServiceStub:
        return replay_pb2_grpc.ReplayServiceStub(self._of("game"))

    @property
    def audit(self) -> audit_pb2_grpc.AuditServiceStub:
        return audit_pb2_grpc.AuditServiceStub(self._of("game"))

    @property
    def moderation(self) -> moderation_pb2_grpc.ModerationServiceStub:
        return moderation_pb2_grpc.ModerationServiceStub(self._of("accounts"))

    @property
    def stats(self) -> stats_pb2_grpc.StatsServiceStub:
        return stats_pb2_grpc.StatsServiceStub(self._of("stats"))

    @property
    def tournaments(self) -> tournament_pb2_grpc.TournamentServiceStub:
        return tournament_pb2_grpc.TournamentServiceStub(self._of("tournament"))

    async def call(self, method: Any, request: Any, token: str) -> Any:
        """``method(request)`` as the operator whose token this is.

        :raises grpc.aio.AioRpcError: as the service answered.
        """
        return await method(request, metadata=bearer(token), timeout=CALL_SECONDS)

    async def health(self) -> list[ReplicaHealth]:
        """Every replica of every service the console reaches, and whether it serves."""
        checks = [self._replica_health(service, address)
                  for service in CONSOLE_SERVICES for address in self.targets.replicas(service)]
        return list(await asyncio.gather(*checks))

    async def _replica_health(self, service: str, address: str) -> ReplicaHealth:
        stub = health_pb2_grpc.HealthStub(self.channel(address))
        down: list[str] = []
        for name in GRPC_SERVICES[service]:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=name),
                                         timeout=HEALTH_SECONDS)
            except grpc.aio.AioRpcError as error:
                return ReplicaHealth(service, address, False,
                                     f"{error.code().name}: {error.details() or ''}".strip())
            if reply.status != health_pb2.HealthCheckResponse.SERVING:
                down.append(name)
        if down:
            return ReplicaHealth(service, address, False, "not serving: " + ", ".join(down))
        return ReplicaHealth(service, address, True, "serving")

    async def all_tables(self, token: str, *, game_type: int = 0) -> list[Any]:
        """Every table the lobby lists (waiting and playing, private ones too: an operator
        sees them all), page by page."""
        found: list[Any] = []
        page_token = ""
        for _ in range(MAX_TABLE_PAGES):
            reply = await self.call(self.lobby.ListTables, lobby_pb2.ListTablesRequest(
                game_type=game_type, include_playing=True,  # type: ignore[arg-type]
                page_size=TABLES_PAGE, page_token=page_token), token)
            found.extend(reply.tables)
            page_token = reply.next_page_token
            if not page_token:
                break
        return found

    async def game_statuses(self, token: str) -> list[tuple[str, Any]]:
        """Every game replica's ``GetServerStatus`` (or the error it answered), by address:
        the replicas the game target lists (a name a resolver spreads answers as one)."""
        async def one(address: str) -> tuple[str, Any]:
            stub = game_pb2_grpc.GameServiceStub(self.channel(address))
            try:
                return address, await self.call(stub.GetServerStatus,
                                                 game_pb2.GetServerStatusRequest(), token)
            except grpc.aio.AioRpcError as error:
                return address, error

        return list(await asyncio.gather(*(one(address)
                                           for address in self.targets.replicas("game"))))

    async def close(self) -> None:
        """Close every channel."""
        for channel in self._channels.values():
            with contextlib.suppress(Exception):
                await channel.close()
        self._channels.clear()
