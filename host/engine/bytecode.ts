// The guest library enters realms as QuickJS bytecode rather than source.
//
// Every run gets a fresh realm, and parsing is most of what building one cost: the ~6 KB
// core took ~0.9-1.1 ms to parse and ~0.13 ms to read back as bytecode; the 45 KB web
// module 18.6 ms against 0.9 ms. So each guest module is compiled once per thread (the
// first time a realm needs it, in that realm's own context, with QuickJS's compile-only
// eval), written out with JS_WriteObject, and every later realm reads those bytes with
// JS_ReadObject and runs them. The functions that do this are added to the wasm by
// wasm-patch.ts; quickjs-emscripten has none that handle bytecode.
//
// The bytes are the host's own: the compiler's output for our own source, kept in the
// worker's memory, never anything the guest gave or can reach (the reader trusts its
// input). They hold no object of the realm they were compiled in: atoms are written as
// strings, so they load into any runtime of the same compiled module. Without the patched
// functions (another engine build, or a failed round-trip check), the source is evaluated
// as before.
import type { QuickJSContext, QuickJSHandle, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { canMoveBytes, canMoveString } from "./headroom.js";
import { contextPointer, handleValuePointer, wrapValuePointer } from "./internals.js";
import { BYTECODE_EVAL_EXPORT, BYTECODE_READ_EXPORT, BYTECODE_WRITE_EXPORT } from "./wasm-patch.js";

type Exported = (ctx: number, value: number) => number;

/** The patched engine's bytecode functions (see wasm-patch.ts), or null. */
export interface BytecodeFunctions {
  write: Exported;
  read: Exported;
  evaluate: Exported;
  /** Bytecode per module filename, shared by the instances of one compiled module. */
  cache: Map<string, ArrayBuffer>;
}

/** Per compiled module: its bytecode cache, or null when the self-test failed. */
const shared = new WeakMap<WebAssembly.Module, Map<string, ArrayBuffer> | null>();

/**
 * The bytecode functions of a new engine instance, or null when the build has none or
 * they fail a round trip (checked once per compiled module: compile a small function,
 * write it, read it back, run it).
 */
export function bytecodeFunctions(instance: WebAssembly.Instance, compiled: WebAssembly.Module, engine: QuickJSWASMModule): BytecodeFunctions | null {
  const { [BYTECODE_WRITE_EXPORT]: write, [BYTECODE_READ_EXPORT]: read, [BYTECODE_EVAL_EXPORT]: evaluate } = instance.exports;
  if (typeof write !== "function" || typeof read !== "function" || typeof evaluate !== "function") return null;
  let cache = shared.get(compiled);
  if (cache === undefined) {
    cache = new Map();
    const functions = { write: write as Exported, read: read as Exported, evaluate: evaluate as Exported, cache };
    if (!roundTrips(engine, functions)) cache = null;
    shared.set(compiled, cache);
  }
  return cache && { write: write as Exported, read: read as Exported, evaluate: evaluate as Exported, cache };
}

function roundTrips(engine: QuickJSWASMModule, functions: BytecodeFunctions): boolean {
  const runtime = engine.newRuntime();
  const context = runtime.newContext();
  try {
    const compiled = context.evalCode("(function (a) { return a * 7 })", "scriptbox:self-test", { compileOnly: true });
    if (compiled.error) return false;
    const bytes = writeBytecode(context, functions, compiled.value);
    compiled.value.dispose();
    if (bytes === null) return false;
    const fn = runBytecode(context, functions, bytes);
    if (fn.error) return false;
    const six = context.newNumber(6);
    const result = context.callFunction(fn.value, context.undefined, six);
    six.dispose();
    fn.value.dispose();
    if (result.error) return false;
    const ok = context.typeof(result.value) === "number" && context.getNumber(result.value) === 42;
    result.value.dispose();
    return ok;
  } catch {
    return false;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

type Result = { value: QuickJSHandle; error?: undefined } | { error: QuickJSHandle };

/**
 * Evaluates a guest library script (a module factory: our own code, never the script's)
 * in `context` and returns its completion value, like `context.evalCode(source,
 * filename)`, from bytecode when the engine can. Callers check canLoadLibraryCode first.
 */
export function evalLibraryCode(context: QuickJSContext, engine: EngineInstance, source: string, filename: string): Result {
  const functions = engine.bytecode;
  if (!functions) return context.evalCode(source, filename);
  const cached = functions.cache.get(filename);
  if (cached !== undefined) return runBytecode(context, functions, cached);
  // First use in this thread: compile here, keep the bytes, and run the compiled function.
  const compiled = context.evalCode(source, filename, { compileOnly: true });
  if (compiled.error) return compiled;
  // Not kept when writing failed (no memory for the copy, at the sandbox's cap): the next
  // realm tries again; this one runs what it compiled all the same.
  const bytes = writeBytecode(context, functions, compiled.value);
  if (bytes !== null) functions.cache.set(filename, bytes);
  return evaluate(context, functions, compiled.value);
}

/**
 * Whether the engine has room to stage what evalLibraryCode will copy in (its bytecode
 * when known, else its source): quickjs-emscripten's staging copies do not check malloc.
 */
export function canLoadLibraryCode(engine: EngineInstance, source: string, filename: string): boolean {
  const bytecode = engine.bytecode?.cache.get(filename);
  return bytecode ? canMoveBytes(engine, bytecode.byteLength) : canMoveString(engine, source.length);
}

function writeBytecode(context: QuickJSContext, functions: BytecodeFunctions, compiled: QuickJSHandle): ArrayBuffer | null {
  const written = wrapValuePointer(context, functions.write(contextPointer(context), handleValuePointer(compiled)));
  if (written.error) {
    written.error.dispose();
    return null;
  }
  try {
    // getArrayBuffer copies through malloc and throws when that fails.
    const view = context.getArrayBuffer(written.value);
    const bytes = view.value.slice().buffer;
    view.dispose();
    return bytes;
  } catch {
    return null;
  } finally {
    written.value.dispose();
  }
}

function runBytecode(context: QuickJSContext, functions: BytecodeFunctions, bytes: ArrayBuffer): Result {
  const buffer = context.newArrayBuffer(bytes);
  const read = wrapValuePointer(context, functions.read(contextPointer(context), handleValuePointer(buffer)));
  buffer.dispose();
  if (read.error) return read;
  return evaluate(context, functions, read.value);
}

/** Runs a function read or compiled as bytecode; the handle is consumed. */
function evaluate(context: QuickJSContext, functions: BytecodeFunctions, fn: QuickJSHandle): Result {
  const result = wrapValuePointer(context, functions.evaluate(contextPointer(context), handleValuePointer(fn)));
  fn.dispose(); // holds undefined now: the evaluation took the value over
  return result;
}

