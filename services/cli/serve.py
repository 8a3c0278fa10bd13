"""``dast serve``: run the backend; ``dast token``: mint a bearer token for development.

With no options and no ``DAST_*`` environment this is the embedded backend on
127.0.0.1:50051 (SQLite under ``.dast/``, in-process bus). Options override the
environment (``DAST_LISTEN``, ``DAST_DATABASE_URL``, ``DAST_NATS_URL``, ``DAST_DATA_DIR``,
``DAST_METRICS_PORT``, ``DAST_SERVICES``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from services.platform.auth import Role, mint_token
from services.platform.config import Settings


def serve(
    services: Annotated[
        str | None, typer.Option(help="Comma-separated services to run (all, game, …).")
    ] = None,
    listen: Annotated[str | None, typer.Option(help="host:port of the gRPC server.")] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Event store URL (postgresql+psycopg://…).")
    ] = None,
    nats_url: Annotated[str | None, typer.Option(help="NATS URL (nats://…).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Where the embedded SQLite store lives.")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Port of the Prometheus /metrics endpoint.")
    ] = None,
) -> None:
    """Serve dast over gRPC (embedded defaults; or a subset against NATS and PostgreSQL)."""
    from services.game.runner import run

    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "services": services, "listen": listen, "database_url": database_url,
            "nats_url": nats_url, "data_dir": data_dir, "metrics_port": metrics_port,
        }.items()
        if value is not None
    }
    settings = Settings(**overrides)
    try:
        asyncio.run(run(settings))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def token(
    player_id: Annotated[str, typer.Argument(help="The player the token acts for.")],
    role: Annotated[Role, typer.Option(help="player, service or admin.")] = Role.PLAYER,
    ttl_seconds: Annotated[int, typer.Option(help="Lifetime of the token.")] = 24 * 3600,
) -> None:
    """Print a bearer token signed with DAST_JWT_SECRET (development and tests)."""
    settings = Settings()
    typer.echo(mint_token(settings.jwt_secret, player_id, role, ttl_seconds=ttl_seconds))
