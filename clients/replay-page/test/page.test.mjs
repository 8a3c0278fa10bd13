// The replay page in a real headless Chromium (the machine's package): it loads a sealed
// log, says "verified", steps to the end and shows the final scores the log records; a
// tampered log shows which check failed. DAST_SCREENSHOTS=1 also writes the screenshots of
// docs/images/ (a run without it writes them to a temporary folder only).
import test from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findEvent, golden, rechained, rows, sealer } from "../../verify-js/test/helpers.mjs";
import { CLIENTS_DIR, serve } from "./serve.mjs";

const IN_CI = (process.env.CI ?? "").toLowerCase() === "true";
const CHROMIUM = [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => p && existsSync(p));
const SHOTS = process.env.DAST_SCREENSHOTS === "1" ? join(CLIENTS_DIR, "..", "docs", "images") : mkdtempSync(join(tmpdir(), "replay-shots-"));

let chromium = null;
try {
  ({ chromium } = await import("playwright-core"));
} catch {
  chromium = null;
}
const missing = !CHROMIUM ? "Chromium is not installed (apt-get install chromium; .ci/run does)"
  : !chromium ? "playwright-core is not installed (make test runs npm ci in clients/replay-page)" : null;
if (missing && IN_CI) throw new Error(`${missing}; CI=true needs the browser test`);

test("the replay page verifies, replays and pinpoints a tampering", { skip: missing ?? false, timeout: 120_000 }, async (t) => {
  const logDir = mkdtempSync(join(tmpdir(), "replay-logs-"));
  const { publicKey, seal } = await sealer();
  const hokm = await seal(golden("hokm_4p"));
  writeFileSync(join(logDir, "hokm.jsonl"), hokm);
  writeFileSync(join(logDir, "hand.jsonl"), await seal(golden("hand_4p_partners")));
  const rigged = rows(hokm);
  let dealt = findEvent(rigged, "cardsDealt", 10);
  while (dealt.body.hands.length < 2) dealt = findEvent(rigged, "cardsDealt", dealt.index + 1);
  const [a, b] = [dealt.body.hands[0].cards, dealt.body.hands[1].cards];
  [a[0], b[0]] = [b[0], a[0]];
  const sealLine = hokm.trimEnd().split("\n").at(-1);
  writeFileSync(join(logDir, "rigged.jsonl"), (await rechained(rigged)) + sealLine + "\n");

  const server = await serve({ logDir });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  t.after(async () => {
    await browser.close();
    await server.close();
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const key = encodeURIComponent(Buffer.from(publicKey).toString("base64"));
  const open = async (name, extra = "") => {
    await page.goto(`${server.url}/replay-page/index.html?log=/logs/${name}.jsonl&key=${key}${extra}`);
    await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
  };

  // A sealed Hokm log: verified under the server's key, stepped to its end.
  await open("hokm");
  assert.equal(await page.textContent("#status"), "verified");
  assert.equal(await page.locator("#checks li.failed").count(), 0);
  const events = rows(hokm).length;
  assert.equal(await page.textContent("#position"), `event 1 of ${events}`);
  await page.click("#step-next");
  await page.click("#step-next");
  assert.equal(await page.textContent("#position"), `event 3 of ${events}`);
  await page.click("#step-last");
  assert.equal(await page.textContent("#position"), `event ${events} of ${events}`);
  assert.match(await page.textContent("#event-text"), /^Match over/);
  const final = rows(hokm).at(-1).event.hokm.matchEnded;
  const shown = await page.$$eval("#scores tr[data-seats]", (trs) => trs.map((tr) => [tr.dataset.seats, tr.querySelector(".score").textContent, tr.className]));
  assert.deepEqual(shown.map(([seats, score]) => [seats, Number(score)]),
    [["0,2", final.scores[0] ?? 0], ["1,3", final.scores[1] ?? 0]]);
  assert.deepEqual(shown.filter(([, , cls]) => cls === "winner").map(([seats]) => seats),
    [final.winners.includes(0) ? "0,2" : "1,3"]);
  assert.equal(await page.getAttribute("#scores", "data-final"), "true");
  // From a seat, only its own cards show; from above, every hand.
  await page.click("#step-first");
  await page.fill("#slider", "20");
  await page.selectOption("#viewpoint", "1");
  assert.ok((await page.locator(".seat[data-seat='1'] .card:not(.back)").count()) > 0);
  assert.equal(await page.locator(".seat[data-seat='0'] .card:not(.back)").count(), 0);
  await page.selectOption("#viewpoint", "above");
  assert.equal(await page.locator(".seat .card.back").count(), 0);
  await page.click("#step-last");
  await page.screenshot({ path: join(SHOTS, "replay-verified.png"), fullPage: true });

  // A Hand log with partnerships: final totals as the log records them.
  await open("hand", "&seat=above");
  assert.equal(await page.textContent("#status"), "verified");
  await page.keyboard.press("End");
  const totals = rows(golden("hand_4p_partners")).at(-1).event.hand.matchEnded.totals;
  const handScores = await page.$$eval("#scores tr[data-seats] .score", (cells) => cells.map((c) => Number(c.textContent)));
  assert.deepEqual(handScores, [totals[0], totals[1]]);

  // A rigged deal, re-chained by the forger: the deals and the seal give it away.
  await open("rigged");
  assert.match(await page.textContent("#status"), /^not verified: deals, seal failed$/);
  const failedChecks = await page.$$eval("#checks li.failed", (items) => items.map((li) => [li.dataset.check, li.textContent]));
  assert.deepEqual(failedChecks.map(([id]) => id), ["deals", "seal"]);
  assert.match(failedChecks[0][1], new RegExp(`seq ${dealt.index + 1}: the log's cards_dealt differs from the deal of the seed`));
  await page.click("#step-last");
  await page.screenshot({ path: join(SHOTS, "replay-tampered.png"), fullPage: true });
  assert.deepEqual(errors, []);
});
