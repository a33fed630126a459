// Node-style value formatting for console output: `{ a: 1, b: [ 1, 2 ] }`, errors with
// their stack, `Map(1) { 'a' => 1 }`, `<ref *1>` cycles, depth 2, lines broken at 80
// columns with the innermost three levels kept on one line, numeric arrays in columns,
// like Node's util.inspect defaults. Loaded only when a console call has an object.
import { Map, Set, WeakMap, WeakSet, Promise, RegExp, Date, Error, ArrayBuffer, DataView, Uint8Array, Number, String, Boolean, Object, Array, Math, Symbol, JSON, Function, parseInt, parseFloat } from "./builtins.js";
import bridge from "scriptbox:bridge";
import { formatTable } from "./table.js";
import { quoteString, formatKey, formatNumber } from "./primitives.js";

export interface InspectOptions {
  depth?: number;
}

interface Context {
  depth: number;
  seen: object[];
  circular: Map<object, number>;
  indentationLvl: number;
  currentDepth: number;
}

const BREAK_LENGTH = 80;
const COMPACT = 3;
const MAX_ARRAY_LENGTH = 100;
const MAX_STRING_LENGTH = 10000;
const customInspect = Symbol.for("nodejs.util.inspect.custom");
const { getPrototypeOf, getOwnPropertyDescriptor, keys: objectKeys, getOwnPropertySymbols, prototype: ObjectPrototype } = Object;
const functionToString = Function.prototype.toString;
const errorToString = (error: Error) => `${safe(() => error.name, "Error")}: ${safe(() => error.message, "")}`;
const typedArrayPrototype = getPrototypeOf(Uint8Array.prototype) as object;
const typedArrayTag = getOwnPropertyDescriptor(typedArrayPrototype, Symbol.toStringTag)!.get!;

function safe<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function constructorName(value: object): string | null {
  let proto: object | null = value;
  while (proto !== null) {
    const descriptor = safe(() => getOwnPropertyDescriptor(proto, "constructor"), undefined);
    const name = descriptor && typeof descriptor.value === "function" ? (descriptor.value as { name?: unknown }).name : undefined;
    if (typeof name === "string" && name !== "") return name;
    proto = safe(() => getPrototypeOf(proto!) as object | null, null);
  }
  return null;
}

export function inspect(value: unknown, options: InspectOptions = {}): string {
  const depth = typeof options.depth === "number" ? options.depth : options.depth === null ? Infinity : 2;
  return formatValue({ depth, seen: [], circular: new Map(), indentationLvl: 0, currentDepth: 0 }, value, 0);
}

function formatValue(ctx: Context, value: unknown, recurseTimes: number): string {
  if (typeof value !== "object" && typeof value !== "function") return formatPrimitive(value);
  if (value === null) return "null";
  const object = value as object;
  const custom = safe(() => (object as Record<symbol, unknown>)[customInspect], undefined);
  if (typeof custom === "function") {
    const result = custom.call(object, ctx.depth - recurseTimes, { depth: ctx.depth }, inspect);
    if (result !== object) return typeof result === "string" ? result : formatValue(ctx, result, recurseTimes);
  }
  if (ctx.seen.indexOf(object) !== -1) {
    let index = ctx.circular.get(object);
    if (index === undefined) {
      index = ctx.circular.size + 1;
      ctx.circular.set(object, index);
    }
    return `[Circular *${index}]`;
  }
  return formatRaw(ctx, object, recurseTimes);
}

function formatPrimitive(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value.length > MAX_STRING_LENGTH
        ? `${quoteString(value.slice(0, MAX_STRING_LENGTH))}... ${value.length - MAX_STRING_LENGTH} more characters`
        : quoteString(value);
    case "number":
      return formatNumber(value);
    case "bigint":
      return `${value}n`;
    case "symbol":
      return value.toString();
    default:
      return String(value);
  }
}

type Braces = [string, string];

function formatRaw(ctx: Context, value: object, recurseTimes: number): string {
  const ctor = constructorName(value);
  const tag = safe(() => (value as Record<symbol, unknown>)[Symbol.toStringTag], undefined);
  const tagSuffix = typeof tag === "string" && tag !== "" && tag !== ctor ? ` [${tag}]` : "";
  // Plain objects and arrays show no class name; everything else does (`Map(1) {`, `Foo {`).
  const prefix = (fallback: string, size = "") =>
    ctor === null
      ? `[${fallback}${size}: null prototype]${tagSuffix} `
      : ctor !== fallback || (fallback !== "Object" && fallback !== "Array")
        ? `${ctor}${size}${tagSuffix} `
        : tagSuffix
          ? `${ctor}${tagSuffix} `
          : "";

  let keys = ownKeys(value);
  let base = "";
  let braces: Braces = ["{", "}"];
  let extras: "object" | "array" = "object";
  let formatter: () => string[] = () => [];

  if (Array.isArray(value)) {
    braces = [`${prefix("Array")}[`, "]"];
    keys = keys.filter((key) => !isIndex(key));
    extras = "array";
    if (value.length === 0 && keys.length === 0) return `${braces[0]}]`;
    formatter = () => formatArray(ctx, value, recurseTimes);
  } else if (value instanceof Map) {
    const size = safe(() => value.size, 0);
    braces = [`${prefix("Map", `(${size})`)}{`, "}"];
    if (size === 0 && keys.length === 0) return `${braces[0]}}`;
    formatter = () => formatMap(ctx, value, recurseTimes);
  } else if (value instanceof Set) {
    const size = safe(() => value.size, 0);
    braces = [`${prefix("Set", `(${size})`)}{`, "}"];
    if (size === 0 && keys.length === 0) return `${braces[0]}}`;
    formatter = () => formatSet(ctx, value, recurseTimes);
  } else if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const name = typedArrayTag.call(value) as string;
    const length = (value as unknown as { length: number }).length;
    braces = [`${ctor === name ? "" : `${ctor ?? "[null prototype]"} `}${name}(${length}) [`, "]"];
    keys = keys.filter((key) => !isIndex(key));
    extras = "array";
    if (length === 0 && keys.length === 0) return `${braces[0]}]`;
    formatter = () => formatTypedArray(ctx, value as unknown as ArrayLike<number | bigint>);
  } else if (typeof value === "function") {
    base = functionBase(value as (...args: unknown[]) => unknown, ctor);
    keys = keys.filter((key) => key !== "prototype");
    if (keys.length === 0) return base;
  } else if (value instanceof RegExp) {
    base = RegExp.prototype.toString.call(value);
    if (keys.length === 0) return base;
  } else if (value instanceof Date) {
    const time = Date.prototype.getTime.call(value);
    base = Number.isNaN(time) ? "Invalid Date" : Date.prototype.toISOString.call(value);
    if (keys.length === 0) return base;
  } else if (value instanceof Error) {
    base = formatError(ctx, value);
    keys = keys.filter((key) => key !== "stack" && key !== "message");
    if (keys.length === 0) return base;
  } else if (value instanceof ArrayBuffer) {
    braces = [`${prefix("ArrayBuffer")}{`, "}"];
    formatter = () => [`[Uint8Contents]: <${hexBytes(new Uint8Array(value))}>`, `byteLength: ${value.byteLength}`];
  } else if (value instanceof Promise) {
    braces = [`${prefix("Promise")}{`, "}"];
    formatter = () => formatPromise(ctx, value, recurseTimes);
  } else if (typeof tag === "string" && WEB_CLASSES.has(tag) && ctor === tag && !(value instanceof Error)) {
    // Web platform objects keep their state in private slots: show what their getters
    // (or, for header-like lists, their entries) say, as Node and Deno do.
    braces = [`${tag} {`, "}"];
    formatter = () => formatWebObject(ctx, value, recurseTimes);
  } else if (value instanceof WeakMap || value instanceof WeakSet) {
    return `${ctor ?? "Weak"} { <items unknown> }`;
  } else if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    const primitive = (value as { valueOf(): unknown }).valueOf();
    base = `[${ctor === null ? typeof primitive : (ctor ?? "")}: ${formatPrimitive(primitive)}]`;
    if (value instanceof String) keys = keys.filter((key) => !isIndex(key) && key !== "length");
    if (keys.length === 0) return base;
  } else {
    braces = [`${prefix("Object")}{`, "}"];
    if (keys.length === 0) return `${braces[0]}}`;
  }

  if (recurseTimes > ctx.depth) {
    return `[${ctor === null ? "Object: null prototype" : Array.isArray(value) ? "Array" : ctor}]`;
  }

  ctx.seen.push(value);
  ctx.currentDepth = recurseTimes;
  let output: string[];
  try {
    output = formatter();
    for (const key of keys) output.push(formatProperty(ctx, value, recurseTimes, key, extras));
  } finally {
    ctx.seen.pop();
  }
  const reference = ctx.circular.get(value);
  const refPrefix = reference !== undefined ? `<ref *${reference}> ` : "";
  if (base !== "") braces[0] = `${base} {`;
  return refPrefix + reduceToSingleString(ctx, output, "", braces, extras, recurseTimes, value);
}

function ownKeys(value: object): (string | symbol)[] {
  const keys: (string | symbol)[] = safe(() => objectKeys(value), [] as string[]);
  for (const symbol of safe(() => getOwnPropertySymbols(value), [] as symbol[])) {
    if (safe(() => getOwnPropertyDescriptor(value, symbol)?.enumerable, false)) keys.push(symbol);
  }
  return keys;
}

function isIndex(key: string | symbol): boolean {
  return typeof key === "string" && /^(0|[1-9][0-9]*)$/.test(key);
}

function functionBase(fn: (...args: unknown[]) => unknown, ctor: string | null): string {
  const source = safe(() => functionToString.call(fn), "");
  const name = safe(() => fn.name, "");
  if (source.startsWith("class") && /^class\b/.test(source)) {
    const superName = safe(() => (getPrototypeOf(fn) as { name?: string } | null)?.name, "");
    return `[class ${name || "(anonymous)"}${superName ? ` extends ${superName}` : ""}]`;
  }
  const kind = ctor === "AsyncFunction" || ctor === "GeneratorFunction" || ctor === "AsyncGeneratorFunction" ? ctor : "Function";
  return `[${kind}${name ? `: ${name}` : " (anonymous)"}]`;
}

function formatError(ctx: Context, error: Error): string {
  const header = errorToString(error);
  const stack = safe(() => error.stack, "");
  if (typeof stack !== "string" || stack.trim() === "") return `[${header}]`;
  // QuickJS stacks hold only the frames; Node users expect the header line first.
  const frames = stack.startsWith(header) ? stack.slice(header.length).replace(/^\n/, "") : stack;
  const indentation = " ".repeat(ctx.indentationLvl);
  const lines = frames.replace(/\n$/, "").split("\n").map((line) => indentation + line);
  return [header, ...lines].join("\n");
}

function formatProperty(ctx: Context, value: object, recurseTimes: number, key: string | symbol, extras: "object" | "array"): string {
  const descriptor = safe(() => getOwnPropertyDescriptor(value, key), undefined);
  let text: string;
  if (descriptor === undefined) {
    text = "undefined";
  } else if ("value" in descriptor) {
    ctx.indentationLvl += 2;
    text = formatValue(ctx, descriptor.value, recurseTimes + 1);
    ctx.indentationLvl -= 2;
  } else {
    text = descriptor.get ? (descriptor.set ? "[Getter/Setter]" : "[Getter]") : descriptor.set ? "[Setter]" : "undefined";
  }
  if (extras === "array" && isIndex(key)) return text;
  const name = typeof key === "symbol" ? `[${key.toString()}]` : formatKey(key);
  return `${name}: ${text}`;
}

function formatArray(ctx: Context, array: unknown[], recurseTimes: number): string[] {
  const output: string[] = [];
  const length = array.length;
  const shown = Math.min(length, MAX_ARRAY_LENGTH);
  for (let i = 0; i < shown; i++) {
    if (!Object.prototype.hasOwnProperty.call(array, i)) {
      let holes = 1;
      while (i + holes < shown && !Object.prototype.hasOwnProperty.call(array, i + holes)) holes++;
      output.push(`<${holes} empty item${holes > 1 ? "s" : ""}>`);
      i += holes - 1;
      continue;
    }
    output.push(formatProperty(ctx, array, recurseTimes, String(i), "array"));
  }
  if (length > shown) output.push(`... ${length - shown} more item${length - shown > 1 ? "s" : ""}`);
  return output;
}

function formatTypedArray(ctx: Context, array: ArrayLike<number | bigint>): string[] {
  const output: string[] = [];
  const shown = Math.min(array.length, MAX_ARRAY_LENGTH);
  for (let i = 0; i < shown; i++) output.push(formatPrimitive(array[i]));
  if (array.length > shown) output.push(`... ${array.length - shown} more item${array.length - shown > 1 ? "s" : ""}`);
  void ctx;
  return output;
}

function formatMap(ctx: Context, map: Map<unknown, unknown>, recurseTimes: number): string[] {
  const output: string[] = [];
  ctx.indentationLvl += 2;
  for (const [key, value] of map) {
    if (output.length >= MAX_ARRAY_LENGTH) break;
    output.push(`${formatValue(ctx, key, recurseTimes + 1)} => ${formatValue(ctx, value, recurseTimes + 1)}`);
  }
  ctx.indentationLvl -= 2;
  if (map.size > MAX_ARRAY_LENGTH) output.push(`... ${map.size - MAX_ARRAY_LENGTH} more items`);
  return output;
}

function formatSet(ctx: Context, set: Set<unknown>, recurseTimes: number): string[] {
  const output: string[] = [];
  ctx.indentationLvl += 2;
  for (const value of set) {
    if (output.length >= MAX_ARRAY_LENGTH) break;
    output.push(formatValue(ctx, value, recurseTimes + 1));
  }
  ctx.indentationLvl -= 2;
  if (set.size > MAX_ARRAY_LENGTH) output.push(`... ${set.size - MAX_ARRAY_LENGTH} more items`);
  return output;
}

const WEB_CLASSES = new Set([
  "URL", "URLSearchParams", "Headers", "FormData", "Blob", "File", "Request", "Response",
  "AbortController", "AbortSignal", "Event", "CustomEvent", "EventTarget", "TextEncoder", "TextDecoder",
]);
const ENTRY_LISTS = new Set(["Headers", "URLSearchParams", "FormData"]);

function formatWebObject(ctx: Context, value: object, recurseTimes: number): string[] {
  const tag = (value as Record<symbol, unknown>)[Symbol.toStringTag] as string;
  const output: string[] = [];
  ctx.indentationLvl += 2;
  try {
    if (ENTRY_LISTS.has(tag)) {
      for (const [key, item] of value as Iterable<[string, unknown]>) {
        output.push(`${formatKey(key)}: ${formatValue(ctx, item, recurseTimes + 1)}`);
      }
      return output;
    }
    const seen = new Set<string>();
    for (let proto = getPrototypeOf(value) as object | null; proto !== null && proto !== ObjectPrototype; proto = getPrototypeOf(proto) as object | null) {
      for (const key of Object.getOwnPropertyNames(proto)) {
        const descriptor = getOwnPropertyDescriptor(proto, key);
        if (seen.has(key) || !descriptor?.get) continue;
        seen.add(key);
        const item = safe(() => (value as Record<string, unknown>)[key], undefined);
        if (typeof item === "function") continue;
        output.push(`${formatKey(key)}: ${formatValue(ctx, item, recurseTimes + 1)}`);
      }
    }
    return output;
  } finally {
    ctx.indentationLvl -= 2;
  }
}

function formatPromise(ctx: Context, promise: Promise<unknown>, recurseTimes: number): string[] {
  const [state, result] = bridge.promiseState(promise);
  if (state === "pending") return ["<pending>"];
  ctx.indentationLvl += 2;
  const text = formatValue(ctx, result, recurseTimes + 1);
  ctx.indentationLvl -= 2;
  return [state === "rejected" ? `<rejected> ${text}` : text];
}

function hexBytes(bytes: Uint8Array): string {
  const shown = Math.min(bytes.length, 50);
  let text = "";
  for (let i = 0; i < shown; i++) text += `${i ? " " : ""}${(bytes[i]! + 0x100).toString(16).slice(1)}`;
  return bytes.length > shown ? `${text} ... ${bytes.length - shown} more byte${bytes.length - shown > 1 ? "s" : ""}` : text;
}

function isBelowBreakLength(ctx: Context, output: string[], start: number, base: string): boolean {
  let totalLength = output.length + start;
  if (totalLength + output.length > BREAK_LENGTH) return false;
  for (const entry of output) {
    totalLength += entry.length;
    if (totalLength > BREAK_LENGTH) return false;
  }
  void ctx;
  return base === "" || base.indexOf("\n") === -1;
}

function reduceToSingleString(ctx: Context, output: string[], base: string, braces: Braces, extras: "object" | "array", recurseTimes: number, value: object): string {
  const entries = output.length;
  if (entries === 0) return `${base ? `${base} ` : ""}${braces[0]}${braces[1]}`;
  if (extras === "array" && entries > 6) output = groupArrayElements(ctx, output, value as ArrayLike<unknown>);
  if (ctx.currentDepth - recurseTimes < COMPACT && entries === output.length) {
    const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
    if (isBelowBreakLength(ctx, output, start, base)) {
      const joined = output.join(", ");
      if (joined.indexOf("\n") === -1) return `${base ? `${base} ` : ""}${braces[0]} ${joined} ${braces[1]}`;
    }
  }
  const indentation = `\n${" ".repeat(ctx.indentationLvl)}`;
  return `${base ? `${base} ` : ""}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
}

// Node's column layout for long arrays of short entries (lib/internal/util/inspect.js).
function groupArrayElements(ctx: Context, output: string[], value: ArrayLike<unknown>): string[] {
  let totalLength = 0;
  let maxLength = 0;
  let outputLength = output.length;
  if (outputLength > 0 && output[outputLength - 1]!.startsWith("... ")) outputLength--;
  const separatorSpace = 2;
  const dataLen: number[] = [];
  for (let i = 0; i < outputLength; i++) {
    const len = output[i]!.length;
    dataLen.push(len);
    totalLength += len + separatorSpace;
    if (maxLength < len) maxLength = len;
  }
  const actualMax = maxLength + separatorSpace;
  if (actualMax * 3 + ctx.indentationLvl < BREAK_LENGTH && (totalLength / actualMax > 5 || maxLength <= 6)) {
    const averageBias = Math.sqrt(actualMax - totalLength / output.length);
    const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
    const columns = Math.min(
      Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
      Math.floor((BREAK_LENGTH - ctx.indentationLvl) / actualMax),
      COMPACT * 4,
      15,
    );
    if (columns <= 1) return output;
    const maxLineLength: number[] = [];
    for (let i = 0; i < columns; i++) {
      let lineLength = 0;
      for (let j = i; j < outputLength; j += columns) if (dataLen[j]! > lineLength) lineLength = dataLen[j]!;
      maxLineLength.push(lineLength + separatorSpace);
    }
    let padStart = true;
    for (let i = 0; i < outputLength; i++) {
      const item = value[i];
      if (typeof item !== "number" && typeof item !== "bigint") {
        padStart = false;
        break;
      }
    }
    const grouped: string[] = [];
    for (let i = 0; i < outputLength; i += columns) {
      const max = Math.min(i + columns, outputLength);
      let line = "";
      let j = i;
      for (; j < max - 1; j++) {
        const cell = `${output[j]}, `;
        line += padStart ? cell.padStart(maxLineLength[j - i]!, " ") : cell.padEnd(maxLineLength[j - i]!, " ");
      }
      line += padStart ? output[j]!.padStart(maxLineLength[j - i]! - separatorSpace, " ") : output[j]!;
      grouped.push(line);
    }
    if (outputLength < output.length) grouped.push(output[outputLength]!);
    return grouped;
  }
  return output;
}

/** util.format: printf-style %s %d %i %f %j %o %O %c %%, then the remaining arguments. */
export function format(args: unknown[]): string {
  const first = args[0];
  let text = "";
  let index = 0;
  if (typeof first === "string") {
    index = 1;
    let last = 0;
    for (let i = 0; i < first.length - 1; i++) {
      if (first.charCodeAt(i) !== 37 /* % */) continue;
      const spec = first[i + 1]!;
      let replacement: string | undefined;
      if (spec === "%") {
        replacement = "%";
      } else if (index < args.length && "sdifjoOc".indexOf(spec) !== -1) {
        const arg = args[index++];
        replacement = formatSpecifier(spec, arg);
      }
      if (replacement === undefined) continue;
      text += first.slice(last, i) + replacement;
      last = i + 2;
      i++;
    }
    text += first.slice(last);
  }
  for (; index < args.length; index++) {
    const arg = args[index];
    text += (text === "" && index === 0 ? "" : " ") + (typeof arg === "string" ? arg : inspect(arg));
  }
  return text;
}

function formatSpecifier(spec: string, arg: unknown): string {
  switch (spec) {
    case "s":
      if (typeof arg === "bigint") return `${arg}n`;
      if (typeof arg === "number") return formatNumber(arg);
      if (typeof arg !== "object" || arg === null) return String(arg);
      return inspect(arg, { depth: 0 });
    case "d":
      return typeof arg === "bigint" ? `${arg}n` : typeof arg === "symbol" ? "NaN" : formatNumber(Number(arg));
    case "i":
      return typeof arg === "bigint" ? `${arg}n` : typeof arg === "symbol" ? "NaN" : formatNumber(parseInt(String(arg), 10));
    case "f":
      return typeof arg === "symbol" ? "NaN" : formatNumber(parseFloat(String(arg)));
    case "j":
      try {
        return String(JSON.stringify(arg));
      } catch {
        return "[Circular]";
      }
    case "o":
      return inspect(arg, { depth: 4 });
    case "O":
      return inspect(arg);
    default: // %c: CSS, ignored outside browsers
      return "";
  }
}

export function table(data: unknown, columns?: unknown): string {
  return formatTable(data, columns, (value) => inspect(value, { depth: 1 }));
}
