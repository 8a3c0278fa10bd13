// Generates src/schema.js from the .proto files the exported logs are written in, so that
// the verifier encodes events from the schema itself (docs/verification.md §2) and not from
// a hand-copied table. `node tools/gen-schema.mjs` rewrites the file; `--check` only says
// whether it is current (the unit tests run that).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const protoDir = join(here, "..", "..", "..", "protos");
const target = join(here, "..", "src", "schema.js");
// Every message an exported Hokm or Hand log can hold (log.proto imports the rest).
const FILES = ["dast/v1/common.proto", "dast/v1/hokm.proto", "dast/v1/hand.proto", "dast/v1/log.proto"];
// The lines of an export (docs/verification.md §1); views and rules requests never appear in one.
const ROOTS = ["dast.v1.LogEntry", "dast.v1.LogSeal"];
const SCALARS = new Set(["uint32", "uint64", "int64", "int32", "sint32", "sint64", "bool", "string", "bytes"]);

function tokenize(text) {
  const withoutComments = text.replace(/\/\/[^\n]*/g, "").replace(/\/\*[\s\S]*?\*\//g, "");
  return withoutComments.match(/"[^"]*"|[A-Za-z_][A-Za-z0-9_.]*|\d+|[{}=;<>,()[\]]/g) ?? [];
}

function parseFile(text, schema) {
  const tokens = tokenize(text);
  let at = 0;
  let pkg = "";
  const next = () => tokens[at++];
  const expect = (want) => {
    const got = next();
    if (got !== want) throw new Error(`expected ${want}, got ${got} at token ${at}`);
  };
  const skipStatement = () => { while (next() !== ";") { /* up to the end of the statement */ } };

  function parseEnum(prefix) {
    const name = prefix + next();
    expect("{");
    const values = {};
    for (let token = next(); token !== "}"; token = next()) {
      if (token === "option" || token === "reserved") { skipStatement(); continue; }
      expect("=");
      values[token] = Number(next());
      skipStatement();
    }
    schema.enums[name] = values;
  }

  function parseField(first, fields, oneof) {
    let rule = "singular";
    let type = first;
    if (first === "optional" || first === "repeated") { rule = first; type = next(); }
    const name = next();
    expect("=");
    const number = Number(next());
    skipStatement();
    fields.push({ name, number, type, rule, oneof });
  }

  function parseMessage(prefix) {
    const name = prefix + next();
    expect("{");
    const fields = [];
    for (let token = next(); token !== "}"; token = next()) {
      if (token === "message") parseMessage(`${name}.`);
      else if (token === "enum") parseEnum(`${name}.`);
      else if (token === "option" || token === "reserved") skipStatement();
      else if (token === "oneof") {
        const oneof = next();
        expect("{");
        for (let member = next(); member !== "}"; member = next()) parseField(member, fields, oneof);
      } else parseField(token, fields, null);
    }
    schema.messages[name] = { fields, scope: pkg };
  }

  while (at < tokens.length) {
    const token = next();
    if (token === "package") { pkg = next(); expect(";"); }
    else if (token === "message") parseMessage(`${pkg}.`);
    else if (token === "enum") parseEnum(`${pkg}.`);
    else skipStatement();  // syntax, import, option
  }
}

function resolveTypes(schema) {
  for (const [name, message] of Object.entries(schema.messages)) {
    for (const field of message.fields) {
      if (SCALARS.has(field.type)) { field.kind = field.type; continue; }
      const candidates = field.type.includes(".")
        ? [field.type]
        : [`${name}.${field.type}`, `${message.scope}.${field.type}`];
      const found = candidates.find((c) => c in schema.messages || c in schema.enums);
      if (field.type === "google.protobuf.Any") { field.kind = "any"; continue; }
      if (!found) throw new Error(`${name}.${field.name}: unknown type ${field.type}`);
      field.kind = found in schema.messages ? "message" : "enum";
      field.type = found;
    }
    delete message.scope;
  }
}

/** Keep only what an exported log can hold: the messages and enums reachable from its lines. */
function reachable(schema) {
  const messages = {};
  const enums = {};
  const pending = [...ROOTS];
  while (pending.length > 0) {
    const name = pending.pop();
    if (name in messages) continue;
    messages[name] = schema.messages[name];
    for (const field of messages[name].fields) {
      if (field.kind === "message") pending.push(field.type);
      if (field.kind === "enum") enums[field.type] = schema.enums[field.type];
    }
  }
  const order = (table) => Object.fromEntries(Object.keys(table).sort().map((key) => [key, table[key]]));
  return { messages: order(messages), enums: order(enums) };
}

export function generate() {
  const parsed = { messages: {}, enums: {} };
  for (const file of FILES) parseFile(readFileSync(join(protoDir, file), "utf8"), parsed);
  resolveTypes(parsed);
  const schema = reachable(parsed);
  const messages = Object.fromEntries(Object.entries(schema.messages).map(([name, message]) => [
    name,
    message.fields
      .map((f) => [f.name, f.number, f.kind, f.kind === "message" || f.kind === "enum" ? f.type : null, f.rule, f.oneof])
      .sort((a, b) => a[1] - b[1]),
  ]));
  return [
    "// Generated by tools/gen-schema.mjs from protos/dast/v1/{common,hokm,hand,log}.proto: do not edit.",
    "// Only what an exported log can hold: the messages reachable from LogEntry and LogSeal.",
    "// messages: full name -> fields in field-number order, each",
    "//   [name, number, kind, message or enum type (or null), rule, oneof (or null)].",
    "export const MESSAGES = {",
    ...Object.entries(messages).map(([name, fields]) =>
      `  ${JSON.stringify(name)}: [\n${fields.map((f) => `    ${JSON.stringify(f)},\n`).join("")}  ],`),
    "};",
    "export const ENUMS = {",
    ...Object.entries(schema.enums).map(([name, values]) => `  ${JSON.stringify(name)}: ${JSON.stringify(values)},`),
    "};",
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate();
  if (process.argv.includes("--check")) {
    const current = readFileSync(target, "utf8");
    if (current !== text) {
      console.error("src/schema.js is stale: run node tools/gen-schema.mjs");
      process.exit(1);
    }
  } else {
    writeFileSync(target, text);
  }
}
