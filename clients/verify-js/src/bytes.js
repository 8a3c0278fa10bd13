// Byte helpers shared by the verifier: base64 (RFC 4648), concatenation, big-endian integers.

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;
DECODE["-".charCodeAt(0)] = 62;  // the URL-safe alphabet reads the same
DECODE["_".charCodeAt(0)] = 63;

/** The bytes of base64 `text` (standard or URL-safe alphabet, padding optional). */
export function fromBase64(text) {
  const body = text.replace(/={1,2}$/, "");
  if (body.length % 4 === 1) throw new Error("not base64 (wrong length)");
  const out = new Uint8Array(Math.floor((body.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let at = 0;
  for (let i = 0; i < body.length; i++) {
    const code = body.charCodeAt(i);
    const digit = code < 128 ? DECODE[code] : -1;
    if (digit < 0) throw new Error("not base64 (a character outside its alphabet)");
    value = (value << 6) | digit;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (value >> bits) & 0xff;
    }
  }
  return out;
}

/** Standard base64 with padding. */
export function toBase64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const chunk = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    text += ALPHABET[(chunk >> 18) & 63] + ALPHABET[(chunk >> 12) & 63];
    text += i + 1 < bytes.length ? ALPHABET[(chunk >> 6) & 63] : "=";
    text += i + 2 < bytes.length ? ALPHABET[chunk & 63] : "=";
  }
  return text;
}

export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function u32be(value) {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

export function u64be(value) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(value));
  return out;
}

export const utf8 = (text) => new TextEncoder().encode(text);
