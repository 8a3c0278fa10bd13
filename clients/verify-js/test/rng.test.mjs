import test from "node:test";
import assert from "node:assert/strict";
import "./helpers.mjs";
import { DeterministicRandom, range, shuffled } from "../src/rng.js";
import { utf8 } from "../src/bytes.js";

test("the documented check value: key k, label demo", async () => {
  assert.deepEqual(await shuffled(utf8("k"), "demo", [0, 1, 2, 3, 4]), [1, 3, 4, 2, 0]);
});

test("a shuffle is a permutation, and the same stream gives the same one", async () => {
  const a = await shuffled(utf8("key"), "round/1/deal", range(52));
  const b = await shuffled(utf8("key"), "round/1/deal", range(52));
  assert.deepEqual(a, b);
  assert.deepEqual([...a].sort((x, y) => x - y), range(52));
  assert.notDeepEqual(a, await shuffled(utf8("key"), "round/2/deal", range(52)));
});

test("randbelow stays in range and refuses a bound that is not positive", async () => {
  const rng = await DeterministicRandom.open(utf8("k"), "bounds");
  for (const n of [1, 2, 3, 7, 52, 106, 2 ** 40]) {
    const value = await rng.randbelow(n);
    assert.ok(Number.isInteger(value) && value >= 0 && value < n);
  }
  await assert.rejects(rng.randbelow(0), RangeError);
  await assert.rejects(rng.randbelow(-3), RangeError);
});

test("the words of a block are read in order, first 8 bytes first", async () => {
  // randbelow(2^64 - 1)... cannot be a JS number; a bound of 2 reads each word's parity.
  const rng = await DeterministicRandom.open(utf8("k"), "demo");
  const words = [];
  for (let i = 0; i < 5; i++) words.push(await rng.nextWord());
  const { hmacSha256 } = await import("../src/crypto.js");
  const { concat, u64be } = await import("../src/bytes.js");
  const block = await (await hmacSha256(utf8("k")))(concat(utf8("demo"), new Uint8Array([0]), u64be(0)));
  const view = new DataView(block.buffer);
  assert.deepEqual(words.slice(0, 4), [0, 8, 16, 24].map((offset) => view.getBigUint64(offset)));
});
