"""A bench run's own PostgreSQL schema and NATS deployment: empty at the start, dropped after.

Benches that write through PostgreSQL and NATS used the servers' shared defaults (the
``test`` database's ``public`` schema, the ``DAST_EVENTS`` stream), so every run started on
what all earlier runs had left. On a server without autovacuum (as on the development
machines) that is not only more rows: every append rewrites its game's row, and after a day
of runs the ``games`` table held 3.2 million dead rows for 31,000 games, which the relay's
claim and the writer's head reads wade through. Figures then drifted with the number of runs
made before, not with the code. A run in a place of its own measures the code alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy.engine import make_url

from services.platform.nats_names import NatsNames


@dataclass(frozen=True)
class Place:
    """Where one bench run keeps its data."""

    database_url: str
    """The bench's database URL, its ``search_path`` set to the run's own schema."""
    deployment: str
    """The run's own deployment name on NATS (its streams and subjects)."""

    @property
    def nats_stream(self) -> str:
        """The run's games' events stream."""
        return NatsNames(self.deployment).events_stream

    @property
    def nats_subject_prefix(self) -> str:
        """Its subjects' prefix."""
        return NatsNames(self.deployment).events_prefix

    def env(self) -> dict[str, str]:
        """The settings a server of the run gets (``dast serve``'s environment)."""
        return {"DAST_DATABASE_URL": self.database_url, "DAST_DEPLOYMENT": self.deployment}


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextlib.contextmanager
def fresh_schema(database_url: str) -> Iterator[str]:
    """``database_url`` with its ``search_path`` set to a new, empty schema, dropped when the
    block ends."""
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_libpq(database_url), autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield make_url(database_url).update_query_dict(
            {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_libpq(database_url), autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextlib.contextmanager
def fresh_place(database_url: str, nats_url: str) -> Iterator[Place]:
    """A new schema and deployment name for one run; both are dropped when it ends (the
    streams are made by the first server that uses them). Not from inside an event loop:
    the streams are deleted with ``asyncio.run``."""
    tag = uuid.uuid4().hex[:12]
    with fresh_schema(database_url) as url:
        place = Place(database_url=url, deployment=f"bench{tag}")
        try:
            yield place
        finally:
            asyncio.run(delete_streams(nats_url, NatsNames(place.deployment)))


async def delete_streams(nats_url: str, names: NatsNames) -> None:
    """Drop every stream (and the presence bucket) of a bench's deployment that exists."""
    import nats
    import nats.js.errors

    client = await nats.connect(nats_url)
    try:
        for stream in names.streams:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await client.jetstream().delete_stream(stream)
    finally:
        await client.close()
