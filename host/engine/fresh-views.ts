// Replacements for the quickjs-emscripten 0.32 calls that read their output slots through a
// typed-array view made BEFORE the call: when the call grows the wasm memory, that view is
// detached and the read returns garbage (upstream issue #240, PR #248). Reading a pointer
// out of garbage frees wrong values later (we saw a double free in the DEBUG build). These
// versions read the slots through a view made after the call. (getLength and
// getOwnPropertyNames, the other two affected calls, are not used by scriptbox.)
import { QuickJSDeferredPromise, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { contextPointer, moduleHeap, runtimePointer } from "./internals.js";
import { registerHeapCache } from "./memory-image.js";

interface JobFfi {
  QTS_ExecutePendingJob(rt: number, maxJobs: number, lastJobContext: number): number;
  QTS_FreeValuePointerRuntime(rt: number, value: number): void;
  QTS_NewPromiseCapability(ctx: number, resolveFunctionsOut: number): number;
}

const ffiOf = (owner: QuickJSRuntime | QuickJSContext) => (owner as unknown as { ffi: JobFfi }).ffi;
const valueHandle = (context: QuickJSContext, pointer: number): QuickJSHandle =>
  (context as unknown as { memory: { heapValueHandle(ptr: number): QuickJSHandle } }).memory.heapValueHandle(pointer);

/** Runs up to `maxJobs` pending jobs (-1: all). Returns how many ran, or the uncaught error. */
export function executePendingJobs(
  engine: EngineInstance,
  runtime: QuickJSRuntime,
  context: QuickJSContext,
  maxJobs = -1,
): { executed: number; error?: undefined } | { error: QuickJSHandle; executed?: undefined } {
  const ffi = ffiOf(runtime);
  const slot = jobSlot(engine);
  {
    new Int32Array(engine.memory.buffer, slot, 1)[0] = 0;
    const valuePointer = ffi.QTS_ExecutePendingJob(runtimePointer(runtime), maxJobs, slot);
    const jobContext = new Int32Array(engine.memory.buffer, slot, 1)[0];
    if (jobContext === 0) {
      ffi.QTS_FreeValuePointerRuntime(runtimePointer(runtime), valuePointer);
      return { executed: 0 };
    }
    // A realm's runtime has exactly one context: jobs can only come from it.
    if (jobContext !== contextPointer(context)) throw new Error("engine: a job ran in an unknown context");
    const result = valueHandle(context, valuePointer);
    if (context.typeof(result) === "number") {
      const executed = context.getNumber(result);
      result.dispose();
      return { executed };
    }
    return { error: result };
  }
}

/** One 4-byte output slot per engine instance, for the job pump (it runs on every turn). */
const jobSlots = new WeakMap<EngineInstance, number>();
// A memory image (memory-image.ts) puts back the heap as it was: a slot made since is gone.
registerHeapCache({
  save: (engine) => jobSlots.get(engine),
  restore: (engine, saved) => {
    if (saved === undefined) jobSlots.delete(engine);
    else jobSlots.set(engine, saved as number);
  },
});
function jobSlot(engine: EngineInstance): number {
  let slot = jobSlots.get(engine);
  if (slot === undefined) {
    slot = moduleHeap(engine.module)._malloc(4);
    if (slot === 0) throw new WebAssembly.RuntimeError("out of memory for a job pump");
    jobSlots.set(engine, slot);
  }
  return slot;
}

/** A promise the host settles later (QuickJSContext.newPromise without the stale read). */
export function newDeferredPromise(engine: EngineInstance, context: QuickJSContext): QuickJSDeferredPromise {
  const heap = moduleHeap(engine.module);
  const slots = heap._malloc(8);
  if (slots === 0) throw new WebAssembly.RuntimeError("out of memory for a promise");
  try {
    const promisePointer = ffiOf(context).QTS_NewPromiseCapability(contextPointer(context), slots);
    const [resolvePointer, rejectPointer] = new Int32Array(engine.memory.buffer, slots, 2);
    return new QuickJSDeferredPromise({
      context,
      promiseHandle: valueHandle(context, promisePointer),
      resolveHandle: valueHandle(context, resolvePointer!),
      rejectHandle: valueHandle(context, rejectPointer!),
    });
  } finally {
    heap._free(slots);
  }
}
