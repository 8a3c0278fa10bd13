// Time the verification of one exported log: `node tools/bench-audit.mjs FILE [REPEAT]`
// prints {"ms_per_log": …, "cpu_ms_per_log": …, "repeat": …, "events": …} after a warm-up
// run (bench/audit_js.py); the CPU time is the whole process's, every thread included.
import { readFileSync } from "node:fs";

import { verifyLog } from "../src/node.js";

const [file, repeatText = "20"] = process.argv.slice(2);
const repeat = Number(repeatText);
if (!file || !Number.isInteger(repeat) || repeat < 1) {
  console.error("usage: node tools/bench-audit.mjs FILE [REPEAT]");
  process.exit(2);
}
const text = readFileSync(file, "utf8");
const warm = await verifyLog(text);
if (!warm.ok) {
  console.error(`${file} does not verify: ${JSON.stringify(warm.checks.filter((c) => !c.ok))}`);
  process.exit(1);
}
const started = performance.now();
const cpuStarted = process.cpuUsage();
for (let i = 0; i < repeat; i++) await verifyLog(text);
const cpu = process.cpuUsage(cpuStarted);
const ms = (performance.now() - started) / repeat;
const cpuMs = (cpu.user + cpu.system) / 1000 / repeat;
console.log(JSON.stringify({ ms_per_log: Number(ms.toFixed(2)), cpu_ms_per_log: Number(cpuMs.toFixed(2)), repeat, events: warm.events }));
