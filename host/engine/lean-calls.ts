// Lean replacements for quickjs-emscripten 0.32's two call paths across the boundary:
// the guest calling a host function (our bridge), and the host calling a guest function
// (fetch answers, timers, plugin calls, the guest core's hooks). Both run on every fetch.
//
// Guest -> host: the library wraps every call in a Scope run through its maybe-async
// generator machinery, so that the same code serves the asyncify builds. We use the sync
// build only, where that machinery does nothing but cost: a no-op host function with two
// arguments took ~8 µs per call here, this version ~0.3 µs.
//
// Host -> guest: the library allocates (malloc) and frees an argument array per call, with
// a Lifetime around it; this version writes the argument pointers into one buffer per
// engine instance: ~1.7 µs -> ~0.2 µs per call. The buffer can be shared by nested calls
// because QTS_Call copies the arguments onto the C stack before it runs anything.
//
// Semantics are the library's, step for step (see the comments at each step).
import { Lifetime, WeakLifetime, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { contextPointer, moduleHeap } from "./internals.js";
import { registerHeapCache } from "./memory-image.js";

type HostFunction = (this: QuickJSHandle, ...args: QuickJSHandle[]) => unknown;

interface CallFfi {
  QTS_ArgvGetJSValueConstPointer(argv: number, index: number): number;
  QTS_DupValuePointer(ctx: number, value: number): number;
  QTS_Throw(ctx: number, error: number): number;
  QTS_Call(ctx: number, fn: number, thisValue: number, argc: number, argv: number): number;
  QTS_ResolveException(ctx: number, value: number): number;
  QTS_FreeValuePointer(ctx: number, value: number): void;
}

interface ContextInternals {
  ffi: CallFfi;
  runtime: QuickJSRuntime & { hostRefs: { get(id: number): unknown }; assertOwned(handle: QuickJSHandle): void };
  memory: { copyJSValue(ptr: number): number; freeJSValue(ptr: number): void; heapValueHandle(ptr: number): QuickJSHandle };
  cToHostCallbacks: { callFunction: (ctx: number, thisPtr: number, argc: number, argv: number, fnId: number) => number };
  success<T>(value: T): unknown;
  fail(error: QuickJSHandle): unknown;
}

/** Installs both lean call paths on a context (once, right after it is created). */
export function installLeanCalls(context: QuickJSContext, engine: EngineInstance): void {
  installLeanHostCalls(context);
  installLeanGuestCalls(context, engine);
}

/** Guest calls into host functions. */
export function installLeanHostCalls(context: QuickJSContext): void {
  const internals = context as unknown as ContextInternals;
  const { ffi, runtime, memory } = internals;
  const ctxPointer = contextPointer(context);
  const copy = memory.copyJSValue;
  const free = memory.freeJSValue;
  const weak = (pointer: number) => new WeakLifetime(pointer, copy, free, runtime) as unknown as QuickJSHandle;

  internals.cToHostCallbacks.callFunction = (ctx, thisPtr, argc, argv, fnId) => {
    if (ctx !== ctxPointer) throw new Error("QuickJSContext received a C -> JS call with a mismatched ctx");
    const fn = runtime.hostRefs.get(fnId);
    if (typeof fn !== "function") throw new Error(`host reference ${fnId} is not a function`);
    // `this` and the arguments are weak handles: they die when the call returns.
    const self = weak(thisPtr);
    const args = new Array<QuickJSHandle>(argc);
    for (let i = 0; i < argc; i++) args[i] = weak(ffi.QTS_ArgvGetJSValueConstPointer(argv, i));
    try {
      const result = (fn as HostFunction).apply(self, args) as QuickJSHandle | { value?: QuickJSHandle; error?: unknown } | undefined;
      if (!result) return 0;
      // `{ error }` throws that value into the guest.
      if (!(result instanceof Lifetime) && "error" in result && result.error) throw result.error;
      // A returned handle (or `{ value }`) is duplicated into the engine, then disposed.
      const handle = result instanceof Lifetime ? (result as QuickJSHandle) : (result as { value: QuickJSHandle }).value;
      try {
        return ffi.QTS_DupValuePointer(ctxPointer, handle.value as unknown as number);
      } finally {
        if (handle.alive) handle.dispose();
      }
    } catch (error) {
      // A thrown handle is thrown as is; anything else as a new Error with its name and message.
      const errorHandle = error instanceof Lifetime ? (error as QuickJSHandle) : context.newError(error as Error);
      try {
        return ffi.QTS_Throw(ctxPointer, errorHandle.value as unknown as number);
      } finally {
        errorHandle.dispose();
      }
    } finally {
      self.dispose();
      for (let i = 0; i < argc; i++) args[i]!.dispose();
    }
  };
}

/** Argument-pointer buffers, one per engine instance: [pointer, capacity in arguments]. */
const argumentBuffers = new WeakMap<EngineInstance, { pointer: number; capacity: number }>();
// A memory image (memory-image.ts) puts back the heap as it was: a buffer grown since is gone.
registerHeapCache({
  save: (engine) => argumentBuffers.get(engine),
  restore: (engine, saved) => {
    if (saved === undefined) argumentBuffers.delete(engine);
    else argumentBuffers.set(engine, saved as { pointer: number; capacity: number });
  },
});

function argumentBuffer(engine: EngineInstance, count: number): number {
  let buffer = argumentBuffers.get(engine);
  if (buffer === undefined || buffer.capacity < count) {
    const heap = moduleHeap(engine.module);
    const capacity = Math.max(16, count);
    const pointer = heap._malloc(capacity * 4);
    if (pointer === 0) throw new WebAssembly.RuntimeError("out of memory for call arguments");
    if (buffer !== undefined) heap._free(buffer.pointer);
    buffer = { pointer, capacity };
    argumentBuffers.set(engine, buffer);
  }
  return buffer.pointer;
}

/** Host calls into guest functions: context.callFunction, same signature and results. */
export function installLeanGuestCalls(context: QuickJSContext, engine: EngineInstance): void {
  const internals = context as unknown as ContextInternals;
  const { ffi, runtime, memory } = internals;
  const ctxPointer = contextPointer(context);

  const callFunction = (fn: QuickJSHandle, thisValue: QuickJSHandle, ...rest: (QuickJSHandle | QuickJSHandle[] | undefined)[]) => {
    runtime.assertOwned(fn);
    // Like the library: the arguments as one array, or as the rest parameters.
    const first = rest[0];
    const args = (first === undefined || Array.isArray(first) ? (first ?? []) : rest) as QuickJSHandle[];
    let argv = 0;
    if (args.length > 0) {
      argv = argumentBuffer(engine, args.length);
      // A view made now: the malloc above may have grown (and detached) the memory.
      const pointers = new Int32Array(engine.memory.buffer, argv, args.length);
      for (let i = 0; i < args.length; i++) pointers[i] = args[i]!.value as unknown as number;
    }
    const result = ffi.QTS_Call(ctxPointer, fn.value as unknown as number, thisValue.value as unknown as number, args.length, argv);
    const error = ffi.QTS_ResolveException(ctxPointer, result);
    if (error) {
      ffi.QTS_FreeValuePointer(ctxPointer, result);
      return internals.fail(memory.heapValueHandle(error));
    }
    return internals.success(memory.heapValueHandle(result));
  };
  (context as unknown as { callFunction: typeof callFunction }).callFunction = callFunction;
}
