// Shared helpers of the unit tests: the golden logs of the engine and ways to edit them.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { webcrypto } from "node:crypto";

if (!globalThis.crypto) globalThis.crypto = webcrypto;

const { canonicalBytes, chainKey } = await import("../src/chain.js");
const { readLog } = await import("../src/logfile.js");
const { concat, toBase64, u64be, utf8 } = await import("../src/bytes.js");
const { sha256, hmacSha256 } = await import("../src/crypto.js");
const { sealMessage } = await import("../src/seal.js");

export const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "golden");
export const GOLDEN = ["hokm_4p", "hokm_3p", "hokm_2p", "hand_2p", "hand_3p", "hand_4p_partners"];

export const golden = (name) => readFileSync(join(GOLDEN_DIR, `${name}.jsonl`), "utf8");

/** The JSON rows of a log's entries (the seal line left out). */
export function rows(text) {
  return text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line))
    .filter((row) => !("seal" in row));
}

/** The rows of a log as text, their hashes recomputed from the seed the first records. */
export async function rechained(rowList) {
  const text = rowList.map((row) => JSON.stringify(row)).join("\n");
  const { entries } = readLog(text);
  const seed = entries[0].event.hokm?.match_started?.fairness?.server_seed
    ?? entries[0].event.hand?.match_started?.fairness?.server_seed;
  const salt = await hmacSha256(await chainKey(seed));
  let previous = new Uint8Array(32);
  const out = [];
  for (const [index, entry] of entries.entries()) {
    const digest = await sha256(await salt(concat(utf8("dast/event-salt/v1"), u64be(entry.event.seq))), canonicalBytes(entry.event));
    previous = await sha256(previous, digest);
    out.push(JSON.stringify({ ...rowList[index], hash: toBase64(previous) }));
  }
  return out.join("\n") + "\n";
}

/** A fresh Ed25519 key pair and a function sealing a log's text with it. */
export async function sealer() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const publicKey = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  async function seal(text, gameId = "game-1") {
    const { entries } = readLog(text);
    const last = entries.at(-1);
    const signature = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey,
      sealMessage(gameId, last.event.seq, last.hash)));
    const line = { seal: { gameId, seq: String(last.event.seq), headHash: toBase64(last.hash),
      publicKey: toBase64(publicKey), signature: toBase64(signature) } };
    return text.trimEnd() + "\n" + JSON.stringify(line) + "\n";
  }
  return { publicKey, seal };
}

/** The body of the first event of `kind` (e.g. "cardsDealt") and its row index. */
export function findEvent(rowList, kind, from = 0) {
  for (let i = from; i < rowList.length; i++) {
    const event = rowList[i].event;
    const game = event.hokm ?? event.hand;
    if (game && kind in game) return { index: i, body: game[kind] };
  }
  throw new Error(`no ${kind} event`);
}
