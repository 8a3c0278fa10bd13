// SHA-256, HMAC-SHA256 and Ed25519 through WebCrypto (browsers; Node 20's globalThis.crypto),
// the only primitives the constructions use (docs/verification.md).
import { concat } from "./bytes.js";

const SHA256_BLOCK = 64;

// A platform may hand in its own synchronous SHA-256 and HMAC (src/node.js gives Node's):
// WebCrypto's calls are asynchronous and cost tens of microseconds each, which a log of
// hundreds of events and deals pays thousands of times. The results are the same bytes.
let native = null;

/** Use `hashing.sha256(parts)` and `hashing.hmac(key, message)` (both returning bytes). */
export function useNativeHashing(hashing) {
  native = hashing;
}

function subtle() {
  const found = globalThis.crypto?.subtle;
  if (!found) throw new Error("WebCrypto (crypto.subtle) is not available here");
  return found;
}

export async function sha256(...parts) {
  if (native !== null) return native.sha256(parts);
  return new Uint8Array(await subtle().digest("SHA-256", parts.length === 1 ? parts[0] : concat(...parts)));
}

/** A reusable HMAC-SHA256 under `key`: `await mac(message)` gives the 32-byte tag. */
export async function hmacSha256(key) {
  if (native !== null) return async (message) => native.hmac(key, message);
  if (key.length === 0) {
    // WebCrypto refuses empty HMAC keys; RFC 2104 pads them to a block of zeros.
    const inner = new Uint8Array(SHA256_BLOCK).fill(0x36);
    const outer = new Uint8Array(SHA256_BLOCK).fill(0x5c);
    return async (message) => sha256(outer, await sha256(inner, message));
  }
  const imported = await subtle().importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return async (message) => new Uint8Array(await subtle().sign("HMAC", imported, message));
}

/** Whether `signature` is `publicKey`'s Ed25519 signature (RFC 8032) of `message`. */
export async function ed25519Verify(publicKey, signature, message) {
  let key;
  try {
    key = await subtle().importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return false;  // not a point of the curve
  }
  return subtle().verify({ name: "Ed25519" }, key, signature, message);
}
