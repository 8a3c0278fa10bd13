// The whole verification of an exported log, check by check (docs/verification.md §10).
import { equalBytes, toBase64 } from "./bytes.js";
import { sha256 } from "./crypto.js";
import { findChainBreak } from "./chain.js";
import { eventKind, findDealProblem } from "./deals.js";
import { LogFormatError, readLog } from "./logfile.js";
import { sealProblem } from "./seal.js";

const SERVER_SEED_BYTES = 32;

export const CHECKS = Object.freeze({
  format: "file format",
  chain: "hash chain",
  commitment: "seed commitment",
  deals: "deals",
  seal: "seal",
  receipts: "receipts",
});

function check(id, problem, extra = {}) {
  return { id, label: CHECKS[id], ok: problem === null, problem, ...extra };
}

/** The seed the first event records, the revealed one and the commitment. */
function fairnessOf(entries) {
  const first = eventKind(entries[0].event);
  const last = eventKind(entries.at(-1).event);
  const fairness = first.kind === "match_started" ? first.body.fairness ?? {} : {};
  return {
    game: first.kind === "match_started" ? first.game : null,
    recordedSeed: fairness.server_seed ?? new Uint8Array(0),
    commitment: fairness.server_seed_commitment ?? new Uint8Array(0),
    chosen: fairness.server_seed_chosen === true,
    revealedSeed: last.kind === "match_ended" ? last.body.server_seed ?? null : null,
  };
}

/**
 * Verify an exported log's text. Options: `publicKey` (the server's key, 32 bytes: the seal
 * must be made with it), `unsealed` (accept a log without a seal), `receipts` (a seat's
 * {seq, hash} list). Every check runs when the file reads; the report lists them all:
 * {ok, events, game, checks: [{id, label, ok, problem}], warnings, entries, seal}.
 */
export async function verifyLog(text, { publicKey = null, unsealed = false, receipts = null } = {}) {
  let log;
  try {
    log = readLog(text);
    if (log.entries.length === 0) throw new LogFormatError("the log is empty");
  } catch (error) {
    if (!(error instanceof LogFormatError)) throw error;
    const checks = [check("format", error.message)];
    return { ok: false, events: 0, game: null, checks, warnings: [], entries: [], seal: null };
  }
  const { entries, seal } = log;
  const checks = [check("format", null)];
  const warnings = [];
  const fairness = fairnessOf(entries);

  const chainBreak = await findChainBreak(entries, fairness.recordedSeed);
  checks.push(check("chain", chainBreak === null ? null : `hash chain broken: ${chainBreak.reason}`,
    chainBreak === null ? {} : { seq: chainBreak.index + 1 }));

  let commitment = null;
  if (fairness.game === null) commitment = "the first event is not a Hokm or Hand match start";
  else if (fairness.revealedSeed === null) commitment = "the last event reveals no server seed: is the match finished?";
  else if (!equalBytes(await sha256(fairness.revealedSeed), fairness.commitment)) {
    commitment = "the revealed server seed does not match the commitment";
  } else if (!equalBytes(fairness.recordedSeed, fairness.revealedSeed)) {
    commitment = "the first event records another server seed than the last one reveals";
 } else if (fairness.revealedSeed.length !== SERVER_SEED_BYTES) {
    commitment = `the server seed has ${fairness.revealedSeed.length} bytes, not ${SERVER_SEED_BYTES}`;
  }
  checks.push(check("commitment", commitment));

  const deals = commitment === null
    ? await findDealProblem(entries.map((entry) => entry.event), fairness.revealedSeed)
    : "not checked: no trusted seed (see the seed commitment)";
  checks.push(check("deals", deals));

  const sealIssue = seal === null && unsealed ? null : await sealProblem(seal, entries, publicKey);
  const sealNote = seal === null && unsealed ? { note: "absent (accepted: unsealed)" } : {};
  checks.push(check("seal", sealIssue?.text ?? null, sealIssue ? { code: sealIssue.code } : sealNote));
  if (seal === null && unsealed) warnings.push("the log carries no seal (accepted: unsealed)");
  if (seal !== null && sealIssue === null && publicKey === null) {
    warnings.push(`sealed by key ${toBase64(seal.public_key)}, taken from the file itself: compare it with the server's`);
  }
  if (fairness.chosen) warnings.push("an admin chose this match's server seed: the operator knew every deal in advance");

  if (receipts !== null) {
    const bySeq = new Map(entries.map((entry) => [Number(entry.event.seq), entry.hash]));
    const bad = receipts.filter((r) => !bySeq.has(r.seq) || !equalBytes(bySeq.get(r.seq), r.hash));
    checks.push(check("receipts", bad.length === 0 ? null
      : `${bad.length} of ${receipts.length} receipts differ from the log (first: seq ${bad[0].seq})`));
  }
  return {
    ok: checks.every((c) => c.ok), events: entries.length, game: fairness.game, checks, warnings, entries, seal,
  };
}
