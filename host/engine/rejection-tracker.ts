// Unhandled promise rejection tracking for QuickJS runtimes.
//
// QuickJS reports rejections through JSRuntime.host_promise_rejection_tracker, a C
// function pointer that quickjs-emscripten 0.32 neither sets nor exposes. We set it
// ourselves:
//  1. the wasm is patched to export its function table (wasm-binary.ts);
//  2. a 35-byte wasm module imports a JS callback with the tracker's C signature,
//     (JSContext*, JSValue promise, JSValue reason, BOOL is_handled, void* opaque) →
//     (i32, i64, i64, i32, i32) → void, and re-exports it as a wasm function, which we
//     append to the engine's table;
//  3. we find the field's offset in JSRuntime: it sits right after interrupt_handler and
//     interrupt_opaque in every bellard QuickJS of 2021-2025, and interrupt_handler is
//     the one word that changes when quickjs-emscripten enables its interrupt handler.
// A self-test (verifyRejectionTracking) runs once per thread and engine variant; if the
// layout ever differs, sandboxes refuse to start instead of silently missing rejections.
import type { QuickJSRuntime } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { moduleHeap, runtimePointer } from "./internals.js";

/** Called synchronously from inside QuickJS; must not re-enter the engine except to dup values. */
export type RejectionListener = (contextPointer: number, promiseBits: bigint, reasonBits: bigint, handled: boolean) => void;

// (module (type (func (param i32 i64 i64 i32 i32))) (import "e" "f" (func (type 0))) (export "f" (func 0)))
const TRAMPOLINE_WASM = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x09, 0x01, 0x60, 0x05, 0x7f, 0x7e, 0x7e, 0x7f, 0x7f, 0x00,
  0x02, 0x07, 0x01, 0x01, 0x65, 0x01, 0x66, 0x00, 0x00,
  0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00,
]);
let trampolineModule: WebAssembly.Module | undefined;

const WORD = 4;
const SCAN_WORDS = 256;

/** Per engine instance: one table slot whose callback dispatches to runtimes by opaque id. */
export class RejectionTracking {
  private readonly tableIndex: number;
  private readonly listeners = new Map<number, RejectionListener>();
  private nextRuntimeId = 1;
  /** 8 bytes of wasm memory where a JSValue is written so QuickJS can duplicate it. */
  readonly scratchPointer: number;

  constructor(private readonly engine: EngineInstance, private readonly trackerFieldOffset: number) {
    trampolineModule ??= new WebAssembly.Module(TRAMPOLINE_WASM);
    const trampoline = new WebAssembly.Instance(trampolineModule, {
      e: {
        f: (contextPointer: number, promiseBits: bigint, reasonBits: bigint, handled: number, opaque: number) => {
          this.listeners.get(opaque)?.(contextPointer, promiseBits, reasonBits, handled !== 0);
        },
      },
    });
    this.tableIndex = engine.table.grow(1, trampoline.exports.f as never);
    this.scratchPointer = moduleHeap(engine.module)._malloc(8);
    if (this.scratchPointer === 0) throw new Error("engine: no memory for the rejection tracker");
  }

  /** Starts tracking `runtime`; returns a function that stops it. */
  attach(runtime: QuickJSRuntime, listener: RejectionListener): () => void {
    const id = this.nextRuntimeId++;
    this.listeners.set(id, listener);
    const words = new Uint32Array(this.engine.memory.buffer, runtimePointer(runtime) + this.trackerFieldOffset, 2);
    words[0] = this.tableIndex;
    words[1] = id;
    return () => {
      this.listeners.delete(id);
      if (runtime.alive) new Uint32Array(this.engine.memory.buffer, runtimePointer(runtime) + this.trackerFieldOffset, 2).fill(0);
    };
  }

  /** Writes a JSValue's bits to the scratch slot and returns its address. */
  stage(bits: bigint): number {
    new BigInt64Array(this.engine.memory.buffer, this.scratchPointer, 1)[0] = bits;
    return this.scratchPointer;
  }
}

/**
 * Finds host_promise_rejection_tracker's offset in JSRuntime: enable the interrupt handler
 * on a fresh runtime and see which word changed; the tracker field is two words later.
 */
export function findTrackerFieldOffset(engine: EngineInstance): number {
  const runtime = engine.module.newRuntime();
  try {
    const base = runtimePointer(runtime);
    const before = new Uint32Array(engine.memory.buffer, base, SCAN_WORDS).slice();
    runtime.setInterruptHandler(() => false);
    const after = new Uint32Array(engine.memory.buffer, base, SCAN_WORDS);
    const changed: number[] = [];
    for (let i = 0; i < SCAN_WORDS; i++) if (before[i] !== after[i]) changed.push(i);
    const handlerWord = changed[0];
    if (changed.length !== 1 || handlerWord === undefined) {
      throw new Error(`engine: cannot locate interrupt_handler in JSRuntime (changed words: ${changed.join(",")})`);
    }
    const trackerWord = handlerWord + 2;
    if (after[trackerWord] !== 0 || after[trackerWord + 1] !== 0) {
      throw new Error("engine: JSRuntime layout is not the expected one (tracker field not empty)");
    }
    return trackerWord * WORD;
  } finally {
    runtime.dispose();
  }
}

/** Proves on a throwaway runtime that rejections reach the listener, both ways. */
export function verifyRejectionTracking(engine: EngineInstance, tracking: RejectionTracking): void {
  const runtime = engine.module.newRuntime();
  const seen: boolean[] = [];
  const detach = tracking.attach(runtime, (_ctx, _p, _r, handled) => seen.push(handled));
  const context = runtime.newContext();
  try {
    context.evalCode("const p = Promise.reject(1); p.catch(() => {});").unwrap().dispose();
    runtime.executePendingJobs();
  } finally {
    detach();
    context.dispose();
    runtime.dispose();
  }
  if (seen.length !== 2 || seen[0] !== false || seen[1] !== true) {
    throw new Error(`engine: promise rejection tracking self-test failed (${JSON.stringify(seen)})`);
  }
}
