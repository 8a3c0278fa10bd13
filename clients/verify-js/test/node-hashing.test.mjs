// src/node.js swaps WebCrypto's hashing for node:crypto's (its own process: the swap is
// module state). The verdicts must not change.
import test from "node:test";
import assert from "node:assert/strict";
import { GOLDEN, findEvent, golden, rechained, rows } from "./helpers.mjs";
import { DeterministicRandom, verifyLog } from "../src/node.js";
import { utf8 } from "../src/bytes.js";

test("node:crypto hashing gives the same verdicts as WebCrypto", async () => {
  const rng = await DeterministicRandom.open(utf8("k"), "demo");
  assert.deepEqual(await rng.shuffle([0, 1, 2, 3, 4]), [1, 3, 4, 2, 0]);
  for (const name of GOLDEN) {
    assert.ok((await verifyLog(golden(name), { unsealed: true })).ok, name);
    const list = rows(golden(name));
    const dealt = findEvent(list, "cardsDealt");
    const cards = dealt.body.hands[0].cards;
    [cards[0], cards[1]] = [cards[1], cards[0]];
    const report = await verifyLog(await rechained(list), { unsealed: true });
    assert.deepEqual(report.checks.filter((c) => !c.ok).map((c) => c.id), ["deals"], name);
  }
});
