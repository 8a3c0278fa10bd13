"""``dast export GAME_ID`` and ``dast signing-key``: fetch what ``dast verify`` checks.

``export`` writes a game's log as JSON Lines (:mod:`engine.core.logformat`), sealed by the
server once the match is over; ``signing-key`` prints the server's public key in base64,
the form ``dast verify --public-key`` takes. Both call a running server with a bearer token
(``--token`` or ``DAST_TOKEN``): any player may export a finished match, admins any match.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Annotated

import grpc
import typer

from dast.v1 import game_pb2, game_pb2_grpc
from engine.core.logformat import dump_jsonl

_Server = Annotated[str, typer.Option(help="host:port of the dast server.")]
_Token = Annotated[str, typer.Option(envvar="DAST_TOKEN", help="Bearer token (or DAST_TOKEN).")]


async def _call(server: str, token: str, method: str, request: object) -> object:
    async with grpc.aio.insecure_channel(server) as channel:
        stub = game_pb2_grpc.GameServiceStub(channel)
        call = getattr(stub, method)
        return await call(request, metadata=(("authorization", f"Bearer {token}"),), timeout=30)


def _run(server: str, token: str, method: str, request: object) -> object:
    try:
        return asyncio.run(_call(server, token, method, request))
    except grpc.aio.AioRpcError as error:
        typer.echo(f"dast: {method} failed: {error.code().name}: {error.details()}", err=True)
        raise typer.Exit(1) from error


def export(
    game_id: Annotated[str, typer.Argument(help="The game to export.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the log.")],
    token: _Token,
    server: _Server = "127.0.0.1:50051",
) -> None:
    """Write a game's log (sealed once the match is over) as JSON Lines for dast verify."""
    reply = _run(server, token, "ExportLog", game_pb2.ExportLogRequest(game_id=game_id))
    assert isinstance(reply, game_pb2.ExportLogResponse)
    seal = reply.seal if reply.HasField("seal") else None
    output.write_text(dump_jsonl(reply.entries, seal), encoding="utf-8")
    state = "sealed" if seal is not None else "not sealed: the match is not over"
    typer.echo(f"{output}: {len(reply.entries)} events, {state}")


def signing_key(token: _Token, server: _Server = "127.0.0.1:50051") -> None:
    """Print the server's log-signing public key (base64), for dast verify --public-key."""
    reply = _run(server, token, "GetSigningKey", game_pb2.GetSigningKeyRequest())
    assert isinstance(reply, game_pb2.GetSigningKeyResponse)
    typer.echo(base64.b64encode(reply.public_key).decode())
