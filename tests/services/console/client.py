"""The console over a whole test stack, and an HTTP client signed in to it (or not): what the
console's route tests and its browser test share."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Route

from services.compose import Running
from services.console.app import OPEN_PATHS, build_app
from services.console.backend import Backend, ConsoleTargets
from services.platform.auth import Role
from tests.e2e.helpers import stack
from tests.support.tokens import TEST_KEYS, token

OPERATOR_ID = "operator-ana"
NONCE = re.compile(r'name="nonce" value="([^"]+)"')
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class ConsoleStack:
    """A test stack and the console app over it."""

    run: Running
    app: Starlette

    def client(self) -> httpx.AsyncClient:
        """A fresh HTTP client of the app (no cookies)."""
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app),
                                 base_url="http://console.test", follow_redirects=False)


@contextlib.asynccontextmanager
async def console_stack(**options: Any) -> AsyncIterator[ConsoleStack]:
    """:func:`tests.e2e.helpers.stack` with the console app over it."""
    async with stack(**options) as run:
        backend = Backend(ConsoleTargets.parse("", default=run.address))
        try:
            yield ConsoleStack(run, build_app(backend, TEST_KEYS.ring))
        finally:
            await backend.close()


async def sign_in(client: httpx.AsyncClient, bearer_token: str) -> httpx.Response:
    """Post the sign-in form with ``bearer_token`` (the client keeps the cookies)."""
    page = await client.get("/sign-in")
    found = NONCE.search(page.text)
    assert found is not None
    return await client.post("/sign-in", data={"nonce": found.group(1),
                                               "token": bearer_token})


async def operator(client: httpx.AsyncClient, player_id: str = OPERATOR_ID) -> str:
    """Sign ``client`` in as an operator; the session's CSRF token."""
    reply = await sign_in(client, token(player_id, Role.ADMIN))
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    page = await client.get("/")
    assert page.status_code == 200, page.text
    found = CSRF.search(page.text)
    assert found is not None
    return found.group(1)


def guarded_routes(app: Starlette) -> list[tuple[str, str]]:
    """Every (method, path) of the app that needs an operator, enumerated from the app's
    own routes (a new route is in it without anyone listing it), path parameters filled."""
    found: list[tuple[str, str]] = []
    for route in app.routes:
        if not isinstance(route, Route) or route.path in OPEN_PATHS:
            continue
        path = re.sub(r"\{[^}]+\}", "1", route.path)
        found.extend((method, path) for method in sorted(route.methods or ())
                     if method != "HEAD")
    return found
