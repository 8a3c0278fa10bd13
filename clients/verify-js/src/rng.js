// The deterministic generator behind every shuffle (docs/verification.md §4).
import { concat, u64be, utf8 } from "./bytes.js";
import { hmacSha256 } from "./crypto.js";

const WORD_SPACE = 1n << 64n;

export class DeterministicRandom {
  /** Use `await DeterministicRandom.open(key, label)`: the HMAC key is imported once. */
  constructor(mac, label) {
    this.mac = mac;
    this.label = concat(utf8(label), new Uint8Array([0]));
    this.counter = 0;
    this.words = [];
  }

  static async open(key, label) {
    return new DeterministicRandom(await hmacSha256(key), label);
  }

  async nextWord() {
    if (this.words.length === 0) {
      const block = await this.mac(concat(this.label, u64be(this.counter)));
      this.counter += 1;
      const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
      this.words = [24, 16, 8, 0].map((offset) => view.getBigUint64(offset));  // popped from the end
    }
    return this.words.pop();
  }

  async randbelow(n) {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`randbelow needs a positive bound, got ${n}`);
    const bound = BigInt(n);
    const limit = WORD_SPACE - (WORD_SPACE % bound);
    for (;;) {
      const word = await this.nextWord();
      if (word < limit) return Number(word % bound);
    }
  }

  /** A shuffled copy of `items` (Fisher–Yates from the last position down). */
  async shuffle(items) {
    const result = [...items];
    for (let i = result.length - 1; i > 0; i--) {
      const j = await this.randbelow(i + 1);
      [result[i], result[j]] = [result[j], result[i]];
    }
    return result;
  }
}

/** `shuffle(items)` of the stream of `key` and `label`. */
export async function shuffled(key, label, items) {
  return (await DeterministicRandom.open(key, label)).shuffle(items);
}

export const range = (n) => Array.from({ length: n }, (_, i) => i);
