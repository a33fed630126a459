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
import bridge from "scriptbox:bridge";
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

const MARK = "$sbx";

/**
 * Where the value being encoded sits: the root's name, then, for a value at depth d, the
 * containers above it (ancestors[0..d-1], for cycles) and the key or index under each
 * (keys[0..d-1]). Entries past the depth are left over from siblings and ignored (no
 * truncation per container). The path text is only built for an error: a string per
 * element (`args[0][123456]`) made a 1,000,000-element argument cost seconds of the
 * script's CPU time (found by review).
 */
interface Path {
  root: string;
  ancestors: unknown[];
  keys: (string | number)[];
  /** At least this many bytes of JSON (and buffers) so far, and the most allowed (serializeWithin). */
  size: number;
  max: number;
  /** The counted size of each output container larger than RECORDED (writeJson groups members by it). */
  sizes: Map<object, number>;
}

/**
 * The most counted bytes one JSON.stringify call is given (writeJson): a value counted
 * larger is written in parts. Counted bytes are a lower bound of the JSON (escapes write
 * up to 6 bytes per character, a number up to 24); QuickJS writes 10-20 ns per character
 * here, ~100 ns per number, ~400 ns per control character (escaped with a printf), so one
 * call stays within ~7 ms. Between calls writeParts asks the host whether the run is past a
 * limit (bridge.checkLimits): the engine's own interrupt check comes once per 10,000 calls
 * and back-edges, which a loop over such parts would take minutes to reach.
 */
const PART = 16384;
/** Output containers counted larger than this have their size recorded; smaller ones count as this much. */
const RECORDED = 512;

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

/**
 * The counted JSON size of a value written as it is (a finite number other than -0, a
 * string, a boolean, null; as encode counts them), or -1 for anything else.
 */
function plainSize(value: unknown): number {
  switch (typeof value) {
    case "number":
      // Finite (NaN and the infinities give NaN here) and not -0.
      return value - value === 0 && (value !== 0 || 1 / value > 0) ? 1 : -1;
    case "string":
      return value.length + 2;
    case "boolean":
      return 4;
    case "object":
      return value === null ? 4 : -1;
    default:
      return -1;
  }
}

function encode(value: unknown, path: Path, depth: number, buffers: ArrayBuffer[]): unknown {
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
      return refuse(path, depth, "a BigInt", "convert it to a string or a number");
    case "symbol":
      return refuse(path, depth, "a symbol");
    case "function":
      return refuse(path, depth, "a function");
  }
  if (value === null) {
    charge(path, 4);
    return null;
  }
  const object = value as object;
  const ancestors = path.ancestors;
  for (let i = 0; i < depth; i++) if (ancestors[i] === object) refuse(path, depth, "a value with a cycle");
  const proto = getPrototypeOf(object);
  // A plain object's chain holds no Date or ArrayBuffer prototype: two instanceof walks saved per object.
  const plainProto = proto === ObjectPrototype || proto === null;
  if (!plainProto && object instanceof DateCtor) {
    if (!isFinite(dateGetTime(object))) {
      charge(path, 4);
      return null;
    }
    const iso = dateToISOString(object);
    charge(path, iso.length + 2);
    return iso;
  }
  if (!plainProto && object instanceof ArrayBufferCtor) {
    charge(path, (object as ArrayBuffer).byteLength + 20);
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(object, 0)));
  }
  if (isArrayBufferView(object)) {
    const view = object as ArrayBufferView;
    charge(path, view.byteLength + 20);
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength)));
  }
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return encode(reflectApply(toJSON, object, []), path, depth, buffers);
  ancestors[depth] = object;
  const keysOnPath = path.keys;
  const sizeBefore = path.size;
  if (isArray(object)) {
    charge(path, 2);
    const out = plainArray();
    // A prototype-free array: an index store finds no setter (see plainArray), and is
    // cheaper for QuickJS than a defineProperty with a descriptor object per element.
    for (let i = 0; i < object.length; i++) {
      const item: unknown = object[i];
      // Values written as they are, counted here: a call of encode (and of charge) per
      // element was most of the cost of an array of numbers or strings.
      const bytes = plainSize(item);
      if (bytes >= 0) {
        if ((path.size += i > 0 ? bytes + 1 : bytes) > path.max) throw TOO_LARGE;
        out[i] = item;
        continue;
      }
      if (i > 0) charge(path, 1);
      keysOnPath[depth] = i;
      out[i] = encode(item, path, depth + 1, buffers);
    }
    recordSize(path, out, path.size - sizeBefore);
    return out;
  }
  if (!plainProto) {
    const name = constructorName(object);
    const hint =
      name === "Map" ? "use Object.fromEntries(map)" : name === "Set" ? "use Array.from(set)" : name === "Promise" ? "await it" : "return plain data";
    return refuse(path, depth, `a ${name} object`, hint);
  }
  // Prototype-free: a plain assignment finds no setter a script put on Object.prototype,
  // and "__proto__" becomes an own key (cheaper than defineData's descriptor per key).
  const out = objectCreate(null) as Record<string, unknown>;
  const keys = objectKeys(object);
  charge(path, 2);
  let hasMark = false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const keyBytes = key.length + (i > 0 ? 4 : 3); // "key": and the comma before it
    const item: unknown = (object as Record<string, unknown>)[key];
    const bytes = plainSize(item);
    if (bytes >= 0) {
      if ((path.size += keyBytes + bytes) > path.max) throw TOO_LARGE;
      out[key] = item;
    } else {
      charge(path, keyBytes);
      keysOnPath[depth] = key;
      out[key] = encode(item, path, depth + 1, buffers);
    }
    if (key === MARK) hasMark = true;
  }
  recordSize(path, out, path.size - sizeBefore);
  if (!hasMark) return out;
  const wrapped = marker("object", "v", out);
  recordSize(path, wrapped, path.size - sizeBefore + 22); // {"$sbx":"object","v":…}
  return wrapped;
}

/**
 * Encodes a guest value for the host: [json, buffers], the JSON text as one string or, when
 * it is larger than a few PARTs, as a list of parts the host joins (host/worker/realm.ts
 * jsonText): joining 54 MB here was one native call of ~140 ms, past the CPU limit's grace.
 * Throws a TypeError naming what cannot cross.
 */
export function serialize(value: unknown, rootName: string): [string | string[], ArrayBuffer[]] {
  const path = newPath(rootName, Infinity);
  const buffers = plainArray() as ArrayBuffer[];
  const encoded = encode(value, path, 0, buffers);
  return pairOf(path.size <= PART ? (jsonStringify(encoded) as string) : writeParts(encoded, path.sizes), buffers) as [string | string[], ArrayBuffer[]];
}

/**
 * serialize, or [null, size] as soon as the JSON and buffers are sure to exceed `maxBytes`
 * (size: the bytes counted by then, a lower bound). Checked while encoding, before
 * JSON.stringify: a 2,000,000-element sparse array, encoded whole, made a 42 MB JSON
 * text, and its stringify (a native call the interrupt does not reach) outlived the CPU
 * limit and its grace, so the watchdog terminated the worker with every sandbox on it.
 * The JSON is one string here (a host call's arguments: joined in one native call, of at
 * most maxHostCallBytes, 8 MiB by default: ~20 ms).
 */
export function serializeWithin(value: unknown, rootName: string, maxBytes: number): [string, ArrayBuffer[]] | [null, number] {
  const path = newPath(rootName, maxBytes);
  const buffers = plainArray() as ArrayBuffer[];
  let encoded: unknown;
  try {
    encoded = encode(value, path, 0, buffers);
  } catch (error) {
    if (error !== TOO_LARGE) throw error;
    return pairOf(null, path.size) as [null, number];
  }
  const json = path.size <= PART ? (jsonStringify(encoded) as string) : arrayJoin(writeParts(encoded, path.sizes), "");
  return pairOf(json, buffers) as [string, ArrayBuffer[]];
}

/** A prototype-free pair: the host and the stubs read both by index, no getters on the way. */
function pairOf(first: unknown, second: unknown): [unknown, unknown] {
  const pair = plainArray();
  defineData(pair, 0, first);
  defineData(pair, 1, second);
  return pair as [unknown, unknown];
}

function newPath(root: string, max: number): Path {
  return { root, ancestors: plainArray(), keys: plainArray() as (string | number)[], size: 0, max, sizes: new MapCtor<object, number>() };
}

function recordSize(path: Path, out: object, size: number): void {
  if (size > RECORDED) mapSet(path.sizes, out, size);
}

// The shared markers, at their counted sizes (they are never recorded: see encode).
const SHARED_MARKERS: [object, number][] = [
  [UNDEFINED, 20],
  [NEGATIVE_ZERO, 26],
  [NOT_A_NUMBER, 27],
  [INFINITY, 32],
  [NEGATIVE_INFINITY, 33],
];

/**
 * JSON text of what encode built, as JSON.stringify writes it, in parts, none of them one
 * native call over more than about PART counted bytes: JSON.stringify runs in C, where the
 * interrupt does not reach, and 2,000,000 `-0` (54 MB of JSON), or a string of 30,000,000
 * control characters (180 MB) given to it at the end of a run's CPU budget, outlived the
 * limit's grace, so the watchdog terminated the worker and every sandbox on it (found by
 * review). Containers are split between members, by the sizes encode recorded; strings
 * between characters (never inside a surrogate pair).
 */
function writeParts(encoded: unknown, sizes: Map<object, number>): string[] {
  for (let i = 0; i < SHARED_MARKERS.length; i++) mapSet(sizes, SHARED_MARKERS[i]![0], SHARED_MARKERS[i]![1]);
  const parts = plainArray() as string[];
  writeJson(encoded, sizes, parts);
  return parts;
}

function writeJson(node: unknown, sizes: Map<object, number>, parts: string[]): void {
  if (typeof node === "string") return writeString(node, parts);
  const size = typeof node === "object" && node !== null ? (mapGet(sizes, node) as number | undefined) : undefined;
  if (size === undefined || size <= PART) {
    parts[parts.length] = jsonStringify(node) as string;
    bridge.checkLimits();
  } else if (isArray(node)) writeArray(node, sizes, parts);
  else writeObject(node as Record<string, unknown>, sizes, parts);
}

/** A member's counted size: a container encode recorded, a string, or at most RECORDED. */
function countedSize(member: unknown, sizes: Map<object, number>): number {
  if (typeof member === "string") return member.length + 2;
  if (typeof member !== "object" || member === null) return 5;
  const size = mapGet(sizes, member) as number | undefined;
  return size === undefined ? RECORDED : size;
}

function writeArray(node: unknown[], sizes: Map<object, number>, parts: string[]): void {
  parts[parts.length] = "[";
  const n = node.length;
  let start = 0; // the first member not written yet
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const member = node[i];
    // Numbers, booleans and null inline: a call per member was a fifth of a 100,000-number result.
    const size = typeof member === "object" || typeof member === "string" ? countedSize(member, sizes) : 5;
    if (size > PART) {
      writeArrayRun(node, start, i, parts);
      if (i > 0) parts[parts.length] = ",";
      writeJson(node[i], sizes, parts);
      start = i + 1;
      bytes = 0;
    } else {
      if (bytes + size > PART) {
        writeArrayRun(node, start, i, parts);
        start = i;
        bytes = 0;
      }
      bytes += size;
    }
  }
  writeArrayRun(node, start, n, parts);
  parts[parts.length] = "]";
}

/** Members start..end-1 of an array, with the comma before them, in one JSON.stringify call. */
function writeArrayRun(node: unknown[], start: number, end: number, parts: string[]): void {
  if (end === start) return;
  const run = arraySlice(node, start, end);
  setPrototypeOf(run, null); // as encode's own arrays: JSON.stringify finds no toJSON on it
  const text = jsonStringify(run) as string;
  parts[parts.length] = `${start > 0 ? "," : ""}${stringSlice(text, 1, text.length - 1)}`;
  bridge.checkLimits();
}

function writeObject(node: Record<string, unknown>, sizes: Map<object, number>, parts: string[]): void {
  parts[parts.length] = "{";
  const keys = objectKeys(node);
  let run: Record<string, unknown> | null = null; // members not written yet, in key order
  let bytes = 0;
  let wrote = false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = node[key];
    const size = key.length + 4 + countedSize(value, sizes);
    if (size > PART || bytes + size > PART) {
      wrote = writeObjectRun(run, wrote, parts);
      run = null;
      bytes = 0;
    }
    if (size > PART) {
      if (wrote) parts[parts.length] = ",";
      writeString(key, parts);
      parts[parts.length] = ":";
      writeJson(value, sizes, parts);
      wrote = true;
      continue;
    }
    // Keys keep their order: a run holds consecutive keys, and its integer-like keys (which
    // an object lists first) were first among them already.
    if (run === null) run = objectCreate(null) as Record<string, unknown>;
    defineData(run, key, value);
    bytes += size;
  }
  writeObjectRun(run, wrote, parts);
  parts[parts.length] = "}";
}

/** A run of an object's members in one JSON.stringify call; whether anything was written in the object by now. */
function writeObjectRun(run: Record<string, unknown> | null, wrote: boolean, parts: string[]): boolean {
  if (run === null) return wrote;
  const text = jsonStringify(run) as string;
  parts[parts.length] = `${wrote ? "," : ""}${stringSlice(text, 1, text.length - 1)}`;
  bridge.checkLimits();
  return true;
}

function writeString(text: string, parts: string[]): void {
  const n = text.length;
  if (n <= PART) {
    parts[parts.length] = jsonStringify(text) as string;
    bridge.checkLimits();
    return;
  }
  parts[parts.length] = '"';
  for (let i = 0; i < n; ) {
    let end = i + PART < n ? i + PART : n;
    // Not between the halves of a surrogate pair: each would be written alone, escaped.
    // (A comparison, not charCodeAt: this module loads after the script, which may have
    // replaced String.prototype's methods.)
    if (end < n) {
      const last = stringSlice(text, end - 1, end);
      if (last >= "\ud800" && last <= "\udbff") end--;
    }
    const json = jsonStringify(stringSlice(text, i, end)) as string;
    parts[parts.length] = stringSlice(json, 1, json.length - 1);
    bridge.checkLimits();
    i = end;
  }
  parts[parts.length] = '"';
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
