"""Shared fixtures: PostgreSQL and NATS for the platform and service tests.

The servers come from ``DAST_TEST_DATABASE_URL`` and ``DAST_TEST_NATS_URL`` (defaults: the
local ones DEVELOPERS.md describes). When one is unreachable and a Docker engine answers, a
throwaway container takes its place; otherwise the test is skipped with the reason, except
under ``CI=true`` where an unreachable service fails the run. Every test gets its own
PostgreSQL schema and its own deployment name on NATS (its streams, subjects and presence
bucket), so tests never see each other's data. ``private_nats`` starts a nats-server of the
test's own that it can stop and start (outage tests).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from services.platform.nats_names import NatsNames as PlatformNatsNames
from tests.support.servers import NATS_SERVER, PrivateNats

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    """Fail under CI (a missing service must never pass silently), skip elsewhere."""
    if _in_ci():
        pytest.fail(f"{reason} (CI=true: services are required)", pytrace=False)
    pytest.skip(reason)


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def _wait_port(host: str, port: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _port_open(host, port, timeout=0.5):
            return True
        time.sleep(0.1)
    return False


def _docker_available() -> bool:
    try:
        docker = importlib.import_module("docker")  # an optional dependency of testcontainers
        docker.from_env().ping()
    except Exception:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def nats_url() -> Iterator[str]:
    """A NATS server with JetStream: the configured one, else a throwaway container."""
    url = os.environ.get("DAST_TEST_NATS_URL", DEFAULT_NATS_URL)
    parts = urlsplit(url)
    if _port_open(parts.hostname or "127.0.0.1", parts.port or 4222):
        yield url
        return
    if not _docker_available():
        _unavailable(f"NATS is unreachable at {url} and no Docker engine runs")
    from testcontainers.core.container import DockerContainer

    container = DockerContainer("nats:2.10").with_command("-js").with_exposed_ports(4222)
    container.start()
    try:
        host, port = container.get_container_host_ip(), int(container.get_exposed_port(4222))
        if not _wait_port(host, port):
            _unavailable("the NATS container did not open its port")
        yield f"nats://{host}:{port}"
    finally:
        container.stop()


def _postgres_ready(url: str) -> bool:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception:
        return False
    finally:
        engine.dispose()
    return True


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL server: the configured one, else a throwaway container."""
    url = os.environ.get("DAST_TEST_DATABASE_URL", DEFAULT_DATABASE_URL)
    if _postgres_ready(url):
        yield url
        return
    if not _docker_available():
        _unavailable(f"PostgreSQL is unreachable at {make_url(url)!r} and no Docker engine runs")
    from testcontainers.core.container import DockerContainer

    container = (
        DockerContainer("postgres:16-alpine")
        .with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
        .with_env("POSTGRES_DB", "test")
        .with_exposed_ports(5432)
    )
    container.start()
    try:
        host, port = container.get_container_host_ip(), container.get_exposed_port(5432)
        container_url = f"postgresql+psycopg://postgres@{host}:{port}/test"
        deadline = time.monotonic() + 60
        while not _postgres_ready(container_url):
            if time.monotonic() > deadline:
                _unavailable("the PostgreSQL container did not accept connections")
            time.sleep(0.5)
        yield container_url
    finally:
        container.stop()


@contextlib.contextmanager
def fresh_schema(database_url: str) -> Iterator[str]:
    """``database_url`` with its ``search_path`` set to a fresh schema, dropped on exit."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def pg_url(database_url: str) -> Iterator[str]:
    """A database URL whose ``search_path`` is a fresh schema, dropped after the test."""
    with fresh_schema(database_url) as url:
        yield url


@dataclass(frozen=True)
class NatsNames:
    """A test's own deployment on the shared NATS server (``DAST_DEPLOYMENT``), and the
    names of its games' stream and subjects."""

    deployment: str

    @property
    def names(self) -> PlatformNatsNames:
        """Every NATS name of the deployment."""
        return PlatformNatsNames(self.deployment)

    @property
    def stream(self) -> str:
        """The games' events stream."""
        return self.names.events_stream

    @property
    def subject_prefix(self) -> str:
        """Its subjects' prefix."""
        return self.names.events_prefix


async def delete_streams(nats_url: str, names: PlatformNatsNames) -> None:
    """Drop every stream (and the presence bucket) of a test's deployment that exists."""
    import nats

    with contextlib.suppress(Exception):
        connection = await nats.connect(nats_url, connect_timeout=2, max_reconnect_attempts=0)
        jetstream = connection.jetstream()
        for stream in names.streams:
            with contextlib.suppress(Exception):
                await jetstream.delete_stream(stream)
        await connection.close()


@pytest.fixture
async def nats_names(nats_url: str) -> AsyncIterator[NatsNames]:
    """A deployment name of one test's own; its streams and bucket are dropped afterwards."""
    names = NatsNames(f"test{uuid.uuid4().hex[:12]}")
    yield names
    await delete_streams(nats_url, names.names)


@pytest.fixture
async def nats_bus_factory(
    nats_url: str, nats_names: NatsNames
) -> AsyncIterator[Callable[..., Any]]:
    """Make started NatsBus instances on the test's own stream; closes them and drops it."""
    from services.platform.bus_nats import NatsBus

    buses: list[NatsBus] = []

    async def make(url: str | None = None, **options: Any) -> NatsBus:
        options.setdefault("stream", nats_names.stream)
        options.setdefault("subject_prefix", nats_names.subject_prefix)
        bus = NatsBus(url or nats_url, **options)
        await bus.start()
        buses.append(bus)
        return bus

    yield make
    for bus in buses:
        await bus.close()


@pytest.fixture
def private_nats(tmp_path: Path) -> Iterator[PrivateNats]:
    """A running private nats-server that the test may stop and start again."""
    if not os.path.exists(NATS_SERVER):
        _unavailable(f"no nats-server binary at {NATS_SERVER}")
    server = PrivateNats(tmp_path / "jetstream")
    server.start()
    try:
        yield server
    finally:
        server.stop()
