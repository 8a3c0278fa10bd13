"""The console's routes: only a signed-in operator reaches any of them (every route of the
app is tried, enumerated from the app itself), forms need the session's CSRF token, the
session cookie is HttpOnly and SameSite=Strict and ends with the token, hostile input gets a
clear error page, and a ban from a player's page is the operator's own action in the
moderation log."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from dast.v1 import moderation_pb2, moderation_pb2_grpc
from services.console.app import OPEN_PATHS
from services.console.sessions import SESSION_COOKIE
from services.platform.auth import Role, TokenSigner, mint_token
from tests.e2e.helpers import Guest
from tests.services.console.client import (
    OPERATOR_ID,
    console_stack,
    guarded_routes,
    operator,
    sign_in,
)
from tests.support.tokens import bearer, token

pytestmark = pytest.mark.timeout(120)


async def test_every_route_refuses_anyone_not_signed_in_as_an_operator() -> None:
    async with console_stack(bots=False, timers=False) as console:
        routes = guarded_routes(console.app)
        # The enumeration finds the pages, the API and the forms.
        assert ("GET", "/") in routes and ("GET", "/api/overview") in routes
        assert ("POST", "/players/1/ban") in routes and ("POST", "/sign-out") in routes
        assert {path for _, path in routes}.isdisjoint(OPEN_PATHS)
        async with console.client() as nobody, console.client() as player, \
                console.client() as service, console.client() as forged:
            refused = await sign_in(player, token("p-1", Role.PLAYER))
            assert refused.status_code == 401 and "player token" in refused.text
            assert SESSION_COOKIE not in player.cookies
            refused = await sign_in(service, token("lobby", Role.SERVICE))
            assert refused.status_code == 401 and "service token" in refused.text
            # An admin token signed with a key the deployment does not trust.
            stranger = TokenSigner.generate("operator", "stranger-1")
            refused = await sign_in(forged, mint_token(stranger, "mallory", Role.ADMIN))
            assert refused.status_code == 401 and "does not trust" in refused.text
            forged.cookies.set(SESSION_COOKIE, "made-up-session-id")
            for client in (nobody, player, service, forged):
                for method, path in routes:
                    reply = await client.request(method, path, data={"csrf": "x"})
                    if method == "POST" or path.startswith("/api/"):
                        assert reply.status_code == 401, (method, path)
                    else:
                        assert reply.status_code == 303, (method, path)
                        assert reply.headers["location"] == "/sign-in"


async def test_a_sign_in_form_not_from_the_console_is_refused() -> None:
    async with console_stack(bots=False, timers=False) as console, \
            console.client() as client:
        reply = await client.post("/sign-in", data={"nonce": "guess",
                                                    "token": token("op", Role.ADMIN)})
        assert reply.status_code == 403
        assert SESSION_COOKIE not in client.cookies


async def test_the_session_cookie_is_http_only_strict_and_ends_with_the_token() -> None:
    async with console_stack(bots=False, timers=False) as console, \
            console.client() as client:
        page = await client.get("/sign-in")
        nonce = page.text.split('name="nonce" value="')[1].split('"')[0]
        reply = await client.post("/sign-in", data={
            "nonce": nonce, "token": token(OPERATOR_ID, Role.ADMIN, ttl_seconds=600)})
        assert reply.status_code == 303
        cookie = next(value for key, value in reply.headers.multi_items()
                      if key == "set-cookie" and value.startswith(SESSION_COOKIE))
        attributes = {part.strip().split("=")[0].lower(): part.strip()
                      for part in cookie.split(";")}
        assert "httponly" in attributes
        assert attributes["samesite"].lower() == "samesite=strict"
        assert 0 < int(attributes["max-age"].split("=")[1]) <= 600
        assert (await client.get("/")).status_code == 200
        # Signing out needs the form's CSRF token; then the session is gone.
        assert (await client.post("/sign-out", data={"csrf": "nope"})).status_code == 403
        csrf = (await client.get("/")).text.split('name="csrf" value="')[1].split('"')[0]
        assert (await client.post("/sign-out", data={"csrf": csrf})).status_code == 303
        client.cookies.set(SESSION_COOKIE, cookie.split(";")[0].split("=", 1)[1])
        assert (await client.get("/")).status_code == 303


async def test_an_expired_token_s_session_ends() -> None:
    async with console_stack(bots=False, timers=False) as console, \
            console.client() as client:
        short = token(OPERATOR_ID, Role.ADMIN, ttl_seconds=2)
        assert (await sign_in(client, short)).status_code == 303
        deadline = time.time() + 10
        while (await client.get("/api/overview")).status_code == 200:
            assert time.time() < deadline, "the session outlived its token"
            await asyncio.sleep(0.5)
        assert (await client.get("/tables")).status_code == 303


HOSTILE = [
    ("/tables?status=<script>alert(1)</script>", 400, "status: one of all, waiting, playing"),
    ("/tables?game=%00", 400, "game: one of"),
    ("/tables?q=" + "x" * 65, 400, "at most 64"),
    ("/tables?q=%01", 400, "control characters"),
    ("/games/g/frames/-1", 400, "seq: a whole number"),
    ("/games/g/frames/99999999999999999999999", 400, "seq: from 1"),
    ("/games/" + "g" * 200 + "/frames/1", 400, "game id: 1 to 128"),
    ("/games/no-such-game/frames/1", 404, "not_found"),
    ("/games/no-such-game/audit", 404, "not_found"),
    ("/games/no-such-game/export", 404, "not_found"),
    ("/reports/0", 400, "report id: from 1"),
    ("/reports/abc", 400, "report id: a whole number"),
    ("/reports/424242", 404, "not_found"),
    ("/reports?after=%E2%91%A0", 400, "after: a whole number"),
    ("/tournaments?status=running%27", 400, "status: one of"),
    ("/tournaments/no-such-tournament", 404, "not_found"),
    ("/players?q=%3Cb%3Ebold%3C%2Fb%3E", 200, "&lt;b&gt;bold&lt;/b&gt;"),
    ("/no/such/page", 404, "no such page"),
]


async def test_hostile_input_gets_an_error_page_that_says_why() -> None:
    async with console_stack(bots=False, timers=False) as console, \
            console.client() as client:
        await operator(client)
        for path, status, says in HOSTILE:
            reply = await client.get(path)
            assert reply.status_code == status, (path, reply.status_code, reply.text[-500:])
            assert says in reply.text, (path, reply.text[-800:])
            assert "Traceback" not in reply.text and "<b>bold" not in reply.text
        csrf = (await client.get("/")).text.split('name="csrf" value="')[1].split('"')[0]
        for fields, says in [({"reason": "", "hours": "1"}, "needs a reason"),
                             ({"reason": "x", "hours": "soon"}, "hours: a whole number"),
                             ({"reason": "x", "hours": "99999999"}, "hours: from 0")]:
            reply = await client.post("/players/p-1/ban", data={"csrf": csrf, **fields})
            assert reply.status_code == 400 and says in reply.text, reply.text[-500:]


async def test_a_ban_from_the_console_is_the_operator_s_action_and_is_lifted_again() -> None:
    async with console_stack(bots=False, timers=False) as console, \
            grpc.aio.insecure_channel(console.run.address) as channel, \
            console.client() as client:
        guest = await Guest.sign_in_with_accounts(channel, "console-ban-1", "Roya")
        csrf = await operator(client)
        found = await client.get("/players", params={"q": guest.player_id})
        assert f"/players/{guest.player_id}" in found.text
        page = await client.get(f"/players/{guest.player_id}")
        assert page.status_code == 200 and "Not banned." in page.text
        reply = await client.post(f"/players/{guest.player_id}/ban",
                                  data={"csrf": csrf, "reason": "abuse <at> table",
                                        "hours": "2"})
        assert reply.status_code == 303
        page = await client.get(reply.headers["location"])
        assert "Banned until" in page.text and "abuse &lt;at&gt; table" in page.text
        moderation = moderation_pb2_grpc.ModerationServiceStub(channel)
        log = await moderation.ListAdminActions(moderation_pb2.ListAdminActionsRequest(),
                                                metadata=bearer("auditor", Role.ADMIN))
        bans = [entry for entry in log.entries if entry.action == "ban"]
        assert [(entry.actor, entry.subject) for entry in bans] == [
            (OPERATOR_ID, guest.player_id)]
        reply = await client.post(f"/players/{guest.player_id}/lift",
                                  data={"csrf": csrf, "note": "appeal upheld"})
        assert reply.status_code == 303
        assert "Not banned." in (await client.get(reply.headers["location"])).text
