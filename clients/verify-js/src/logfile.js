// Reading an exported log (docs/verification.md §1): JSON Lines of dast.v1.LogEntry, and
// last, when sealed, {"seal": dast.v1.LogSeal}.
import { ProtoJsonError, readMessage } from "./protojson.js";

export class LogFormatError extends Error {}

/**
 * The entries ({event, hash, line}) and the seal (or null) of an exported log's text.
 * @throws {LogFormatError} naming the first line that is neither an entry nor, last, a seal.
 */
export function readLog(text) {
  if (typeof text !== "string") throw new LogFormatError("the log is not text");
  const entries = [];
  let seal = null;
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const number = index + 1;
    if (line.trim() === "") continue;
    if (seal !== null) throw new LogFormatError(`line ${number} follows the seal, which must be the last line`);
    let value;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new LogFormatError(`line ${number} is not JSON: ${error.message}`);
    }
    try {
      const keys = value !== null && typeof value === "object" ? Object.keys(value) : [];
      if (keys.length === 1 && keys[0] === "seal") {
        seal = readMessage(value.seal, "dast.v1.LogSeal", "seal");
      } else {
        const entry = readMessage(value, "dast.v1.LogEntry", `line ${number}`);
        entries.push({ event: entry.event ?? {}, hash: entry.hash ?? new Uint8Array(0), line: number });
      }
    } catch (error) {
      if (error instanceof ProtoJsonError) throw new LogFormatError(`line ${number} is not a log entry: ${error.message}`);
      throw error;
    }
  }
  return { entries, seal };
}

/** A seat's receipts ({seq, hash}) from a receipts file (docs/verification.md §9). */
export function readReceipts(text) {
  const receipts = [];
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    if (lines[index].trim() === "") continue;
    try {
      const value = JSON.parse(lines[index]);
      let seq;
      if (value !== null && typeof value === "object" && "event" in value) {
        seq = Number(readMessage(value.event, "dast.v1.Event", "event").seq ?? 0n);
      } else {
        seq = Number(readMessage({ seq: value.seq }, "dast.v1.Event", "receipt").seq ?? 0n);
      }
      const hash = readMessage({ hash: value.hash }, "dast.v1.LogEntry", "receipt").hash;
      if (seq < 1 || hash === undefined || hash.length !== 32) throw new Error("needs a seq ≥ 1 and a 32-byte hash");
      receipts.push({ seq, hash });
    } catch (error) {
      throw new LogFormatError(`receipts line ${index + 1} is not a receipt: ${error.message}`);
    }
  }
  return receipts;
}
