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
const ArrayPrototype = Array.prototype;

const ownNames = Object.getOwnPropertyNames;

/**
 * Why JSON writing would call the script, or null. QuickJS's JSON.stringify keeps the
 * containers it is inside in an internal array, whose stores find a setter a script put
 * at an index of Array.prototype or Object.prototype (or a Proxy put between them), which
 * then gets the objects this module built: it could grow a part after it was weighed
 * (100,000 subnormal numbers added to `{ a: -0 }`: one call of seconds, the worker
 * terminated), or forge a marker (found by review). Checked at every index, not up to the
 * value's depth: $sbx wrappers and the holder add levels (review). No data needs such a
 * property, so a value does not cross while one is there.
 */
function prototypeProblem(): string | null {
  // Array.prototype is an array: an index defined on it makes its length non-zero, so its
  // names are listed only then (a length set by hand, or left after a delete, is no index).
  const onArray = ArrayPrototype.length === 0 ? null : indexName(ArrayPrototype);
  if (onArray !== null) return `defined an index property ("${onArray}") on Array.prototype`;
  if (getPrototypeOf(ArrayPrototype) !== ObjectPrototype) return "replaced the prototype of Array.prototype";
  const onObject = indexName(ObjectPrototype);
  return onObject === null ? null : `defined an index property ("${onObject}") on Object.prototype`;
}

/** The first own property name of `target` that is an index ("0", "17"; not "01" or "1.0"), or null. */
function indexName(target: object): string | null {
  const names = ownNames(target);
  for (let i = 0; i < names.length; i++) {
    const n = +names[i]!;
    if (n >= 0 && n % 1 === 0 && `${n}` === names[i]) return names[i]!;
  }
  return null;
}

/** Refuses to write while JSON writing would call the script (see prototypeProblem). */
function checkPrototypes(path: Path): void {
  const problem = prototypeProblem();
  if (problem !== null) refuse(path, 0, "a value", `the script ${problem}, which JSON writing would call`);
}

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
  /** How many finite numbers were counted in `size` (the part writer weighs them more: see NUMBER_WEIGHT). */
  numbers: number;
  /** The weight of each output container heavier than RECORDED (writeJson groups members by it); made at the first. */
  sizes: Map<object, number> | null;
  /** The keys of each object in `sizes` heavier than PART, in order (writeObject does not list them again); made at the first. */
  keysOf: Map<object, string[]> | null;
  /** Characters of JSON written in parts so far (serializeWithin refuses past `max` before joining them). */
  written: number;
  /** Bytes of the buffers, counted in `size` too. */
  bufferBytes: number;
}

/**
 * The most counted bytes one JSON.stringify call is given (writeJson): a value counted
 * larger is written in parts. Counted bytes are a lower bound of the JSON (escapes write
 * up to 6 bytes per character; numbers are weighed apart, see NUMBER_WEIGHT); QuickJS
 * writes 10-20 ns per character here, ~400 ns per control character (escaped with a
 * printf), so one call stays within ~7 ms (~10-19 ms for subnormal numbers). Between calls
 * writeParts asks the host whether the run is past a limit (bridge.checkLimits): the
 * engine's own interrupt check comes once per 10,000 calls and back-edges, which a loop
 * over such parts would take minutes to reach.
 */
const PART = 16384;
/**
 * The part writer's weight of a number: `size` counts one byte (a lower bound of its JSON),
 * but QuickJS takes 0.6-9 µs to print a number here and ~46 µs for a small subnormal
 * (5e-324 * k): counted at 1, 8,000 of them were one call of ~450 ms (found by review).
 * At 128, a part holds at most 128 numbers (subnormals: 8-10 ms warm, 13-19 ms in a fresh
 * process; 256 took up to 38 ms there, review).
 */
const NUMBER_WEIGHT = 128;
/** Output containers heavier than this have their weight recorded; lighter ones weigh this much. */
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
        path.numbers++;
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
  // Few locals, shared by both loops: QuickJS gives every declaration its own slot in the
  // frame, and this function recurses once per level of nesting (the depth a result can
  // have under stackBytes depends on its frame).
  let i: number;
  let item: unknown;
  let bytes: number;
  const object = value as object;
  for (i = 0; i < depth; i++) if (path.ancestors[i] === object) refuse(path, depth, "a value with a cycle");
  const proto = getPrototypeOf(object);
  // A plain object's chain holds no Date or ArrayBuffer prototype: two instanceof walks saved per object.
  const plainProto = proto === ObjectPrototype || proto === null;
  if (!plainProto && object instanceof DateCtor) {
    if (!isFinite(dateGetTime(object))) {
      charge(path, 4);
      return null;
    }
    item = dateToISOString(object);
    charge(path, (item as string).length + 2);
    return item;
  }
  if (!plainProto && object instanceof ArrayBufferCtor) {
    charge(path, (object as ArrayBuffer).byteLength + 20);
    path.bufferBytes += (object as ArrayBuffer).byteLength;
    return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(object, 0)));
  }
  if (isArrayBufferView(object)) return bytesMarker(object as ArrayBufferView, path, buffers);
  item = (object as { toJSON?: unknown }).toJSON;
  if (typeof item === "function") return encode(reflectApply(item, object, []), path, depth, buffers);
  path.ancestors[depth] = object;
  const sizeBefore = path.size;
  const numbersBefore = path.numbers;
  if (isArray(object)) {
    charge(path, 2);
    const out = plainArray();
    // A prototype-free array: an index store finds no setter (see plainArray), and is
    // cheaper for QuickJS than a defineProperty with a descriptor object per element.
    for (i = 0; i < object.length; i++) {
      item = object[i];
      // Values written as they are, counted here: a call of encode (and of charge) per
      // element was most of the cost of an array of numbers or strings.
      bytes = plainSize(item);
      if (bytes >= 0) {
        if ((path.size += i > 0 ? bytes + 1 : bytes) > path.max) throw TOO_LARGE;
        if (bytes === 1) path.numbers++; // only a number counts 1 (a string counts its quotes)
        out[i] = item;
        continue;
      }
      if (i > 0) charge(path, 1);
      path.keys[depth] = i;
      out[i] = encode(item, path, depth + 1, buffers);
    }
    recordWeight(path, out, sizeBefore, numbersBefore);
    return out;
  }
  if (!plainProto) return refuseClass(object, path, depth);
  // Prototype-free: a plain assignment finds no setter a script put on Object.prototype,
  // and "__proto__" becomes an own key (cheaper than defineData's descriptor per key).
  const out = objectCreate(null) as Record<string, unknown>;
  const keys = objectKeys(object);
  charge(path, 2);
  let hasMark = false;
  for (i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    item = (object as Record<string, unknown>)[key];
    bytes = plainSize(item);
    // "key": and the comma before it
    if (bytes >= 0) {
      if ((path.size += key.length + (i > 0 ? 4 : 3) + bytes) > path.max) throw TOO_LARGE;
      if (bytes === 1) path.numbers++;
      out[key] = item;
    } else {
      charge(path, key.length + (i > 0 ? 4 : 3));
      path.keys[depth] = key;
      out[key] = encode(item, path, depth + 1, buffers);
    }
    if (key === MARK) hasMark = true;
  }
  return finishObject(out, keys, hasMark, path, sizeBefore, numbersBefore);
}

function bytesMarker(view: ArrayBufferView, path: Path, buffers: ArrayBuffer[]): Record<string, unknown> {
  charge(path, view.byteLength + 20);
  path.bufferBytes += view.byteLength;
  return marker("bytes", "i", pushTo(buffers, arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength)));
}

function refuseClass(object: object, path: Path, depth: number): never {
  const name = constructorName(object);
  const hint = name === "Map" ? "use Object.fromEntries(map)" : name === "Set" ? "use Array.from(set)" : name === "Promise" ? "await it" : "return plain data";
  return refuse(path, depth, `a ${name} object`, hint);
}

/** An encoded object's weight recorded (and its keys, when it will be written in parts); wrapped when it has an own "$sbx" key. */
function finishObject(out: Record<string, unknown>, keys: string[], hasMark: boolean, path: Path, sizeBefore: number, numbersBefore: number): unknown {
  const weight = recordWeight(path, out, sizeBefore, numbersBefore);
  if (weight > PART) mapSet(path.keysOf ?? (path.keysOf = new MapCtor()), out, keys);
  if (!hasMark) return out;
  const wrapped = marker("object", "v", out);
  if (weight + 22 > RECORDED) mapSet(sizesOf(path), wrapped, weight + 22); // {"$sbx":"object","v":…}
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
  checkPrototypes(path);
  return pairOf(weightOf(path) <= PART ? (jsonStringify(encoded) as string) : writeParts(encoded, path), buffers) as [string | string[], ArrayBuffer[]];
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
  let json: string;
  try {
    const encoded = encode(value, path, 0, buffers);
    checkPrototypes(path);
    // In parts, the written JSON is counted as it grows (numbers count 1 while encoding, a
    // 16-digit one writes 16): past `max` it is refused before the parts are joined in one
    // native call (71 MB of them took ~200 ms; found by review).
    json = weightOf(path) <= PART ? (jsonStringify(encoded) as string) : arrayJoin(writeParts(encoded, path), "");
  } catch (error) {
    if (error !== TOO_LARGE) throw error;
    const written = path.written + path.bufferBytes;
    return pairOf(null, written > path.size ? written : path.size) as [null, number];
  }
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
  return {
    root,
    ancestors: plainArray(),
    keys: plainArray() as (string | number)[],
    size: 0,
    max,
    numbers: 0,
    sizes: null,
    keysOf: null,
    written: 0,
    bufferBytes: 0,
  };
}

/** The part writer's measure of everything encoded so far: counted bytes, numbers weighed more. */
function weightOf(path: Path): number {
  return path.size + path.numbers * (NUMBER_WEIGHT - 1);
}

/** Records a container's weight (what was encoded since `sizeBefore`/`numbersBefore`) when it is heavier than RECORDED; returns it. */
function recordWeight(path: Path, out: object, sizeBefore: number, numbersBefore: number): number {
  const weight = path.size - sizeBefore + (path.numbers - numbersBefore) * (NUMBER_WEIGHT - 1);
  if (weight > RECORDED) mapSet(sizesOf(path), out, weight);
  return weight;
}

/** The path's map of weights, made when the first is recorded (most results have none: a Map less per run). */
function sizesOf(path: Path): Map<object, number> {
  return path.sizes ?? (path.sizes = new MapCtor<object, number>());
}

/**
 * JSON text of what encode built, as JSON.stringify writes it, in parts, none of them one
 * native call over more than about PART of weight: JSON.stringify runs in C, where the
 * interrupt does not reach, and 2,000,000 `-0` (54 MB of JSON), or a string of 30,000,000
 * control characters (180 MB) given to it at the end of a run's CPU budget, outlived the
 * limit's grace, so the watchdog terminated the worker and every sandbox on it (found by
 * review). Containers are split between members, by the weights encode recorded; strings
 * between characters (never inside a surrogate pair).
 */
function writeParts(encoded: unknown, path: Path): string[] {
  // The shared markers, at their counted sizes (never recorded: they are not containers encode built).
  const sizes = sizesOf(path);
  mapSet(sizes, UNDEFINED, 20);
  mapSet(sizes, NEGATIVE_ZERO, 26);
  mapSet(sizes, NOT_A_NUMBER, 27);
  mapSet(sizes, INFINITY, 32);
  mapSet(sizes, NEGATIVE_INFINITY, 33);
  const parts = plainArray() as string[];
  writeJson(encoded, path, parts);
  return parts;
}

/** Adds a part; past `max` (serializeWithin's limit, with the buffers) the arguments are refused before anything is joined. */
function push(path: Path, parts: string[], text: string): void {
  if ((path.written += text.length) + path.bufferBytes > path.max) throw TOO_LARGE;
  parts[parts.length] = text;
}

/** Adds the JSON of one JSON.stringify call as a part (without its first and last `cut` characters), then lets the host check the run's limits. */
function pushWritten(path: Path, parts: string[], prefix: string, json: string, cut: number): void {
  push(path, parts, cut === 0 ? prefix + json : prefix + stringSlice(json, cut, json.length - cut));
  bridge.checkLimits();
}

function writeJson(node: unknown, path: Path, parts: string[]): void {
  if (typeof node === "string") return writeString(node, path, parts);
  const weight = typeof node === "object" && node !== null ? (mapGet(path.sizes!, node) as number | undefined) : undefined;
  if (weight === undefined || weight <= PART) pushWritten(path, parts, "", jsonStringify(node) as string, 0);
  else if (isArray(node)) writeArray(node, path, parts);
  else writeObject(node as Record<string, unknown>, path, parts);
}

/** A member's weight: a container encode recorded, a string, a number, or at most RECORDED. */
function weightOfMember(member: unknown, sizes: Map<object, number>): number {
  if (typeof member === "string") return member.length + 2;
  if (typeof member === "number") return NUMBER_WEIGHT;
  if (typeof member !== "object" || member === null) return 5;
  const weight = mapGet(sizes, member) as number | undefined;
  return weight === undefined ? RECORDED : weight;
}

// writeArray and writeObject call each other directly for members heavier than PART (not
// through writeJson): the writer recurses once per level of such nesting, and every frame
// counts against stackBytes (a result nested 560 levels deep around a long string was
// refused where 679 had crossed).
function writeArray(node: unknown[], path: Path, parts: string[]): void {
  push(path, parts, "[");
  const n = node.length;
  let start = 0; // the first member not written yet
  let weight = 0;
  for (let i = 0; i < n; i++) {
    const member = node[i];
    // Numbers inline: a call per member was a fifth of a 100,000-number result.
    const memberWeight = typeof member === "number" ? NUMBER_WEIGHT : weightOfMember(member, path.sizes!);
    if (memberWeight > PART) {
      writeArrayRun(node, start, i, path, parts);
      if (i > 0) push(path, parts, ",");
      // (writeJson's dispatch, inline: one frame per level of heavy nesting, see writeArray.)
      if (typeof member === "string") writeString(member, path, parts);
      else if (isArray(member)) writeArray(member, path, parts);
      else writeObject(member as Record<string, unknown>, path, parts);
      start = i + 1;
      weight = 0;
    } else {
      if (weight + memberWeight > PART) {
        writeArrayRun(node, start, i, path, parts);
        start = i;
        weight = 0;
      }
      weight += memberWeight;
    }
  }
  writeArrayRun(node, start, n, path, parts);
  push(path, parts, "]");
}

/** Members start..end-1 of an array, with the comma before them, in one JSON.stringify call. */
function writeArrayRun(node: unknown[], start: number, end: number, path: Path, parts: string[]): void {
  if (end === start) return;
  const run = arraySlice(node, start, end);
  setPrototypeOf(run, null); // as encode's own arrays: JSON.stringify finds no toJSON on it
  pushWritten(path, parts, start > 0 ? "," : "", jsonStringify(run) as string, 1);
}

function writeObject(node: Record<string, unknown>, path: Path, parts: string[]): void {
  push(path, parts, "{");
  // The keys encode listed (listing 2,000,000 keys again was ~200 ms in one native call; review).
  const keys = (path.keysOf === null ? undefined : (mapGet(path.keysOf, node) as string[] | undefined)) ?? objectKeys(node);
  let run: Record<string, unknown> | null = null; // members not written yet, in key order
  let weight = 0;
  let wrote = false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = node[key];
    const memberWeight = key.length + 4 + weightOfMember(value, path.sizes!);
    if (memberWeight > PART || weight + memberWeight > PART) {
      wrote = writeObjectRun(run, wrote, path, parts);
      run = null;
      weight = 0;
    }
    if (memberWeight > PART) {
      if (wrote) push(path, parts, ",");
      writeString(key, path, parts);
      push(path, parts, ":");
      if (typeof value === "string") writeString(value, path, parts);
      else if (weightOfMember(value, path.sizes!) <= PART) pushWritten(path, parts, "", jsonStringify(value) as string, 0);
      else if (isArray(value)) writeArray(value, path, parts);
      else writeObject(value as Record<string, unknown>, path, parts);
      wrote = true;
      continue;
    }
    // Keys keep their order: a run holds consecutive keys, and its integer-like keys (which
    // an object lists first) were first among them already.
    if (run === null) run = objectCreate(null) as Record<string, unknown>;
    run[key] = value; // prototype-free: no setter, "__proto__" an own key (see encode)
    weight += memberWeight;
  }
  writeObjectRun(run, wrote, path, parts);
  push(path, parts, "}");
}

/** A run of an object's members in one JSON.stringify call; whether anything was written in the object by now. */
function writeObjectRun(run: Record<string, unknown> | null, wrote: boolean, path: Path, parts: string[]): boolean {
  if (run === null) return wrote;
  pushWritten(path, parts, wrote ? "," : "", jsonStringify(run) as string, 1);
  return true;
}

function writeString(text: string, path: Path, parts: string[]): void {
  const n = text.length;
  if (n <= PART) {
    pushWritten(path, parts, "", jsonStringify(text) as string, 0);
    return;
  }
  push(path, parts, '"');
  for (let i = 0; i < n; ) {
    let end = i + PART < n ? i + PART : n;
    // Not between the halves of a surrogate pair: each would be written alone, escaped.
    // (A comparison, not charCodeAt: this module loads after the script, which may have
    // replaced String.prototype's methods.)
    if (end < n) {
      const last = stringSlice(text, end - 1, end);
      if (last >= "\ud800" && last <= "\udbff") end--;
    }
    pushWritten(path, parts, "", jsonStringify(stringSlice(text, i, end)) as string, 1);
    i = end;
  }
  push(path, parts, '"');
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
