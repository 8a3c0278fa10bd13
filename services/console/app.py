"""The console's web application: its routes, who may open them, and its error pages.

Every route but the sign-in page, the static files and the liveness probe needs a signed-in
operator (:data:`OPEN_PATHS`): pages send anyone else to the sign-in page, the JSON API and
the forms answer 401 (403 for a form without its CSRF token). A service's refusal or a bad
query string becomes an error page that says what went wrong, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import grpc
import jinja2
import structlog
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from services.console.backend import Backend
from services.console.pages import BadInput, Pages, quote_path, short_player
from services.console.sessions import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    OperatorSession,
    Sessions,
    SignInRefused,
)
from services.platform.auth import TokenKeyRing

HERE: Final = Path(__file__).parent
OPEN_PATHS: Final = frozenset({"/sign-in", "/healthz", "/static"})
"""The routes anyone may open (the sign-in form, the probe, the style sheet)."""
SAMPLE_SECONDS: Final = 15.0
HTTP_OF_GRPC: Final = {
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.FAILED_PRECONDITION: 409, grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429, grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
log = structlog.get_logger(component="console")


@dataclass
class Console:
    """What the routes share: the services, the sessions, the templates, the figures kept
    over the last hour."""

    backend: Backend
    sessions: Sessions
    templates: Jinja2Templates
    pages: Pages = field(init=False)

    def __post_init__(self) -> None:
        self.pages = Pages(self.backend, self.templates)


Handler = Callable[[Request, OperatorSession], Awaitable[Response]]


def build_app(backend: Backend, ring: TokenKeyRing, *, sample_seconds: float = SAMPLE_SECONDS,
              now: Callable[[], float] = time.time) -> Starlette:
    """The console over ``backend``, signing operators in with tokens ``ring`` verifies."""
    # Every value a template shows is escaped (hostile names, notes and ids included).
    templates = Jinja2Templates(env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True))
    templates.env.filters["q"] = quote_path
    templates.env.globals["short"] = short_player
    console = Console(backend, Sessions(ring, now=now), templates)

    def page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            session = console.sessions.get(request.cookies.get(SESSION_COOKIE))
            if session is None:
                return RedirectResponse("/sign-in", status_code=303)
            return await _answer(console, request, session, handler)
        return run

    def api(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            session = console.sessions.get(request.cookies.get(SESSION_COOKIE))
            if session is None:
                return JSONResponse({"error": "sign in to the console first"}, 401)
            return await _answer(console, request, session, handler, as_json=True)
        return run

    def form(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            session = console.sessions.get(request.cookies.get(SESSION_COOKIE))
            if session is None:
                return PlainTextResponse("sign in to the console first", 401)
            sent = (await request.form()).get("csrf")
            if not session.csrf_matches(sent):
                return PlainTextResponse(
                    "this form is not the console's own (its CSRF token is missing or "
                    "stale): open the page again and resend it", 403)
            return await _answer(console, request, session, handler)
        return run

    routes = [
        Route("/sign-in", functools.partial(sign_in_page, console), methods=["GET"]),
        Route("/sign-in", functools.partial(sign_in, console), methods=["POST"]),
        Route("/healthz", lambda request: PlainTextResponse("ok"), methods=["GET"]),
        Route("/sign-out", form(lambda request, session: sign_out(console, session)),
              methods=["POST"]),
        Route("/", page(console.pages.overview), methods=["GET"]),
        Route("/api/overview", api(console.pages.overview_json), methods=["GET"]),
        Route("/tables", page(console.pages.tables), methods=["GET"]),
        Route("/games/{game_id}", page(console.pages.game), methods=["GET"]),
        Route("/games/{game_id}/frames/{seq}", page(console.pages.frame), methods=["GET"]),
        Route("/games/{game_id}/audit", page(console.pages.audit), methods=["GET"]),
        Route("/games/{game_id}/export", page(console.pages.export), methods=["GET"]),
        Route("/players", page(console.pages.players), methods=["GET"]),
        Route("/players/{player_id}", page(console.pages.player), methods=["GET"]),
        Route("/players/{player_id}/ban", form(console.pages.ban), methods=["POST"]),
        Route("/players/{player_id}/lift", form(console.pages.lift), methods=["POST"]),
        Route("/reports", page(console.pages.reports), methods=["GET"]),
        Route("/reports/{report_id}", page(console.pages.report), methods=["GET"]),
        Route("/tournaments", page(console.pages.tournaments), methods=["GET"]),
        Route("/tournaments/{tournament_id}", page(console.pages.tournament),
              methods=["GET"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sampling = asyncio.create_task(_sample_forever(console, sample_seconds))
        try:
            yield
        finally:
            sampling.cancel()
            with contextlib.suppress(BaseException):
                await sampling
            await backend.close()

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        text = "no such page" if status == 404 else "this request cannot be served"
        return _error_page(console, request, status, text)

    async def failed(request: Request, exc: Exception) -> Response:
        log.exception("console_error", path=request.url.path)
        return _error_page(console, request, 500, "the console failed to make this page; "
                           "the error is in its log")

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: not_found, Exception: failed})
    app.state.console = console
    return app


async def _answer(console: Console, request: Request, session: OperatorSession,
                  handler: Handler, *, as_json: bool = False) -> Response:
    """The handler's response, or the error page (JSON) of what stopped it."""
    request.state.session = session
    try:
        return await handler(request, session)
    except BadInput as error:
        return _failure(console, request, 400, str(error), as_json)
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            # The operator's token was revoked or expired: sign in again.
            console.sessions.sign_out(session.session_id)
            if as_json:
                return JSONResponse({"error": error.details() or "sign in again"}, 401)
            return RedirectResponse("/sign-in", status_code=303)
        status = HTTP_OF_GRPC.get(error.code(), 502)
        text = f"{error.code().name.lower()}: {error.details() or 'no details'}"
        return _failure(console, request, status, text, as_json)


def _failure(console: Console, request: Request, status: int, text: str,
             as_json: bool) -> Response:
    if as_json:
        return JSONResponse({"error": text}, status)
    return _error_page(console, request, status, text)


def _error_page(console: Console, request: Request, status: int, text: str) -> Response:
    session = getattr(request.state, "session", None)
    return console.templates.TemplateResponse(
        request, "error.html", {"status": status, "message": text, "session": session},
        status_code=status)


async def sign_in_page(console: Console, request: Request, *, message: str = "",
                       status: int = 200) -> Response:
    """The sign-in form, with a fresh pre-session token it must post back."""
    nonce = secrets.token_urlsafe(24)
    response = console.templates.TemplateResponse(
        request, "sign_in.html", {"nonce": nonce, "message": message, "session": None},
        status_code=status)
    response.set_cookie(SIGN_IN_COOKIE, nonce, max_age=900, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/sign-in")
    return response


async def sign_in(console: Console, request: Request) -> Response:
    """Check the posted admin token and open a session for it."""
    fields = await request.form()
    nonce, cookie = fields.get("nonce"), request.cookies.get(SIGN_IN_COOKIE)
    if not (isinstance(nonce, str) and cookie and hmac.compare_digest(nonce, cookie)):
        return await sign_in_page(console, request, status=403, message=(
            "the sign-in form was stale or not the console's own: try again"))
    token = fields.get("token")
    try:
        session = console.sessions.sign_in(token if isinstance(token, str) else "")
    except SignInRefused as refused:
        return await sign_in_page(console, request, message=str(refused), status=401)
    log.info("operator_signed_in", operator=session.identity.player_id)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(SESSION_COOKIE, session.session_id,
                        max_age=console.sessions.seconds_left(session), httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")
    response.delete_cookie(SIGN_IN_COOKIE, path="/sign-in")
    return response


async def sign_out(console: Console, session: OperatorSession) -> Response:
    """End the session."""
    console.sessions.sign_out(session.session_id)
    response = RedirectResponse("/sign-in", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


async def _sample_forever(console: Console, seconds: float) -> None:
    """Keep the overview's figures of the last hour, read with a signed-in operator's token
    (the console has none of its own: without an operator signed in it samples nothing)."""
    while True:
        await asyncio.sleep(seconds)
        token = console.sessions.any_token()
        if token is None:
            continue
        try:
            await console.pages.sample(token)
        except grpc.aio.AioRpcError as error:
            log.info("console_sample_failed", code=error.code().name)
