import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import "./helpers.mjs";
import { encodeMessage, readMessage, ProtoJsonError } from "../src/protojson.js";

const hex = (bytes) => Buffer.from(bytes).toString("hex");
const encodeEvent = (json) => encodeMessage(readMessage(json, "dast.v1.Event"), "dast.v1.Event");

test("the schema module is generated from the current .proto files", () => {
  const tool = join(dirname(fileURLToPath(import.meta.url)), "..", "tools", "gen-schema.mjs");
  execFileSync(process.execPath, [tool, "--check"]);
});

test("the examples of docs/verification.md", () => {
  assert.equal(hex(encodeEvent({ seq: "1" })), "0801");
  assert.equal(hex(encodeEvent({ seq: "2", hand: { roundStarted: { round: 1, deal: 1 } } })), "08028a0106120408011801");
});

test("defaults are left out, except optional fields, oneof members and sub-messages", () => {
  assert.equal(hex(encodeEvent({ seq: "0", atMs: "0", automatic: false })), "");
  // HandEvent.card_drawn {card: 0}: an optional field present at zero is written.
  assert.equal(hex(encodeEvent({ hand: { cardDrawn: { card: 0 } } })), "8a010422021000");
  assert.equal(hex(encodeEvent({ hand: { cardDrawn: {} } })), "8a01022200");
  assert.equal(hex(encodeEvent({ hokm: { matchStarted: { rules: {} } } })), "8201040a020a00");
});

test("negative int64 takes ten bytes, sint32 is zig-zag, repeated numbers are packed", () => {
  assert.equal(hex(encodeEvent({ atMs: "-1" })), "10ffffffffffffffffff01");
  const ended = { hand: { roundEnded: { points: [-1, 1, 0, -64] } } };
  // points (field 6, sint32): zig-zag 1, 2, 0, 127 packed in one record (as Python's protobuf writes).
  assert.equal(hex(encodeEvent(ended)), "8a01085a0632040102007f");
});

test("hostile input is refused with the field's path", () => {
  const refuse = (json, pattern) => assert.throws(() => readMessage(json, "dast.v1.Event"),
    (error) => error instanceof ProtoJsonError && pattern.test(error.message));
  refuse({ sequence: "1" }, /sequence: no such field/);
  refuse({ seq: "1", at_ms: "1", atMs: "2" }, /given twice/);
  refuse({ seq: "-1" }, /out of range/);
  refuse({ seq: "18446744073709551616" }, /out of range/);
  refuse({ seq: 1.5 }, /not a 64-bit integer/);
  refuse({ hokm: {}, hand: {} }, /oneof game/);
  refuse({ hokm: { cardPlayed: { card: 4294967296 } } }, /out of range/);
  refuse({ hokm: { cardPlayed: { card: "x" } } }, /not an integer/);
  refuse({ hokm: { trumpDeclared: { suit: "SUIT_STARS" } } }, /no value SUIT_STARS/);
  refuse({ automatic: "yes" }, /not a boolean/);
  refuse({ hokm: { matchStarted: { fairness: { serverSeed: "%%%" } } } }, /not base64/);
  refuse({ hokm: { matchStarted: { players: [null] } } }, /null in a list/);
  refuse({ other: { "@type": "type.googleapis.com/x.Y" } }, /not supported/);
  refuse([], /not a JSON object/);
});

test("proto field names and enum numbers read like their JSON forms", () => {
  const a = encodeEvent({ seq: "3", hokm: { trumpDeclared: { suit: "SUIT_HEARTS", fromPile: true } } });
  const b = encodeEvent({ seq: 3, hokm: { trump_declared: { suit: 2, from_pile: true } } });
  assert.deepEqual(a, b);
});
