"""``dast serve``: run the backend; ``dast token``: mint a bearer token for development.

With no options and no ``DAST_*`` environment this is the embedded backend on
127.0.0.1:50051 (SQLite under ``.dast/``, in-process bus). Options override the
environment (``DAST_LISTEN``, ``DAST_DATABASE_URL``, ``DAST_NATS_URL``, ``DAST_DATA_DIR``,
``DAST_METRICS_PORT``, ``DAST_SERVICES``, ``DAST_GAME_TARGET``); the composition root,
:mod:`services.compose`, puts the services together. With a database or NATS URL the
server refuses to start until ``DAST_TOKEN_KEYS`` (and the ``DAST_TOKEN_SIGNING_KEYS`` of
the services it runs) and ``DAST_SIGNING_KEY`` are set; the refusal says how to make them
(exit code 2). ``dast token`` signs with the operator's key: the embedded mode's, or the
``operator`` key of ``DAST_TOKEN_SIGNING_KEYS``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from services.platform.auth import Role, mint_token
from services.platform.config import load_settings
from services.platform.token_keys import OPERATOR, load_token_keys


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
    game_target: Annotated[
        str | None, typer.Option(help="The game service, when not in this process "
                                      "(host:port, or ipv4:host:port,host:port).")
    ] = None,
) -> None:
    """Serve dast over gRPC (embedded defaults; or a subset against NATS and PostgreSQL)."""
    from services.compose import run

    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "services": services, "listen": listen, "database_url": database_url,
            "nats_url": nats_url, "data_dir": data_dir, "metrics_port": metrics_port,
            "game_target": game_target,
        }.items()
        if value is not None
    }
    try:
        asyncio.run(run(load_settings(**overrides)))
    except ValueError as exc:  # unknown services, unsafe or unreadable secrets
        typer.echo(f"dast serve: {exc}", err=True)
        raise typer.Exit(2) from exc


def token(
    player_id: Annotated[str, typer.Argument(help="The player the token acts for.")],
    role: Annotated[Role, typer.Option(
        help="player, service, admin or referee (reads every log of a running match).")
    ] = Role.PLAYER,
    ttl_seconds: Annotated[int, typer.Option(help="Lifetime of the token.")] = 24 * 3600,
) -> None:
    """Print a bearer token signed with the operator's key (the embedded mode's, or the
    operator key of DAST_TOKEN_SIGNING_KEYS)."""
    try:
        settings = load_settings()
        keys = load_token_keys(settings.token_keys, settings.token_signing_keys, services=(),
                               embedded=settings.is_embedded(), data_dir=settings.data_dir,
                               operator=True, only_these=False)
    except ValueError as exc:
        typer.echo(f"dast token: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(mint_token(keys.signer(OPERATOR), player_id, role, ttl_seconds=ttl_seconds))
