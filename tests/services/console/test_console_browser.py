"""The console in headless Chromium (the machine's own, driven by Playwright without a
browser download), over a whole stack playing matches: an operator signs in, sees the
overview's live numbers, steps through a game's replay, opens a report beside its hand,
bans a player from their page and sees a bot take their seat, and watches a small
tournament's rounds fill in. Each page is photographed (``DAST_CONSOLE_SCREENSHOTS``: the
folder; ``make console-screenshots`` writes docs/images/console-*.png)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from playwright.async_api import Page, async_playwright

from dast.v1 import (
    common_pb2,
    game_pb2,
    lobby_pb2,
    reports_pb2,
    reports_pb2_grpc,
    tournament_pb2,
)
from services.console.server import ConsoleServer
from services.platform.auth import Role
from tests.e2e.helpers import Guest
from tests.e2e.test_tournament import Host
from tests.services.console.client import OPERATOR_ID, console_stack
from tests.support.tokens import token

CHROMIUM = Path(os.environ.get("DAST_CHROMIUM", "/usr/bin/chromium"))
pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                       reason=f"no Chromium at {CHROMIUM} (.ci/run installs Debian's)"),
]
WAIT_SECONDS = 90.0


async def _reload_until(page: Page, check: object, seconds: float = WAIT_SECONDS) -> None:
    """Reload ``page`` until ``check()`` (an async predicate on it) holds."""
    async with asyncio.timeout(seconds):
        while not await check():  # type: ignore[operator]
            await asyncio.sleep(0.5)
            await page.reload()


async def _number(page: Page, selector: str) -> float:
    text = (await page.locator(selector).inner_text()).strip()
    return float(text) if re.fullmatch(r"[0-9.]+", text) else -1.0


class Shots:
    """Where the pages' photographs go."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    async def take(self, page: Page, name: str) -> None:
        path = self.folder / f"console-{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000, path


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    folder = os.environ.get("DAST_CONSOLE_SCREENSHOTS")
    return Shots(Path(folder) if folder else tmp_path / "shots")


@contextlib.asynccontextmanager
async def _served_page(app: object) -> AsyncIterator[tuple[str, Page]]:
    """The console served over HTTP, and a page of headless Chromium."""
    server = ConsoleServer(app, "127.0.0.1:0")  # type: ignore[arg-type]
    await server.start()
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True,
                args=["--no-sandbox", "--disable-gpu"])
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                yield f"http://127.0.0.1:{server.port}", page
            finally:
                await browser.close()
    finally:
        await server.stop()


async def test_an_operator_runs_the_console_in_a_browser(shots: Shots) -> None:
    assert shutil.which(str(CHROMIUM)) or CHROMIUM.exists()
    async with console_stack(bots=True, timers=False, tournament_sweep_seconds=0.5) as console, \
            grpc.aio.insecure_channel(console.run.address) as channel:
        # Two people at a table of Hokm with two bots, each holding their game's stream.
        rude = await Guest.sign_in_with_accounts(channel, "browser-rude", "Kaveh")
        kind = await Guest.sign_in_with_accounts(channel, "browser-kind", "Mina")
        table = (await rude.call("CreateTable", lobby_pb2.CreateTableRequest(
            settings=lobby_pb2.TableSettings(game_type=common_pb2.GAME_TYPE_HOKM)))).table
        await kind.call("JoinTable", lobby_pb2.JoinTableRequest(table_id=table.table_id,
                                                                seat=1))
        for seat in (2, 3):
            await rude.call("AddBot", lobby_pb2.AddBotRequest(
                table_id=table.table_id, seat=seat, level=lobby_pb2.BOT_LEVEL_RANDOM))
        game_id = (await rude.call("StartGame", lobby_pb2.StartGameRequest(
            table_id=table.table_id))).table.game_id
        streams = [guest.game.Subscribe(game_pb2.SubscribeRequest(game_id=game_id),
                                        metadata=guest.metadata) for guest in (rude, kind)]
        for stream in streams:
            assert await stream.read() is not grpc.aio.EOF
        reported = await reports_pb2_grpc.ReportServiceStub(channel).ReportPlayer(
            reports_pb2.ReportPlayerRequest(
                game_id=game_id, player_id=rude.player_id, seq=2,
                category=reports_pb2.REPORT_CATEGORY_ABUSIVE_CHAT,
                note="rude <b>words</b> at the table"), metadata=kind.metadata)
        # A small Swiss tournament of bots, started once the operator watches it.
        host = Host.on(channel)
        created = await host.call("CreateTournament", tournament_pb2.CreateTournamentRequest(
            settings=tournament_pb2.TournamentSettings(
                name="Friday Swiss", game_type=common_pb2.GAME_TYPE_HOKM,
                format=tournament_pb2.TOURNAMENT_FORMAT_SWISS, rounds=3, target_score=2,
                bot_level="random")))
        tournament_id = created.tournament.tournament_id
        for _ in range(8):
            await host.call("RegisterPlayer", tournament_pb2.RegisterPlayerRequest(
                tournament_id=tournament_id, bot_level="random"))

        async with _served_page(console.app) as (base, page):
            # Sign in with an operator's admin token.
            await page.goto(f"{base}/")
            assert page.url == f"{base}/sign-in"
            await shots.take(page, "sign-in")
            await page.fill("textarea[name=token]", token(OPERATOR_ID, Role.ADMIN))
            await page.click("button[type=submit]")
            await page.wait_for_url(f"{base}/")

            # The tournament, before it starts: no round yet.
            await page.goto(f"{base}/tournaments")
            await page.click(f"a[href='/tournaments/{tournament_id}']")
            rounds_seen = [await page.locator("#bracket .round").count()]
            assert await page.inner_text("#tournament-status") == "registering"
            await host.call("StartTournament", tournament_pb2.StartTournamentRequest(
                tournament_id=tournament_id))
            await page.goto(f"{base}/")

            # The overview's live numbers.
            async def busy() -> bool:
                return (await _number(page, "#live-games") >= 1
                        and await _number(page, "#players") >= 2
                        and await _number(page, "#commands-per-second") > 0
                        and await _number(page, "#open-streams") >= 2)

            await _reload_until(page, busy)
            assert await page.locator("#services tr.ok").count() == 5
            await shots.take(page, "overview")

            # A game, step by step.
            await page.goto(f"{base}/tables?q={rude.player_id}")
            await shots.take(page, "tables")
            await page.click("a.game-link")
            await page.wait_for_selector("#frame-position")
            assert (await page.inner_text("#frame-position")).startswith("event 1 of")
            for step in (2, 3):
                await page.click("#next-frame")
                await page.wait_for_url(re.compile(rf"/frames/{step}$"))
                assert (await page.inner_text("#frame-position")).startswith(
                    f"event {step} of")
            await page.click("#previous-frame")
            await page.wait_for_url(re.compile(r"/frames/2$"))
            await shots.take(page, "replay")

            # The report, beside the hand at its seq.
            await page.goto(f"{base}/reports")
            await page.click(f"a[href='/reports/{reported.report_id}']")
            await page.wait_for_selector("#reported-hand")
            assert await page.inner_text("#report-seq") == "2"
            assert (await page.inner_text("#frame-position")).startswith("event 2 of")
            assert await page.inner_text("#report-note") == "rude <b>words</b> at the table"
            await shots.take(page, "report")

            # Ban the reported player from their page; a bot takes their seat.
            await page.goto(f"{base}/players")
            await page.fill("input[name=q]", rude.player_id)
            await page.click("form.filters button")
            await page.click(f"#found-players a[href='/players/{rude.player_id}']")
            await page.fill("input[name=reason]", "abusive chat (report "
                            f"#{reported.report_id})")
            await page.click("#ban-player")
            await page.wait_for_selector("#notice")
            assert (await page.inner_text("#ban-state")).startswith("Banned until")
            await shots.take(page, "player")
            await page.goto(f"{base}/tables?q={rude.player_id}")

            async def seat_to_bot() -> bool:
                return "Kaveh (bot)" in await page.inner_text("#tables")

            await _reload_until(page, seat_to_bot)
            # The other person plays the match out, so that it is rated (the players page
            # charts the ratings).
            played_out = asyncio.create_task(kind.play_to_the_end(game_id, seconds=150))

            # The tournament's rounds fill in as it plays.
            await page.goto(f"{base}/tournaments/{tournament_id}")

            async def finished() -> bool:
                rounds_seen.append(await page.locator("#bracket .round").count())
                return (await page.inner_text("#tournament-status")) == "finished"

            await _reload_until(page, finished, seconds=150)
            assert rounds_seen[0] == 0 and rounds_seen[-1] == 3, rounds_seen
            assert await page.locator("#bracket .round-table").count() == 3 * 2
            assert await page.locator("#standings tbody tr").count() == 8
            await shots.take(page, "tournament")

            # A finished match audits as verified, and its log exports sealed.
            await page.click("#bracket .round-table a")
            await page.click("text=Audit this game")
            assert (await page.inner_text("#audit-verdict")).startswith("Verified")
            await shots.take(page, "audit")
            exported = await page.request.get(
                page.url.removesuffix("/audit") + "/export")
            assert exported.status == 200
            assert '"seal"' in (await exported.text()).splitlines()[-1]
            await played_out
            await page.goto(f"{base}/players")

            async def rated() -> bool:
                return await page.locator("figure.chart rect.bar").count() > 0

            await _reload_until(page, rated)
            found = re.search(r"(\d+) rated players", await page.inner_text("main"))
            assert found is not None and int(found.group(1)) >= 2  # the person, a bot level
            await shots.take(page, "players")
        for stream in streams:
            stream.cancel()
