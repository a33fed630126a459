// Values crossing the sandbox boundary, guest side (loaded when a run's input or result is
// more than a primitive). The host's mirror is
// host/marshal/guest-values.ts; both implement this one format:
//
//   JSON text, plus a list of ArrayBuffers. JSON carries plain data; what JSON cannot
//   carry is an object with the single key "$sbx" naming its kind:
//     { "$sbx": "undefined" }             undefined (also array holes)
//     { "$sbx": "number", "v": "NaN" }    NaN, Infinity, -Infinity, -0
//     { "$sbx": "bytes", "i": 0 }         bytes: buffers[i] (Uint8Array on arrival)
//     { "$sbx": "object", "v": { … } }    an object that itself has a "$sbx" key
//   Dates cross as ISO strings (invalid dates as null), objects with toJSON as its result.
//   Functions, symbols, BigInts, cycles, Map/Set and other class instances do not cross:
//   the error names the path to the offending value.
import {
  ArrayBufferCtor,
  DateCtor,
  ObjectPrototype,
  TypeErrorCtor,
  Uint8ArrayCtor,
  arrayBufferSlice,
  dateGetTime,
  dateToISOString,
  defineProperty,
  getPrototypeOf,
  isArray,
  isArrayBufferView,
  isFinite,
  jsonParse,
  jsonStringify,
  objectIs,
  objectKeys,
  reflectApply,
} from "scriptbox:intrinsics";

// This module is loaded after the script has run, so it calls no method a script could
// have poisoned (Array.prototype.push, Function.prototype.call, …): index writes and
// captured functions only.
function contains(list: unknown[], item: unknown): boolean {
  for (let i = 0; i < list.length; i++) if (list[i] === item) return true;
  return false;
}

const MARK = "$sbx";

function refuse(path: string, what: string, hint = ""): never {
  throw new TypeErrorCtor(`${path}: ${what} cannot cross the sandbox boundary${hint ? ` (${hint})` : ""}`);
}

function constructorName(value: object): string {
  try {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === "string" && name !== "" ? name : "Object";
  } catch {
    return "Object";
  }
}

function encode(value: unknown, path: string, ancestors: unknown[], buffers: ArrayBuffer[]): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return isFinite(value) && !objectIs(value, -0) ? value : { [MARK]: "number", v: objectIs(value, -0) ? "-0" : `${value}` };
    case "undefined":
      return { [MARK]: "undefined" };
    case "bigint":
      return refuse(path, "a BigInt", "convert it to a string or a number");
    case "symbol":
      return refuse(path, "a symbol");
    case "function":
      return refuse(path, "a function");
  }
  if (value === null) return null;
  const object = value as object;
  if (contains(ancestors, object)) refuse(path, "a value with a cycle");
  if (object instanceof DateCtor) {
    return isFinite(dateGetTime(object)) ? dateToISOString(object) : null;
  }
  if (object instanceof ArrayBufferCtor) {
    buffers[buffers.length] = arrayBufferSlice(object, 0);
    return { [MARK]: "bytes", i: buffers.length - 1 };
  }
  if (isArrayBufferView(object)) {
    const view = object as ArrayBufferView;
    buffers[buffers.length] = arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength);
    return { [MARK]: "bytes", i: buffers.length - 1 };
  }
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return encode(reflectApply(toJSON, object, []), path, ancestors, buffers);
  const depth = ancestors.length;
  ancestors[depth] = object;
  try {
    if (isArray(object)) {
      const out: unknown[] = [];
      for (let i = 0; i < object.length; i++) out[i] = encode(object[i], `${path}[${i}]`, ancestors, buffers);
      return out;
    }
    const proto = getPrototypeOf(object);
    if (proto !== ObjectPrototype && proto !== null) {
      const name = constructorName(object);
      const hint =
        name === "Map" ? "use Object.fromEntries(map)" : name === "Set" ? "use Array.from(set)" : name === "Promise" ? "await it" : "return plain data";
      return refuse(path, `a ${name} object`, hint);
    }
    const out: Record<string, unknown> = {};
    const keys = objectKeys(object);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const encoded = encode((object as Record<string, unknown>)[key], `${path}.${key}`, ancestors, buffers);
      // A "__proto__" key is data: assignment would set the prototype and lose it.
      if (key === "__proto__") defineProperty(out, key, { value: encoded, enumerable: true, writable: true, configurable: true });
      else out[key] = encoded;
    }
    return MARK in out ? { [MARK]: "object", v: out } : out;
  } finally {
    ancestors.length = depth;
  }
}

/** Encodes a guest value for the host: [json, buffers]. Throws a TypeError naming what cannot cross. */
export function serialize(value: unknown, rootName: string): [string, ArrayBuffer[]] {
  const buffers: ArrayBuffer[] = [];
  const json = jsonStringify(encode(value, rootName, [], buffers)) as string;
  return [json, buffers];
}

function decode(value: unknown, buffers: ArrayBuffer[]): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = decode(value[i], buffers);
    return value;
  }
  const record = value as Record<string, unknown>;
  const kind = record[MARK];
  if (kind !== undefined) {
    if (kind === "undefined") return undefined;
    if (kind === "number") return +(record.v as string);
    if (kind === "bytes") return new Uint8ArrayCtor(buffers[record.i as number]!);
    if (kind === "object") return decodeProperties(record.v as Record<string, unknown>, buffers);
  }
  return decodeProperties(record, buffers);
}

/** An object's own properties; its own "$sbx" key (if any) is data, not a marker. */
function decodeProperties(record: Record<string, unknown>, buffers: ArrayBuffer[]): Record<string, unknown> {
  const keys = objectKeys(record);
  for (let i = 0; i < keys.length; i++) record[keys[i]!] = decode(record[keys[i]!], buffers);
  return record;
}

/** Decodes a value the host encoded (input, plugin call arguments). */
export function deserialize(json: string, buffers: ArrayBuffer[]): unknown {
  return decode(jsonParse(json), buffers);
}
