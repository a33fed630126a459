// Memory headroom checks before the host moves bytes or text into an engine instance.
//
// quickjs-emscripten's newArrayBuffer/newString call malloc without a NULL check: at the
// memory cap they write through address 0 and corrupt the instance (DESIGN.md, measured
// facts). So before a large copy we ask malloc itself: allocate what the copy will need
// (the staging buffer and QuickJS's own copy live at the same time), then free it. A
// probe that fails means the copy would have failed; the guest call fails cleanly instead.
import type { EngineInstance } from "./instance.js";
import { moduleHeap } from "./internals.js";

const SLACK_BYTES = 256 * 1024; // QuickJS's own bookkeeping around the copy

export function canAllocate(engine: EngineInstance, stagingBytes: number, engineBytes: number, slackBytes = SLACK_BYTES): boolean {
  const heap = moduleHeap(engine.module);
  // A probe that fails is not the script's failed allocation (EngineInstance.failedGrowths).
  return engine.probe(() => {
    const staging = heap._malloc(stagingBytes + 8);
    if (staging === 0) return false;
    const copy = heap._malloc(engineBytes + slackBytes);
    heap._free(staging);
    if (copy === 0) return false;
    heap._free(copy);
    return true;
  });
}

/**
 * Whether the staging buffer alone can be allocated: the check for small values. QuickJS
 * checks its own allocations (and throws "out of memory" cleanly); only the staging malloc
 * in quickjs-emscripten is unchecked, and at the cap even a few bytes can fail. One
 * malloc/free pair in the engine's own heap, well under a microsecond.
 */
function canStage(engine: EngineInstance, bytes: number): boolean {
  const heap = moduleHeap(engine.module);
  return engine.probe(() => {
    const staging = heap._malloc(bytes + 8);
    if (staging === 0) return false;
    heap._free(staging);
    return true;
  });
}

/** Bytes of an ArrayBuffer: staged once, copied once by QuickJS. */
export function canMoveBytes(engine: EngineInstance, byteLength: number): boolean {
  return byteLength < 64 * 1024 ? canStage(engine, byteLength) : canAllocate(engine, byteLength, byteLength);
}

/** A string: staged as UTF-8 (≤ 3 bytes per UTF-16 unit), stored by QuickJS as ≤ 2 bytes per unit. */
export function canMoveString(engine: EngineInstance, length: number): boolean {
  return length < 16 * 1024 ? canStage(engine, length * 3) : canAllocate(engine, length * 3, length * 2);
}

/**
 * Heap a guest module's evaluation needs per character of its (minified) source: parsing
 * and running the factory of each bundle in guest-lib/ took 5-10.3 bytes of heap per
 * character (web: 44.6 KB of source, ~460 KB of heap; cloud 15 KB, ~135 KB), measured as
 * the largest allocatable block before and after the first load. With margin.
 */
const MODULE_HEAP_PER_CHAR = 16;

/**
 * Room kept free beyond a compilation's own need. The compiler misbehaved with a few KiB
 * left (~10 KiB: the loop); much more would refuse a small module (marshal, 4 KB, needed
 * to describe an error) while a failed 1 MiB allocation still left plenty of room for it.
 */
const COMPILE_SLACK_BYTES = 64 * 1024;

/**
 * Whether QuickJS can compile and evaluate source text of this length: the staging copy
 * plus the heap the parser and the code's first run take, plus COMPILE_SLACK_BYTES. Moving the
 * text in is not enough: at a few KiB from the cap QuickJS's compiler was seen to trap on
 * a NULL it does not check, to report bogus syntax errors ("invalid increment/decrement
 * operand"), and, for a module, to loop forever without calling the interrupt handler.
 * So a source is handed to the engine only when it can clearly be compiled.
 */
export function canCompile(engine: EngineInstance, length: number): boolean {
  return canAllocate(engine, length * 3, length * MODULE_HEAP_PER_CHAR, COMPILE_SLACK_BYTES);
}

/** The largest body that can currently be moved in, found by probing (for fetch budgets). */
export function largestMovableBytes(engine: EngineInstance, upTo: number): number {
  if (canMoveBytes(engine, upTo)) return upTo;
  let low = 0;
  let high = upTo;
  while (high - low > 64 * 1024) {
    const mid = Math.floor((low + high) / 2);
    if (canMoveBytes(engine, mid)) low = mid;
    else high = mid;
  }
  return low;
}
