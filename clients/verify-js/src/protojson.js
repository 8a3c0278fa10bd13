// Reading a message in the protobuf JSON mapping and writing its canonical proto3 bytes,
// driven by the schema generated from the .proto files (docs/verification.md §1 and §2).
//
// `readMessage` turns hostile JSON into a plain object keyed by proto field names whose
// keys are exactly the fields present: numbers (uint32, sint32, enums), BigInt (int64,
// uint64), booleans, strings, Uint8Array (bytes), nested objects and arrays. Anything the
// mapping does not allow is refused with a ProtoJsonError naming the field's path.
// `encodeMessage` writes such an object as the bytes the hash chain covers.
import { MESSAGES, ENUMS } from "./schema.js";
import { fromBase64 } from "./bytes.js";

export class ProtoJsonError extends Error {}

const PACKABLE = new Set(["uint32", "uint64", "int64", "int32", "sint32", "sint64", "bool", "enum"]);
const UINT32_MAX = 0xffffffff;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
const UINT64_MAX = (1n << 64n) - 1n;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const INTEGER_TEXT = /^-?\d+$/;

const camelCase = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

// Per message: JSON name (camelCase and proto name) -> field description, built once.
const FIELDS_BY_JSON_NAME = new Map();
function fieldsByJsonName(type) {
  let table = FIELDS_BY_JSON_NAME.get(type);
  if (table === undefined) {
    const fields = MESSAGES[type];
    if (fields === undefined) throw new ProtoJsonError(`unknown message type ${type}`);
    table = new Map();
    for (const [name, number, kind, refType, rule, oneof] of fields) {
      const field = { name, number, kind, refType, rule, oneof };
      table.set(camelCase(name), field);
      table.set(name, field);
    }
    FIELDS_BY_JSON_NAME.set(type, table);
  }
  return table;
}

const isPlainObject = (value) =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function readInteger(value, path, min, max) {
  let number;
  if (typeof value === "number") number = value;
  else if (typeof value === "string" && INTEGER_TEXT.test(value)) number = Number(value);
  else throw new ProtoJsonError(`${path}: not an integer`);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new ProtoJsonError(`${path}: ${value} is out of range`);
  }
  return number;
}

function readBigInteger(value, path, min, max) {
  let number;
  if (typeof value === "string" && INTEGER_TEXT.test(value)) number = BigInt(value);
  else if (typeof value === "number" && Number.isSafeInteger(value)) number = BigInt(value);
  else throw new ProtoJsonError(`${path}: not a 64-bit integer`);
  if (number < min || number > max) throw new ProtoJsonError(`${path}: ${value} is out of range`);
  return number;
}

function readScalar(field, value, path) {
  switch (field.kind) {
    case "uint32": return readInteger(value, path, 0, UINT32_MAX);
    case "int32":
    case "sint32": return readInteger(value, path, INT32_MIN, INT32_MAX);
    case "uint64": return readBigInteger(value, path, 0n, UINT64_MAX);
    case "int64":
    case "sint64": return readBigInteger(value, path, INT64_MIN, INT64_MAX);
    case "bool":
      if (typeof value !== "boolean") throw new ProtoJsonError(`${path}: not a boolean`);
      return value;
    case "string":
      if (typeof value !== "string") throw new ProtoJsonError(`${path}: not a string`);
      return value;
    case "bytes":
      if (typeof value !== "string") throw new ProtoJsonError(`${path}: not base64 text`);
      try {
        return fromBase64(value);
      } catch (error) {
        throw new ProtoJsonError(`${path}: ${error.message}`);
      }
    case "enum": {
      if (typeof value === "string" && !INTEGER_TEXT.test(value)) {
        const number = ENUMS[field.refType][value];
        if (number === undefined) throw new ProtoJsonError(`${path}: ${field.refType} has no value ${value}`);
        return number;
      }
      return readInteger(value, path, INT32_MIN, INT32_MAX);  // proto3 enums are open
    }
    case "message": return readMessage(value, field.refType, path);
    case "any":
      throw new ProtoJsonError(`${path}: a game outside the schema (google.protobuf.Any) is not supported`);
    default: throw new ProtoJsonError(`${path}: unsupported field kind ${field.kind}`);
  }
}

/** The message of `type` (a full name such as "dast.v1.Event") that `json` holds. */
export function readMessage(json, type, path = type) {
  if (!isPlainObject(json)) throw new ProtoJsonError(`${path}: not a JSON object`);
  const table = fieldsByJsonName(type);
  const message = {};
  const oneofs = new Map();
  for (const [key, value] of Object.entries(json)) {
    const field = table.get(key);
    const fieldPath = `${path}.${key}`;
    if (field === undefined) throw new ProtoJsonError(`${fieldPath}: no such field`);
    if (Object.hasOwn(message, field.name)) {
      throw new ProtoJsonError(`${fieldPath}: the field is given twice`);
    }
    if (value === null) continue;  // null is the default value
    if (field.oneof !== null) {
      if (oneofs.has(field.oneof)) {
        throw new ProtoJsonError(`${fieldPath}: another member of oneof ${field.oneof} is set`);
      }
      oneofs.set(field.oneof, field.name);
    }
    if (field.rule === "repeated") {
      if (!Array.isArray(value)) throw new ProtoJsonError(`${fieldPath}: not a list`);
      message[field.name] = value.map((item, index) => {
        if (item === null) throw new ProtoJsonError(`${fieldPath}[${index}]: null in a list`);
        return readScalar(field, item, `${fieldPath}[${index}]`);
      });
    } else {
      message[field.name] = readScalar(field, value, fieldPath);
    }
  }
  return message;
}

class ByteWriter {
  constructor() {
    this.buffer = new Uint8Array(64);
    this.length = 0;
  }

  reserve(extra) {
    if (this.length + extra <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + extra) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  byte(value) {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  bytes(array) {
    this.reserve(array.length);
    this.buffer.set(array, this.length);
    this.length += array.length;
  }

  varint(value) {
    if (typeof value === "number" && value >= 0 && value <= INT32_MAX) {
      while (value > 0x7f) {
        this.byte((value & 0x7f) | 0x80);
        value >>>= 7;
      }
      this.byte(value);
      return;
    }
    // Negative or wide values: their 64-bit two's complement (10 bytes when negative).
    let wide = BigInt.asUintN(64, BigInt(value));
    while (wide > 0x7fn) {
      this.byte(Number(wide & 0x7fn) | 0x80);
      wide >>= 7n;
    }
    this.byte(Number(wide));
  }

  result() {
    return this.buffer.slice(0, this.length);
  }
}

const TEXT = new TextEncoder();

function zigzag32(value) {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

function zigzag64(value) {
  return BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
}

function writeVarintValue(writer, kind, value) {
  if (kind === "bool") writer.varint(value ? 1 : 0);
  else if (kind === "sint32") writer.varint(zigzag32(value));
  else if (kind === "sint64") writer.varint(zigzag64(value));
  else writer.varint(value);
}

function isDefault(kind, value) {
  switch (kind) {
    case "bool": return value === false;
    case "string": return value.length === 0;
    case "bytes": return value.length === 0;
    case "uint64":
    case "int64":
    case "sint64": return value === 0n;
    default: return value === 0;
  }
}

function writeLengthDelimited(writer, number, payload) {
  writer.varint((number << 3) | 2);
  writer.varint(payload.length);
  writer.bytes(payload);
}

function writeSingle(writer, field, value) {
  const { number, kind } = field;
  if (kind === "message") writeLengthDelimited(writer, number, encodeMessage(value, field.refType));
  else if (kind === "string") writeLengthDelimited(writer, number, TEXT.encode(value));
  else if (kind === "bytes") writeLengthDelimited(writer, number, value);
  else {
    writer.varint(number << 3);
    writeVarintValue(writer, kind, value);
  }
}

/** The canonical proto3 bytes of `message` (as readMessage returns it) of `type`. */
export function encodeMessage(message, type) {
  const writer = new ByteWriter();
  for (const [name, number, kind, refType, rule, oneof] of MESSAGES[type]) {
    if (!Object.hasOwn(message, name)) continue;
    const value = message[name];
    const field = { number, kind, refType };
    if (rule === "repeated") {
      if (value.length === 0) continue;
      if (PACKABLE.has(kind)) {
        const packed = new ByteWriter();
        for (const item of value) writeVarintValue(packed, kind, item);
        writeLengthDelimited(writer, number, packed.result());
      } else {
        for (const item of value) writeSingle(writer, field, item);
      }
    } else if (rule === "optional" || oneof !== null || kind === "message" || !isDefault(kind, value)) {
      writeSingle(writer, field, value);
    }
  }
  return writer.result();
}
