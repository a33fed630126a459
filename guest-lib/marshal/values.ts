// Values crossing the sandbox boundary, guest side (loaded when a run's input or result is
// more than a primitive). The host's mirror is
// host/marshal/crossing-values.ts; both implement this one format:
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
  defineData,
  getPrototypeOf,
  hasOwn,
  objectCreate,
  setPrototypeOf,
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
// have poisoned (Array.prototype.push, Function.prototype.call, …): captured functions only.
// What it builds for JSON.stringify has no prototype (objects from Object.create(null),
// arrays re-parented to null), so stringifying finds no `toJSON` and writing an element
// finds no setter a script put on Object.prototype or Array.prototype; an own "__proto__"
// key stays a key.
function plainArray(): unknown[] {
  const out: unknown[] = [];
  setPrototypeOf(out, null);
  return out;
}
function pushTo(list: unknown[], item: unknown): number {
  defineData(list, list.length, item);
  return list.length - 1;
}
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

/** `{ "$sbx": kind, [field]: value }`, prototype-free like everything encode builds. */
function marker(kind: string, field?: string, value?: unknown): Record<string, unknown> {
  const out = objectCreate(null) as Record<string, unknown>;
  defineData(out, MARK, kind);
  if (field !== undefined) defineData(out, field, value);
  return out;
}

function encode(value: unknown, path: string, ancestors: unknown[], buffers: ArrayBuffer[]): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return isFinite(value) && !objectIs(value, -0) ? value : marker("number", "v", objectIs(value, -0) ? "-0" : `${value}`);
    case "undefined":
      return marker("undefined");
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
  if (object instanceof ArrayBufferCtor) return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(object, 0)));
  if (isArrayBufferView(object)) {
    const view = object as ArrayBufferView;
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength)));
  }
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return encode(reflectApply(toJSON, object, []), path, ancestors, buffers);
  const depth = ancestors.length;
  ancestors[depth] = object;
  try {
    if (isArray(object)) {
      const out = plainArray();
      for (let i = 0; i < object.length; i++) defineData(out, i, encode(object[i], `${path}[${i}]`, ancestors, buffers));
      return out;
    }
    const proto = getPrototypeOf(object);
    if (proto !== ObjectPrototype && proto !== null) {
      const name = constructorName(object);
      const hint =
        name === "Map" ? "use Object.fromEntries(map)" : name === "Set" ? "use Array.from(set)" : name === "Promise" ? "await it" : "return plain data";
      return refuse(path, `a ${name} object`, hint);
    }
    const out = objectCreate(null) as Record<string, unknown>;
    const keys = objectKeys(object);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      defineData(out, key, encode((object as Record<string, unknown>)[key], `${path}.${key}`, ancestors, buffers));
    }
    return hasOwn(out, MARK) ? marker("object", "v", out) : out;
  } finally {
    ancestors.length = depth;
  }
}

/** Encodes a guest value for the host: [json, buffers]. Throws a TypeError naming what cannot cross. */
export function serialize(value: unknown, rootName: string): [string, ArrayBuffer[]] {
  const buffers = plainArray() as ArrayBuffer[];
  const json = jsonStringify(encode(value, rootName, plainArray(), buffers)) as string;
  // The host reads both by index: own data properties, no getters on the way.
  const pair = plainArray();
  defineData(pair, 0, json);
  defineData(pair, 1, buffers);
  return pair as [string, ArrayBuffer[]];
}

function decode(value: unknown, buffers: ArrayBuffer[]): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = decode(value[i], buffers);
    return value;
  }
  const record = value as Record<string, unknown>;
  const kind = hasOwn(record, MARK) ? record[MARK] : undefined;
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
  // JSON.parse made every key an own data property ("__proto__" included): writes stay own.
  const keys = objectKeys(record);
  for (let i = 0; i < keys.length; i++) defineData(record, keys[i]!, decode(record[keys[i]!], buffers));
  return record;
}

/** Decodes a value the host encoded (input, plugin call arguments). */
export function deserialize(json: string, buffers: ArrayBuffer[]): unknown {
  return decode(jsonParse(json), buffers);
}
