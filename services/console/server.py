"""The console's HTTP server: uvicorn serving the app on the event loop of its process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Final

import uvicorn
from starlette.applications import Starlette

START_SECONDS: Final = 30.0


class _QuietServer(uvicorn.Server):
    """uvicorn leaving the process's signals alone: the process's own handlers stop it
    (services.compose.run), and through it the console."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ConsoleServer:
    """The console listening at ``host:port`` (port 0: any free port, read :attr:`port`)."""

    def __init__(self, app: Starlette, listen: str) -> None:
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"DAST_CONSOLE_LISTEN: {listen!r} is not host:port")
        self._server = _QuietServer(uvicorn.Config(
            app, host=host.strip("[]"), port=int(port), log_level="warning", access_log=False,
            lifespan="on", proxy_headers=False, server_header=False))
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen; return once the server accepts connections.

        :raises RuntimeError: when it could not start (the port is taken, …).
        """
        self._task = asyncio.create_task(self._server.serve(), name="console")
        async with asyncio.timeout(START_SECONDS):
            while not self._server.started:
                if self._task.done():
                    raise RuntimeError("the console's HTTP server did not start "
                                       "(is DAST_CONSOLE_LISTEN's port taken?)")
                await asyncio.sleep(0.02)

    @property
    def port(self) -> int:
        """The port it listens on."""
        sockets = self._server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop serving and wait for it."""
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task
