"""Run dast services in one process: store, bus, relay, one gRPC server, metrics.

``dast serve`` and ``python -m services.game`` call :func:`run`. With no configuration
it is the embedded backend (SQLite file under the data dir, in-process bus); with
``DAST_DATABASE_URL`` and ``DAST_NATS_URL`` it is one replica of a production deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, Protocol

import grpc
import structlog

from services.game.app import SERVICE_NAME as GAME_SERVICE_NAME
from services.game.app import mount_game_service
from services.platform.auth import Role, mint_token
from services.platform.bus import Bus, open_bus
from services.platform.config import Settings
from services.platform.logging import configure_logging
from services.platform.metrics import serve_metrics
from services.platform.relay import Relay
from services.platform.server import add_health_and_reflection, bind, make_server
from services.platform.store import OutboxStore, open_store


@dataclass(frozen=True, slots=True)
class Shared:
    """What the services of one process share."""

    settings: Settings
    store: OutboxStore
    bus: Bus
    notify: Callable[[], None]


GIL_SWITCH_SECONDS: Final = 0.0005
GC_YOUNG_THRESHOLD: Final = 10_000

KNOWN_SERVICES: Final = ("game", "lobby", "bot")
"""What ``--services`` may name ("all" = every one). ``lobby`` and ``bot`` run in the play
stack of :mod:`services.bot.stack`, which always carries the game service beside them
(the lobby starts matches in it; bots and turn timers are its clients)."""


class Component(Protocol):
    """Services added to the server, with background work once it listens."""

    def mount(self, server: grpc.aio.Server) -> list[str]: ...

    async def start(self, target: str) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class GameOnly:
    """Just the game service."""

    shared: Shared

    def mount(self, server: grpc.aio.Server) -> list[str]:
        shared = self.shared
        mount_game_service(server, shared.store, shared.bus, shared.notify)
        return [str(GAME_SERVICE_NAME)]

    async def start(self, target: str) -> None:
        """Nothing runs in the background."""

    async def stop(self) -> None:
        """Nothing to stop."""


def play_stack(shared: Shared, names: list[str]) -> Component:
    """The lobby, game, bot and timer services (:class:`services.bot.stack.PlayStack`)."""
    from services.bot.stack import PlayStack, StackOptions
    from services.lobby.store import LobbyStore

    settings = shared.settings
    with_bots = "bot" in names
    lobby_store = LobbyStore.open(settings.store_url())
    stack = PlayStack(
        settings.jwt_secret, shared.store, shared.bus, lobby_store,
        StackOptions(bots=with_bots, timers=with_bots, presence=with_bots,
                     token_ttl_seconds=settings.token_ttl_seconds,
                     grace_ms=int(settings.presence_grace_seconds * 1000)),
        restore_url=settings.store_url(),
    )

    class Play:
        def mount(self, server: grpc.aio.Server) -> list[str]:
            return stack.mount(server, shared.notify)

        async def start(self, target: str) -> None:
            await stack.start(target)

        async def stop(self) -> None:
            await stack.stop()
            await asyncio.to_thread(lobby_store.close)

    return Play()


def parse_services(text: str) -> list[str]:
    """The services named in a comma-separated list ("all" = every one).

    :raises ValueError: for an unknown name.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["all"]:
        return list(KNOWN_SERVICES)
    unknown = sorted(set(names) - set(KNOWN_SERVICES))
    if unknown or not names:
        raise ValueError(f"unknown services {unknown}; known: all, {', '.join(KNOWN_SERVICES)}")
    return names


def _loopback(listen: str) -> str:
    host = listen.rpartition(":")[0]
    return "127.0.0.1" if host in ("0.0.0.0", "[::]", "") else host


def _banner(settings: Settings, names: list[str], port: int) -> str:
    host = _loopback(settings.listen)
    store = settings.database_url or settings.store_url()
    bus = settings.nats_url or "in-process"
    lines = [
        f"dast listening on {host}:{port} (services: {', '.join(names)})",
        f"  store: {store}",
        f"  bus:   {bus}",
        f"  try:   grpcurl -plaintext {host}:{port} list",
    ]
    if settings.metrics_port:
        lines.append(f"  metrics: http://{settings.metrics_host}:{settings.metrics_port}/metrics")
    if settings.uses_dev_secret():
        token = mint_token(settings.jwt_secret, "dev-admin", Role.ADMIN)
        lines.append("  DAST_JWT_SECRET is unset: development secret in use. Admin token:")
        lines.append(f"  authorization: Bearer {token}")
    return "\n".join(lines)


async def run(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Serve until SIGINT/SIGTERM (or ``stop`` is set), then shut down cleanly.

    :raises ValueError: for unknown service names.
    """
    configure_logging(settings.log_level, json=settings.log_json)
    # The store's writer thread hands the GIL back and forth with the event loop on every
    # statement; at the default 5 ms switch interval it waits behind the loop for most of
    # them (a command's latency was then mostly GIL waits).
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    log = structlog.get_logger(component="runner")
    names = parse_services(settings.services)
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await asyncio.to_thread(open_store, settings.store_url())
    # SQLite has one writer: one store thread avoids threads queueing on its lock; a
    # PostgreSQL pool serves many connections at once.
    workers = 16 if settings.database_url and "postgresql" in settings.database_url else 2
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(workers, thread_name_prefix="store")
    )
    bus = open_bus(settings.nats_url)
    await bus.start()
    relay = Relay(store, bus)
    relay_task = asyncio.create_task(relay.run(), name="relay")
    shared = Shared(settings, store, bus, relay.notify)
    component = GameOnly(shared) if names == ["game"] else play_stack(shared, names)
    server = make_server(settings.jwt_secret, max_message_bytes=settings.max_message_bytes)
    await add_health_and_reflection(server, component.mount(server))
    port = bind(server, settings.listen)
    await server.start()
    await component.start(f"{_loopback(settings.listen)}:{port}")
    if settings.metrics_port:
        serve_metrics(settings.metrics_port, settings.metrics_host)
    # Everything loaded so far (modules, SQLAlchemy, gRPC, protobuf: ~80k objects) lives as
    # long as the process: keep it out of the cyclic GC, whose full collections otherwise
    # scan it all and stall every call in flight for 50-60 ms under load.
    gc.collect()
    gc.freeze()
    # A call allocates hundreds of objects: young collections every 700 allocations cost
    # ~2 % of the CPU at full speed; every 10,000 keeps them rare and still cheap.
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    print(_banner(settings, names, port), flush=True)
    log.info("serving", port=port, services=names)

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        await server.stop(grace=2.0)
        await component.stop()
        relay_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await relay_task
        await bus.close()
        await asyncio.to_thread(store.close)


def main() -> None:
    """``python -m services.game``: serve with settings from the ``DAST_*`` environment."""
    try:
        asyncio.run(run(Settings()))
    except ValueError as exc:
        print(f"dast: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
