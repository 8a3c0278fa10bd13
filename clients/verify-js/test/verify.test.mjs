import test from "node:test";
import assert from "node:assert/strict";
import { GOLDEN, findEvent, golden, rechained, rows, sealer } from "./helpers.mjs";
import { verifyLog } from "../src/verify.js";
import { readReceipts } from "../src/logfile.js";
import { toBase64 } from "../src/bytes.js";

const failed = (report) => Object.fromEntries(report.checks.filter((c) => !c.ok).map((c) => [c.id, c.problem]));

for (const name of GOLDEN) {
  test(`the engine's golden log ${name} verifies`, async () => {
    const report = await verifyLog(golden(name), { unsealed: true });
    assert.deepEqual(failed(report), {});
    assert.equal(report.game, name.split("_")[0]);
    assert.ok(report.ok);
  });
}

test("a sealed log verifies under its key and fails under another", async () => {
  const { publicKey, seal } = await sealer();
  const other = await sealer();
  const text = await seal(golden("hokm_4p"));
  const trusted = await verifyLog(text, { publicKey });
  assert.ok(trusted.ok, JSON.stringify(failed(trusted)));
  assert.deepEqual(trusted.warnings, []);
  const fromFile = await verifyLog(text);
  assert.ok(fromFile.ok);
  assert.match(fromFile.warnings[0], /taken from the file itself/);
  const untrusted = await verifyLog(text, { publicKey: other.publicKey });
  assert.deepEqual(Object.keys(failed(untrusted)), ["seal"]);
  assert.equal(untrusted.checks.find((c) => c.id === "seal").code, "seal_untrusted_key");
});

test("each way a seal can be wrong has its own code", async () => {
  const { seal } = await sealer();
  const sealed = (await seal(golden("hand_2p"))).trimEnd().split("\n");
  const edit = async (change) => {
    const line = JSON.parse(sealed.at(-1));
    change(line.seal);
    const report = await verifyLog([...sealed.slice(0, -1), JSON.stringify(line)].join("\n"));
    return report.checks.find((c) => c.id === "seal").code;
  };
  assert.equal(await edit((s) => { s.signature = toBase64(new Uint8Array(64)); }), "seal_bad_signature");
  assert.equal(await edit((s) => { s.gameId = "another-game"; }), "seal_bad_signature");
  assert.equal(await edit((s) => { s.seq = "3"; }), "seal_wrong_head");
  assert.equal(await edit((s) => { s.publicKey = toBase64(new Uint8Array(31)); }), "seal_malformed");
  assert.equal(await edit((s) => { s.publicKey = toBase64(new Uint8Array(32).fill(0xff)); }), "seal_bad_signature");
  const unsealed = await verifyLog(sealed.slice(0, -1).join("\n"));
  assert.equal(unsealed.checks.find((c) => c.id === "seal").code, "seal_missing");
  const trailing = await verifyLog([...sealed, sealed[1]].join("\n"));
  assert.match(failed(trailing).format, /follows the seal/);
});

test("an edited event breaks the chain at its seq", async () => {
  const list = rows(golden("hokm_3p"));
  const played = findEvent(list, "cardPlayed");
  played.body.card = (played.body.card + 1) % 52;
  const report = await verifyLog(list.map((r) => JSON.stringify(r)).join("\n"), { unsealed: true });
  assert.deepEqual(Object.keys(failed(report)), ["chain"]);
  assert.match(failed(report).chain, new RegExp(`at seq ${played.index + 1}$`));
});

test("a rigged deal is caught even when the chain is recomputed", async () => {
  for (const name of GOLDEN) {
    const list = rows(golden(name));
    const dealt = findEvent(list, "cardsDealt");
    const hands = dealt.body.hands;
    const [a, b] = [hands[0].cards, hands.at(-1).cards];
    if (hands.length > 1) [a[0], b[0]] = [b[0], a[0]];
    else [a[0], a[1]] = [a[1], a[0]];
    const report = await verifyLog(await rechained(list), { unsealed: true });
    assert.deepEqual(Object.keys(failed(report)), ["deals"], name);
    assert.match(failed(report).deals, new RegExp(`^seq ${dealt.index + 1}: .*(round/1/deal|deal/1)`), name);
  }
});

test("a Hand card drawn that is not the stock's top is caught", async () => {
  const list = rows(golden("hand_3p"));
  const drawn = findEvent(list, "cardDrawn");
  drawn.body.card = (drawn.body.card + 1) % 104;
  const report = await verifyLog(await rechained(list), { unsealed: true });
  assert.match(failed(report).deals, /not the top of the stock/);
});

test("a two-player pile card that is not the pile's top is caught", async () => {
  const list = rows(golden("hokm_2p"));
  const taken = findEvent(list, "pileCardsTaken");
  taken.body.loserCard = (taken.body.loserCard + 1) % 52;
  const report = await verifyLog(await rechained(list), { unsealed: true });
  assert.match(failed(report).deals, /pile_cards_taken differs from the piles the seed laid/);
});

test("the hakem's shown cards and the seating follow the seed", async () => {
  const list = rows(golden("hokm_3p"));
  const shown = findEvent(list, "hakemCardsShown");
  shown.body.cards.reverse();
  let report = await verifyLog(await rechained(list), { unsealed: true });
  assert.match(failed(report).deals, /hakem_cards_shown differs/);
  const seated = rows(golden("hokm_4p"));
  seated[0].event.hokm.matchStarted.seating = [1, 0, 2, 3];
  report = await verifyLog(await rechained(seated), { unsealed: true });
  assert.match(failed(report).deals, /seating/);
});

test("a changed seed fails the commitment, a missing reveal says the match is unfinished", async () => {
  const list = rows(golden("hand_4p_partners"));
  const ended = list.at(-1).event.hand.matchEnded;
  ended.serverSeed = toBase64(new Uint8Array(32).fill(7));
  let report = await verifyLog(await rechained(list), { unsealed: true });
  assert.match(failed(report).commitment, /does not match the commitment/);
  assert.match(failed(report).deals, /not checked/);
  report = await verifyLog(await rechained(list.slice(0, -1)), { unsealed: true });
  assert.match(failed(report).commitment, /reveals no server seed/);
});

test("dropped and reordered events break the seq order", async () => {
  const list = rows(golden("hokm_4p"));
  const dropped = [...list.slice(0, 10), ...list.slice(11)];
  let report = await verifyLog(dropped.map((r) => JSON.stringify(r)).join("\n"), { unsealed: true });
  assert.match(failed(report).chain, /line 11 has seq 12, expected 11/);
  const swapped = [...list];
  [swapped[20], swapped[21]] = [swapped[21], swapped[20]];
  report = await verifyLog(swapped.map((r) => JSON.stringify(r)).join("\n"), { unsealed: true });
  assert.match(failed(report).chain, /has seq 22, expected 21/);
});

test("unreadable files are reported as such", async () => {
  for (const [text, pattern] of [["", /empty/], ["{", /not JSON/], ['{"event": {"seq": "x"}}', /not a 64-bit integer/],
    ['{"entry": 1}', /no such field/], ["[1]", /not a JSON object/]]) {
    const report = await verifyLog(text);
    assert.equal(report.ok, false);
    assert.match(report.checks[0].problem, pattern);
  }
});

test("receipts match the log, or say which seq differs", async () => {
  const text = golden("hand_2p");
  const list = rows(text);
  const good = readReceipts([3, 10, 20].map((seq) => JSON.stringify({ seq, hash: list[seq - 1].hash })).join("\n"));
  assert.ok((await verifyLog(text, { unsealed: true, receipts: good })).ok);
  const bad = readReceipts(JSON.stringify({ seq: 5, hash: list[3].hash }) + "\n" +
    JSON.stringify({ event: { seq: "9000" }, hash: list[3].hash }));
  const report = await verifyLog(text, { unsealed: true, receipts: bad });
  assert.match(failed(report).receipts, /2 of 2 receipts differ .*seq 5/);
  assert.throws(() => readReceipts('{"seq": 0, "hash": "AA=="}'), /not a receipt/);
});
