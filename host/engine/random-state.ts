// Math.random's state in a QuickJS context. QuickJS seeds it per context from the clock
// (js_random_init: the time in microseconds) and keeps it in JSContext as one 64-bit word
// (xorshift64*). A realm made from a memory image (memory-image.ts) would otherwise start
// every run with the same word, so every run would see the same "random" numbers; the
// host writes a fresh seed from the system's random source after each restore.
//
// The word's offset in JSContext is not exported: it is found once per thread and build
// by shape, on a throwaway context (the only word in the struct that holds the clock's
// microseconds at the moment the context was made), then proven by seeding it twice with
// the same value and once with another one.
import { randomFillSync } from "node:crypto";
import type { EngineInstance } from "./instance.js";
import { contextPointer } from "./internals.js";
import type { EngineVariantName } from "./wasm-binary.js";

/** How far into JSContext to look (the field sits in its first few hundred bytes). */
const SCAN_BYTES = 4096;

const offsets = new Map<EngineVariantName, number | null>();

/** The offset of Math.random's state in this build's JSContext, or null when it cannot be found and proven. */
export function randomStateOffset(engine: EngineInstance): number | null {
  let offset = offsets.get(engine.variant);
  if (offset === undefined) {
    offset = findRandomStateOffset(engine);
    offsets.set(engine.variant, offset);
  }
  return offset;
}

/** Writes a fresh seed (never 0, which xorshift would keep at 0) into a context's random state. */
export function reseedRandomState(engine: EngineInstance, context: number, offset: number): void {
  const seed = new BigUint64Array(1);
  do randomFillSync(seed);
  while (seed[0] === 0n);
  new DataView(engine.memory.buffer).setBigUint64(context + offset, seed[0]!, true);
}

function findRandomStateOffset(engine: EngineInstance): number | null {
  const runtime = engine.module.newRuntime();
  try {
    const before = BigInt(Date.now() - 1000) * 1000n;
    const context = runtime.newContext();
    const after = BigInt(Date.now() + 1000) * 1000n;
    try {
      const base = contextPointer(context);
      const view = new DataView(engine.memory.buffer);
      const candidates: number[] = [];
      for (let at = 0; at + 8 <= SCAN_BYTES; at += 4) {
        const word = view.getBigUint64(base + at, true);
        if (word >= before && word <= after) candidates.push(at);
      }
      if (candidates.length !== 1) return null;
      const offset = candidates[0]!;
      const draw = (seed: bigint) => {
        new DataView(engine.memory.buffer).setBigUint64(base + offset, seed, true);
        const result = context.evalCode("Math.random()");
        const value = context.getNumber(result.unwrap());
        result.dispose();
        return value;
      };
      const first = draw(0x1234_5678_9abc_def1n);
      const again = draw(0x1234_5678_9abc_def1n);
      const other = draw(0x0fed_cba9_8765_4321n);
      return first === again && first !== other ? offset : null;
    } finally {
      context.dispose();
    }
  } catch {
    return null;
  } finally {
    runtime.dispose();
  }
}
