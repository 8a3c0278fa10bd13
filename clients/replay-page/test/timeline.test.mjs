// The replay's states follow the events: every card is somewhere at every step, and the
// scores shown are the ones the log's round and match ends record.
import test from "node:test";
import assert from "node:assert/strict";
import { GOLDEN, golden } from "../../verify-js/test/helpers.mjs";
import { readLog } from "../../verify-js/src/index.js";
import { buildTimeline, cardName } from "../timeline.js";

const framesOf = (name) => buildTimeline(readLog(golden(name)).entries);

test("card names", () => {
  assert.deepEqual([0, 12, 21, 38, 51, 52 + 8, 104, 105].map(cardName), ["2♠", "A♠", "10♥", "A♣", "A♦", "10♠", "★", "★"]);
});

for (const name of GOLDEN) {
  test(`${name}: one frame per event, the last one with the match's final figures`, () => {
    const text = golden(name);
    const frames = framesOf(name);
    const lines = text.trim().split("\n").map((line) => JSON.parse(line));
    assert.equal(frames.length, lines.length);
    assert.deepEqual(frames.map((f) => f.seq), lines.map((_, i) => i + 1));
    const last = frames.at(-1).state;
    const ended = (lines.at(-1).event.hokm ?? lines.at(-1).event.hand).matchEnded;
    const figures = last.game === "hokm" ? last.scores : last.totals;
    const recorded = ended.scores ?? ended.totals;
    assert.deepEqual(figures.slice(0, recorded.length), recorded);
    assert.deepEqual(last.winners, ended.winners ?? [0]);
    assert.match(frames.at(-1).text, /^Match over/);
  });
}

test("Hokm: every seat holds its whole hand once dealt, and plays it down a card a trick", () => {
  for (const name of ["hokm_4p", "hokm_3p"]) {
    const frames = framesOf(name);
    const size = name === "hokm_4p" ? 13 : 16;
    for (const [index, frame] of frames.entries()) {
      const { state } = frame;
      const dealtAll = frames[index].text.startsWith("Cards dealt") && state.hands.every((h) => h.length > 5);
      if (dealtAll && name === "hokm_4p") assert.ok(state.hands.every((h) => h.length === size), `seq ${frame.seq}`);
      const held = state.hands.flat();
      assert.equal(new Set(held).size, held.length, `a card held twice at seq ${frame.seq}`);
    }
  }
});

test("Hand: the 106 cards are all in hands, melds, the stock or the discard pile after each deal", () => {
  for (const name of ["hand_2p", "hand_3p", "hand_4p_partners"]) {
    for (const frame of framesOf(name)) {
      const { state } = frame;
      if (state.round === 0 || state.stockCount === 0 && state.hands.every((h) => h.length === 0)) continue;
      if (state.result !== null) continue;  // a finished round shows what was left in hand
      const melded = state.melds.reduce((sum, meld) => sum + meld.cards.length, 0);
      const total = state.hands.reduce((sum, hand) => sum + hand.length, 0) + melded + state.stockCount + state.discard.length;
      assert.equal(total, 106, `${name} seq ${frame.seq}: ${frame.text}`);
    }
  }
});

test("seat control events show who plays a seat", () => {
  const entries = readLog(golden("hokm_2p")).entries;
  const control = { seq: BigInt(entries.length + 1), seat_control: { seat: 1, bot: true, bot_level: "basic", reason: 2, requested_by: "service:timer" } };
  const frames = buildTimeline([...entries, { event: control, hash: new Uint8Array(32) }]);
  assert.equal(frames.at(-1).state.bots[1], true);
  assert.match(frames.at(-1).text, /basic bot plays seat 1 \(timed out/);
});

test("an event naming a seat that does not exist is shown as such, not thrown", () => {
  const entries = readLog(golden("hokm_4p")).entries;
  const bad = { seq: BigInt(entries.length + 1), hokm: { cards_dealt: { hands: [{ seat: 9, cards: [1], count: 1 }] } } };
  const frames = buildTimeline([...entries, { event: bad, hash: new Uint8Array(32) }]);
  assert.match(frames.at(-1).text, /^an event the replay cannot show \(cards_dealt/);
  assert.deepEqual(frames.at(-1).state, frames.at(-2).state);
});
