import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { GOLDEN_DIR, golden } from "./helpers.mjs";

const CLI = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "dast-verify.mjs");
const run = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8" });

test("exit codes: 0 verified, 1 a check failed, 2 an input unreadable", () => {
  const good = join(GOLDEN_DIR, "hand_3p.jsonl");
  let done = run(good, "--unsealed");
  assert.equal(done.status, 0, done.stderr);
  assert.match(done.stdout, /seal +absent \(accepted: unsealed\)\n[\s\S]*verified\n$/);
  done = run(good);
  assert.equal(done.status, 1);
  assert.match(done.stdout, /- the log carries no seal/);
  const folder = mkdtempSync(join(tmpdir(), "verify-js-cli-"));
  const edited = join(folder, "edited.jsonl");
  writeFileSync(edited, golden("hand_3p").replace('"seq": "5"', '"seq": "6"'));
  done = run("--json", "--unsealed", good, edited);
  assert.equal(done.status, 1);
  const reports = done.stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(reports.map((r) => r.ok), [true, false]);
  assert.match(reports[1].checks.chain, /line 5 has seq 6, expected 5/);
  assert.equal(run(join(folder, "missing.jsonl")).status, 2);
  assert.equal(run(good, "--public-key", "c2hvcnQ=").status, 2);
  assert.equal(run().status, 2);
});
