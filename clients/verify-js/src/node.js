// The verifier for Node: the same API as index.js, with Node's own synchronous SHA-256 and
// HMAC (node:crypto) instead of WebCrypto's asynchronous calls; Ed25519 stays WebCrypto.
import { createHash, createHmac, webcrypto } from "node:crypto";
import { useNativeHashing } from "./crypto.js";

if (!globalThis.crypto) globalThis.crypto = webcrypto;  // Node 18 keeps it off the global

useNativeHashing({
  sha256(parts) {
    const hash = createHash("sha256");
    for (const part of parts) hash.update(part);
    return new Uint8Array(hash.digest());
  },
  hmac(key, message) {
    return new Uint8Array(createHmac("sha256", key).update(message).digest());
  },
});

export * from "./index.js";
