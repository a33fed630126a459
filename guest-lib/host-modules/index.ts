// The embedder's host modules, guest side: builds the object a script gets from
// `import app from "app"` (functions, nested frozen objects, copied values) out of the
// shape the host describes (bridge.hostModule), once per realm and module.
//
// A host function here is a thin stub: it copies its arguments with the marshal format
// (the same rules as a run's input and result) and calls the bridge with the function's
// number. Async functions return a promise settled by the host's answer; synchronous ones
// (hostSync) return the answer directly (the worker thread waits for the embedder).
import bridge from "scriptbox:bridge";
import { require as requireModule } from "scriptbox:core";
import {
  ErrorCtor,
  MapCtor,
  PromiseCtor,
  TypeErrorCtor,
  defineProperty,
  freeze,
  isFinite,
  jsonParse,
  jsonStringify,
  mapGet,
  mapSet,
  objectIs,
  objectKeys,
  regexpExec,
  stringIndexOf,
  stringSlice,
} from "scriptbox:intrinsics";
import type * as Marshal from "../marshal/index.js";

// Captured when this module loads (the core puts pristine builtins back while it does).
const RangeErrorCtor = RangeError;
const marshal = () => requireModule("scriptbox:marshal") as typeof Marshal;

type ShapeNode = { f: number; s?: 1 } | { o: Record<string, ShapeNode> } | { v: number };

const built = new MapCtor<string, unknown>();
const NO_BUFFERS: ArrayBuffer[] = [];
/** The sandbox's maxHostCallBytes (the host checks it too): arguments past it are refused while being encoded. */
let maxCallBytes = Infinity;

export function hostModule(name: string): unknown {
  const cached = mapGet(built, name);
  if (cached !== undefined) return cached;
  const [membersJson, valuesJson, buffers, maxBytes] = bridge.hostModule(name);
  maxCallBytes = maxBytes;
  const values = marshal().deserialize(valuesJson, buffers) as unknown[];
  const module = build(jsonParse(membersJson) as Record<string, ShapeNode>, values, name);
  mapSet(built, name, module);
  return module;
}

function build(members: Record<string, ShapeNode>, values: unknown[], path: string): object {
  const out: Record<string, unknown> = {};
  const keys = objectKeys(members);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const node = members[key]!;
    const label = `${path}.${key}`;
    const value = "f" in node ? (node.s === 1 ? syncFunction(node.f, key, label) : asyncFunction(node.f, key, label)) : "o" in node ? build(node.o, values, label) : values[node.v];
    // defineProperty: a member named "__proto__" is a member, not the prototype.
    defineProperty(out, key, { value, enumerable: true, writable: false, configurable: false });
  }
  return freeze(out);
}

/**
 * Arguments as [json, buffers]; plain primitives skip the marshal module, and their JSON
 * is written here (for QuickJS a generic JSON.stringify of the array costs several times
 * the concatenation; a number's or boolean's text is the same either way).
 */
function encodeArguments(args: unknown[], label: string): [string, ArrayBuffer[]] {
  let json = "[";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const type = typeof arg;
    if (type === "number" && isFinite(arg as number) && !objectIs(arg, -0)) json += (i === 0 ? "" : ",") + (arg as number);
    // A long string goes through the marshal module, which counts it against maxHostCallBytes
    // before writing it (a 4M-character string was one long JSON.stringify here; review).
    else if (type === "string" && (arg as string).length <= 65536) json += (i === 0 ? "" : ",") + (jsonStringify(arg) as string);
    else if (type === "boolean" || arg === null) json += (i === 0 ? "" : ",") + (arg as boolean | null);
    else return encodeWithMarshal(args, label);
    // Many strings each under the cut-off still add up: refused here as the marshal module would (review).
    if (json.length + 1 > maxCallBytes) throw new RangeErrorCtor(`limit: maxHostCallBytes (${formatBytes(maxCallBytes)}) exceeded: the arguments of ${label} are ${json.length + 1} bytes or more`);
  }
  return [json + "]", NO_BUFFERS];
}

function encodeWithMarshal(args: unknown[], label: string): [string, ArrayBuffer[]] {
  const { serializeWithin } = marshal();
  let encoded: [string, ArrayBuffer[]] | [null, number];
  try {
    encoded = serializeWithin(args, "\u0000args", maxCallBytes);
  } catch (error) {
    // Not an Error: QuickJS's out-of-memory (it throws null at the heap's cap) or an
    // interrupt. Passed on as it is, so the run ends as the engine reports it (kind
    // memory), not as a TypeError the script could catch ("cannot be copied: null").
    if (!(error instanceof ErrorCtor)) throw error;
    // "\0args[1].x: a function cannot cross…" → "app.store.set: argument 2 (at .x): a function cannot cross…"
    const message = error.message;
    // The engine's own out-of-memory error, as the script would get it anywhere else (the
    // arguments did not fail to cross; the heap is full, and encoding them again to find
    // which one "failed" would only fill it again).
    if (message === "out of memory") throw error;
    // Refused as a whole (the script changed what JSON writing would call): no argument to name.
    if (stringSlice(message, 0, 6) === "\u0000args:") throw new TypeErrorCtor(`${label}:${stringSlice(message, 6)}`);
    const match = regexpExec(/^\u0000args\[(\d+)\]([^:]*)/, message);
    if (match) throw new TypeErrorCtor(`${label}: argument ${+match[1]! + 1}${match[2] ? ` (at ${match[2]})` : ""}${stringSlice(message, match[0].length)}`);
    // Something else threw (a proxy's trap, a stack overflow): find which argument, each
    // within the size bound (an argument past it is not the one that threw, and encoding
    // it whole again ran a sparse array to the CPU limit; found by review).
    let position = 0;
    for (let i = 0; i < args.length && position === 0; i++) {
      try {
        serializeWithin(args[i], "", maxCallBytes);
      } catch {
        position = i + 1;
      }
    }
    throw new TypeErrorCtor(`${label}: ${position ? `argument ${position}` : "an argument"} cannot be copied: ${message}`);
  }
  // By index (a prototype-free pair): destructuring would call an iterator a script may have replaced.
  if (encoded[0] === null) throw new RangeErrorCtor(`limit: maxHostCallBytes (${formatBytes(maxCallBytes)}) exceeded: the arguments of ${label} are ${encoded[1]} bytes or more`);
  return encoded as [string, ArrayBuffer[]];
}

/** A result's JSON and buffers (none: undefined); small plain ones skip the marshal module. */
function decodeResult(json: string, buffers: ArrayBuffer[] | undefined): unknown {
  if (buffers !== undefined && buffers.length !== 0) return marshal().deserialize(json, buffers);
  // The host's JSON.stringify writes a number as its shortest text, which `+` reads back exactly.
  // (Captured methods and comparisons only: the stubs run after the script may have replaced
  // String.prototype's.)
  const first = stringSlice(json, 0, 1);
  if ((first >= "0" && first <= "9") || first === "-") return +json;
  // No marker (the host's JSON.stringify writes every one as "$sbx"): parsing is all there is
  // to do; the marshal module's walk cost ~10 µs of interpreter time per object.
  if (stringIndexOf(json, '"$sbx"') === -1) return jsonParse(json);
  return marshal().deserialize(json, NO_BUFFERS);
}

/** The host's formatBytes (host/limits.ts), for the same limit message as the host's check. */
function formatBytes(bytes: number): string {
  if (bytes >= 1048576 && bytes % 1048576 === 0) return `${bytes / 1048576} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function hostError(name: string, message: string, code: string | number | undefined): Error {
  const error = new (name === "TypeError" ? TypeErrorCtor : name === "RangeError" ? RangeErrorCtor : ErrorCtor)(message);
  if (code !== undefined) defineProperty(error, "code", { value: code, writable: true, enumerable: true, configurable: true });
  return error;
}

function syncFunction(id: number, name: string, label: string): (...args: unknown[]) => unknown {
  const stub = {
    [name](...args: unknown[]): unknown {
      // By index: marshal's pair has no prototype (no iterator a script could replace).
      const encoded = encodeArguments(args, label);
      const json = encoded[0];
      const buffers = encoded[1];
      const reply = bridge.hostCallSync(id, json, buffers.length === 0 ? undefined : buffers);
      // The common answer, a value without bytes, comes as its JSON text alone.
      if (typeof reply === "string") return decodeResult(reply, NO_BUFFERS);
      if (reply[0] === true) return decodeResult(reply[1], reply[2]);
      throw hostError(reply[1], reply[2], reply[3]);
    },
  }[name]!;
  return stub;
}

function asyncFunction(id: number, name: string, label: string): (...args: unknown[]) => Promise<unknown> {
  const stub = {
    [name](...args: unknown[]): Promise<unknown> {
      // Made here, so that a failure carries the caller's guest stack.
      const site = new ErrorCtor();
      return new PromiseCtor((resolve, reject) => {
        // By index: marshal's pair has no prototype (no iterator a script could replace).
      const encoded = encodeArguments(args, label);
      const json = encoded[0];
      const buffers = encoded[1];
        bridge.hostCall(id, json, buffers.length === 0 ? undefined : buffers, (ok, a, b, code) => {
          if (!ok) {
            const error = hostError(a, b as string, code);
            defineProperty(error, "stack", { value: site.stack, writable: true, configurable: true, enumerable: false });
            return reject(error);
          }
          try {
            resolve(decodeResult(a, b as ArrayBuffer[] | undefined));
          } catch (error) {
            reject(error);
          }
        });
      });
    },
  }[name]!;
  return stub;
}
