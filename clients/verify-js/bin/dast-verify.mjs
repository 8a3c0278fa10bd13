#!/usr/bin/env node
// dast-verify-js FILE… [--public-key BASE64] [--unsealed] [--receipts FILE] [--json]
// Verifies exported logs with the JavaScript verifier; one line per file (JSON Lines with
// --json). Exit 0 when every file passes, 1 when a check fails, 2 when an input is unreadable.
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

import { verifyLog, readReceipts, fromBase64 } from "../src/node.js";

const USAGE = "usage: dast-verify-js FILE… [--public-key BASE64] [--unsealed] [--receipts FILE] [--json]";

async function main() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        "public-key": { type: "string" },
        unsealed: { type: "boolean", default: false },
        receipts: { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    console.error(`${error.message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  let publicKey = null;
  if (values["public-key"] !== undefined) {
    try {
      publicKey = fromBase64(values["public-key"].trim());
    } catch (error) {
      console.error(`--public-key: ${error.message}`);
      return 2;
    }
    if (publicKey.length !== 32) {
      console.error(`--public-key: ${publicKey.length} bytes; an Ed25519 public key has 32`);
      return 2;
    }
  }
  let receipts = null;
  if (values.receipts !== undefined) {
    try {
      receipts = readReceipts(await readFile(values.receipts, "utf8"));
    } catch (error) {
      console.error(`cannot read receipts ${values.receipts}: ${error.message}`);
      return 2;
    }
  }
  let status = 0;
  for (const file of positionals) {
    let text;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      console.error(`cannot read ${file}: ${error.message}`);
      status = 2;
      continue;
    }
    const report = await verifyLog(text, { publicKey, unsealed: values.unsealed, receipts });
    if (!report.ok && status === 0) status = 1;
    if (values.json) {
      const checks = Object.fromEntries(report.checks.map((c) => [c.id, c.ok ? "ok" : c.problem]));
      console.log(JSON.stringify({ file, ok: report.ok, events: report.events, game: report.game, checks, warnings: report.warnings }));
    } else {
      console.log(`${file}: ${report.events} events`);
      for (const c of report.checks) console.log(`  ${c.label.padEnd(16)} ${c.ok ? c.note ?? "ok" : "FAILED"}`);
      for (const w of report.warnings) console.log(`  warning: ${w}`);
      for (const c of report.checks) if (!c.ok) console.log(`  - ${c.problem}`);
      console.log(report.ok ? "verified" : "NOT verified");
    }
  }
  return status;
}

process.exitCode = await main();
