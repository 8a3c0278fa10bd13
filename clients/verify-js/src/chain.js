// The salted hash chain (docs/verification.md §7).
import { concat, equalBytes, u64be, utf8 } from "./bytes.js";
import { hmacSha256, sha256 } from "./crypto.js";
import { encodeMessage } from "./protojson.js";

export const GENESIS_HASH = new Uint8Array(32);
const CHAIN_KEY_LABEL = utf8("dast/chain-key/v1");
const SALT_LABEL = utf8("dast/event-salt/v1");

/** The canonical bytes of an event (as readMessage returns it). */
export const canonicalBytes = (event) => encodeMessage(event, "dast.v1.Event");

export async function chainKey(serverSeed) {
  return (await hmacSha256(serverSeed))(CHAIN_KEY_LABEL);
}

/** Every entry's expected hash, each from its predecessor's stored hash (so they are
 *  computed side by side; the first mismatch is where a sequential walk would stop). */
export async function findChainBreak(entries, serverSeed) {
  for (let index = 0; index < entries.length; index++) {
    const seq = entries[index].event.seq ?? 0n;
    if (seq !== BigInt(index + 1)) {
      return { index, reason: `line ${entries[index].line} has seq ${seq}, expected ${index + 1}` };
    }
  }
  const salt = await hmacSha256(await chainKey(serverSeed));
  const expected = await Promise.all(entries.map(async (entry, index) => {
    const digest = await sha256(await salt(concat(SALT_LABEL, u64be(index + 1))), canonicalBytes(entry.event));
    return sha256(index === 0 ? GENESIS_HASH : entries[index - 1].hash, digest);
  }));
  const index = expected.findIndex((hash, i) => !equalBytes(hash, entries[i].hash));
  return index < 0 ? null : { index, reason: `hash mismatch at seq ${index + 1}` };
}
