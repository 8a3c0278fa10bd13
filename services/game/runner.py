"""Run dast services in one process: store, bus, relay, one gRPC server, metrics.

``dast serve`` and ``python -m services.game`` call :func:`run`. With no configuration
it is the embedded backend (SQLite file under the data dir, in-process bus); with
``DAST_DATABASE_URL`` and ``DAST_NATS_URL`` it is one replica of a production deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

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


Mount = Callable[[grpc.aio.Server, Shared], str]
"""Adds a service to the server; returns its full gRPC service name."""


def _mount_game(server: grpc.aio.Server, shared: Shared) -> str:
    mount_game_service(server, shared.store, shared.bus, shared.notify)
    return str(GAME_SERVICE_NAME)


MOUNTS: Final[dict[str, Mount]] = {"game": _mount_game}
"""The services ``--services`` may name."""


def parse_services(text: str) -> list[str]:
    """The services named in a comma-separated list ("all" = every one).

    :raises ValueError: for an unknown name.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["all"]:
        return list(MOUNTS)
    unknown = sorted(set(names) - set(MOUNTS))
    if unknown or not names:
        raise ValueError(f"unknown services {unknown}; known: {', '.join(MOUNTS)}")
    return names


def _banner(settings: Settings, names: list[str], port: int) -> str:
    host = settings.listen.rpartition(":")[0] or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "[::]", "") else host
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
    server = make_server(settings.jwt_secret, max_message_bytes=settings.max_message_bytes)
    service_names = [MOUNTS[name](server, shared) for name in names]
    await add_health_and_reflection(server, service_names)
    port = bind(server, settings.listen)
    await server.start()
    if settings.metrics_port:
        serve_metrics(settings.metrics_port, settings.metrics_host)
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
