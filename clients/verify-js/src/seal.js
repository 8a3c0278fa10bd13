// The seal: the server's Ed25519 signature over a finished log's head (docs/verification.md §8).
import { concat, equalBytes, u32be, u64be, utf8 } from "./bytes.js";
import { ed25519Verify } from "./crypto.js";

const DOMAIN = utf8("dast/log-seal/v1\u0000");

export function sealMessage(gameId, seq, headHash) {
  const name = utf8(gameId);
  return concat(DOMAIN, u32be(name.length), name, u64be(seq), headHash);
}

/** Why `seal` does not vouch for `entries` (a stable code and a sentence), or null. */
export async function sealProblem(seal, entries, trustedKey) {
  if (seal === null) return { code: "seal_missing", text: "the log carries no seal" };
  const publicKey = seal.public_key ?? new Uint8Array(0);
  const signature = seal.signature ?? new Uint8Array(0);
  const last = entries.at(-1);
  if (!last || (seal.seq ?? 0n) !== (last.event.seq ?? 0n) || !equalBytes(seal.head_hash ?? new Uint8Array(0), last.hash)) {
    return { code: "seal_wrong_head", text: "the seal names another seq or hash than the log's last entry" };
  }
  if (publicKey.length !== 32 || signature.length !== 64) {
    return { code: "seal_malformed", text: "the seal's key or signature has the wrong length" };
  }
  if (trustedKey && !equalBytes(publicKey, trustedKey)) {
    return { code: "seal_untrusted_key", text: "the seal was made with another key than the trusted one" };
  }
  const message = sealMessage(seal.game_id ?? "", seal.seq ?? 0n, seal.head_hash);
  if (!(await ed25519Verify(publicKey, signature, message))) {
    return { code: "seal_bad_signature", text: "the seal's signature does not match the log's head" };
  }
  return null;
}
