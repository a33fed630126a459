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
  stringSlice,
  uncurry,
  MapCtor,
  mapGet,
  mapSet,
} from "scriptbox:intrinsics";

// Captured when this module loads (the core puts the pristine builtins back while a
// module's factory runs): used by writeJson on the prototype-free arrays encode builds.
const arrayJoin = uncurry(Array.prototype.join as (separator?: string) => string);
const arraySlice = uncurry(Array.prototype.slice as (start?: number, end?: number) => unknown[]);

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

/**
 * Where the value being encoded sits: the root's name, then one key or index per level
 * (keys[d] is the key under ancestors[d]). The path text is only built for an error: a
 * string per element (`args[0][123456]`) made a 1,000,000-element argument cost seconds
 * of the script's CPU time (found by review).
 */
interface Path {
  root: string;
  keys: (string | number)[];
  /** At least this many bytes of JSON (and buffers) so far, and the most allowed (serializeWithin). */
  size: number;
  max: number;
  /** Output containers writeJson must not stringify in one call: LARGE (too many members) or HOLDS_LARGE. */
  large: Map<object, number>;
  largeCount: number;
}

/** An array or object with more members than this is written SLICE members at a time (writeJson). */
const SLICE = 4096;
const LARGE = 1;
const HOLDS_LARGE = 2;

/** Thrown by encode past `max`: caught by serializeWithin, never seen by a script. */
const TOO_LARGE = { tooLarge: true };

/** Counts `bytes` more of the output (a lower bound of what JSON.stringify will write). */
function charge(path: Path, bytes: number): void {
  if ((path.size += bytes) > path.max) throw TOO_LARGE;
}

function pathText(path: Path, depth: number): string {
  let text = path.root;
  for (let i = 0; i < depth; i++) {
    const key = path.keys[i]!;
    text += typeof key === "number" ? `[${key}]` : `.${key}`;
  }
  return text;
}

function refuse(path: Path, depth: number, what: string, hint = ""): never {
  throw new TypeErrorCtor(`${pathText(path, depth)}: ${what} cannot cross the sandbox boundary${hint ? ` (${hint})` : ""}`);
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

// The markers of values without parts, made once and shared (JSON.stringify writes a shared
// object each time it meets it): a sparse array's holes each made one before.
const UNDEFINED = marker("undefined");
const NEGATIVE_ZERO = marker("number", "v", "-0");
const NOT_A_NUMBER = marker("number", "v", "NaN");
const INFINITY = marker("number", "v", "Infinity");
const NEGATIVE_INFINITY = marker("number", "v", "-Infinity");

function numberMarker(value: number): Record<string, unknown> {
  if (objectIs(value, -0)) return NEGATIVE_ZERO;
  if (value !== value) return NOT_A_NUMBER;
  return value > 0 ? INFINITY : NEGATIVE_INFINITY;
}

function encode(value: unknown, path: Path, ancestors: unknown[], buffers: ArrayBuffer[]): unknown {
  switch (typeof value) {
    // Each value is counted at the JSON it will be written as (at least: a string's escapes,
    // a number's digits beyond the first are not counted), without the comma before it (the
    // container counts those).
    case "string":
      charge(path, value.length + 2);
      return value;
    case "boolean":
      charge(path, 4);
      return value;
    case "number":
      if (isFinite(value) && !objectIs(value, -0)) {
        charge(path, 1);
        return value;
      }
      // {"$sbx":"number","v":"-0"}, and with "NaN", "Infinity", "-Infinity".
      charge(path, objectIs(value, -0) ? 26 : value !== value ? 27 : value > 0 ? 32 : 33);
      return numberMarker(value);
    case "undefined":
      charge(path, 20); // {"$sbx":"undefined"}
      return UNDEFINED;
    case "bigint":
      return refuse(path, ancestors.length, "a BigInt", "convert it to a string or a number");
    case "symbol":
      return refuse(path, ancestors.length, "a symbol");
    case "function":
      return refuse(path, ancestors.length, "a function");
  }
  if (value === null) {
    charge(path, 4);
    return null;
  }
  const object = value as object;
  if (contains(ancestors, object)) refuse(path, ancestors.length, "a value with a cycle");
  if (object instanceof DateCtor) {
    if (!isFinite(dateGetTime(object))) {
      charge(path, 4);
      return null;
    }
    const iso = dateToISOString(object);
    charge(path, iso.length + 2);
    return iso;
  }
  if (object instanceof ArrayBufferCtor) {
    charge(path, (object as ArrayBuffer).byteLength + 20);
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(object, 0)));
  }
  if (isArrayBufferView(object)) {
    const view = object as ArrayBufferView;
    charge(path, view.byteLength + 20);
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength)));
  }
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return encode(reflectApply(toJSON, object, []), path, ancestors, buffers);
  const depth = ancestors.length;
  ancestors[depth] = object;
  const keysOnPath = path.keys;
  try {
    const largeBefore = path.largeCount;
    if (isArray(object)) {
      charge(path, 2);
      const out = plainArray();
      // A prototype-free array: an index store finds no setter (see plainArray), and is
      // cheaper for QuickJS than a defineProperty with a descriptor object per element.
      for (let i = 0; i < object.length; i++) {
        if (i > 0) charge(path, 1);
        keysOnPath[depth] = i;
        out[i] = encode(object[i], path, ancestors, buffers);
      }
      markSize(path, out, out.length, largeBefore);
      return out;
    }
    const proto = getPrototypeOf(object);
    if (proto !== ObjectPrototype && proto !== null) {
      const name = constructorName(object);
      const hint =
        name === "Map" ? "use Object.fromEntries(map)" : name === "Set" ? "use Array.from(set)" : name === "Promise" ? "await it" : "return plain data";
      return refuse(path, depth, `a ${name} object`, hint);
    }
    const out = objectCreate(null) as Record<string, unknown>;
    const keys = objectKeys(object);
    charge(path, 2);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      charge(path, key.length + (i > 0 ? 4 : 3)); // "key": and the comma before it
      keysOnPath[depth] = key;
      defineData(out, key, encode((object as Record<string, unknown>)[key], path, ancestors, buffers));
    }
    markSize(path, out, keys.length, largeBefore);
    if (!hasOwn(out, MARK)) return out;
    const wrapped = marker("object", "v", out);
    if (path.largeCount > largeBefore) mapSet(path.large, wrapped, HOLDS_LARGE);
    return wrapped;
  } finally {
    ancestors.length = depth;
    keysOnPath.length = depth;
  }
}

/** Encodes a guest value for the host: [json, buffers]. Throws a TypeError naming what cannot cross. */
export function serialize(value: unknown, rootName: string): [string, ArrayBuffer[]] {
  return encodeAlong(value, newPath(rootName, Infinity));
}

/**
 * serialize, or [null, size] as soon as the JSON and buffers are sure to exceed `maxBytes`
 * (size: the bytes counted by then, a lower bound). Checked while encoding, before
 * JSON.stringify: a 2,000,000-element sparse array, encoded whole, made a 42 MB JSON
 * text, and its stringify (a native call the interrupt does not reach) outlived the CPU
 * limit and its grace, so the watchdog terminated the worker with every sandbox on it.
 */
export function serializeWithin(value: unknown, rootName: string, maxBytes: number): [string, ArrayBuffer[]] | [null, number] {
  const path = newPath(rootName, maxBytes);
  try {
    return encodeAlong(value, path);
  } catch (error) {
    if (error !== TOO_LARGE) throw error;
    const tooLarge = plainArray();
    defineData(tooLarge, 0, null);
    defineData(tooLarge, 1, path.size);
    return tooLarge as [null, number];
  }
}

function newPath(root: string, max: number): Path {
  return { root, keys: plainArray() as (string | number)[], size: 0, max, large: new MapCtor<object, number>(), largeCount: 0 };
}

/** Records a container writeJson must write in parts: one with more than SLICE members, or one holding such a container. */
function markSize(path: Path, out: object, members: number, largeBefore: number): void {
  if (members > SLICE) {
    mapSet(path.large, out, LARGE);
    path.largeCount++;
  } else if (path.largeCount > largeBefore) {
    mapSet(path.large, out, HOLDS_LARGE);
  }
}

/**
 * JSON text of what encode built, as JSON.stringify writes it, but never one native call
 * over more than SLICE members of a container: JSON.stringify runs in C, where the
 * interrupt does not reach, and 2,000,000 array members (54 MB of JSON) outlived a run's
 * CPU limit and its grace, so the watchdog terminated the worker and every sandbox on it
 * (found by review). The parts are joined once at the end.
 */
function writeJson(node: unknown, large: Map<object, number>, parts: string[]): void {
  const kind = typeof node === "object" && node !== null ? mapGet(large, node) : undefined;
  if (kind === undefined) {
    parts[parts.length] = jsonStringify(node) as string;
    return;
  }
  if (isArray(node)) {
    parts[parts.length] = "[";
    const n = node.length;
    for (let i = 0; i < n; ) {
      if (i > 0) parts[parts.length] = ",";
      // A run of members with nothing large in them goes in one call, at most SLICE long.
      let end = i;
      while (end < n && end - i < SLICE && !isMarked(large, node[end])) end++;
      if (end === i) {
        writeJson(node[i], large, parts);
        i++;
        continue;
      }
      const run = arraySlice(node, i, end);
      setPrototypeOf(run, null); // as encode's own arrays: JSON.stringify finds no toJSON on it
      const text = jsonStringify(run) as string;
      parts[parts.length] = stringSlice(text, 1, text.length - 1);
      i = end;
    }
    parts[parts.length] = "]";
    return;
  }
  const record = node as Record<string, unknown>;
  const keys = objectKeys(record);
  parts[parts.length] = "{";
  for (let i = 0; i < keys.length; i++) {
    parts[parts.length] = `${i > 0 ? "," : ""}${jsonStringify(keys[i]) as string}:`;
    writeJson(record[keys[i]!], large, parts);
  }
  parts[parts.length] = "}";
}

function isMarked(large: Map<object, number>, value: unknown): boolean {
  return typeof value === "object" && value !== null && mapGet(large, value) !== undefined;
}

function encodeAlong(value: unknown, path: Path): [string, ArrayBuffer[]] {
  const buffers = plainArray() as ArrayBuffer[];
  const encoded = encode(value, path, plainArray(), buffers);
  let json: string;
  if (path.largeCount === 0) json = jsonStringify(encoded) as string;
  else {
    const parts = plainArray() as string[];
    writeJson(encoded, path.large, parts);
    json = arrayJoin(parts, "");
  }
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
