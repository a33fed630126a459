// EngineBytes (host/engine/engine-bytes.ts): a block of the engine's heap that a fetched body
// is written into chunk by chunk, then adopted as the guest's ArrayBuffer without a copy.
// On a real engine instance: the writes must land whatever the guest allocates (and the
// wasm memory grows) between two chunks, and a block must be freed exactly once.
import type { QuickJSContext } from "quickjs-emscripten-core";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { EngineBytes } from "../../host/engine/engine-bytes.js";
import { createEngineInstance, type EngineInstance } from "../../host/engine/instance.js";

let engine: EngineInstance;
let ctx: QuickJSContext;
beforeEach(async () => {
  engine = await createEngineInstance(256 * 1024 * 1024);
  ctx = engine.module.newContext();
});
afterEach(() => ctx.dispose());

const evaluate = (code: string): unknown => ctx.unwrapResult(ctx.evalCode(code)).consume((value) => ctx.dump(value));
const chunk = (length: number, start: number) => Uint8Array.from({ length }, (_, i) => (start + i) % 251);

describe("EngineBytes", () => {
  test("chunks written across a growth of the wasm memory arrive in the adopted ArrayBuffer, in place", () => {
    const length = 3 * 65536;
    const block = EngineBytes.allocate(engine, length)!;
    block.write(chunk(65536, 0), 0);
    const pages = engine.memory.buffer.byteLength;
    // The guest allocates 64 MiB between two chunks: the heap's ArrayBuffer is replaced.
    evaluate(`globalThis.big = new Uint8Array(64 * 1024 * 1024); 0`);
    expect(engine.memory.buffer.byteLength).toBeGreaterThan(pages);
    block.write(chunk(65536, 65536), 65536);
    block.write(chunk(65536, 2 * 65536), 2 * 65536);
    const buffer = block.adopt(ctx)!;
    expect(block.alive).toBe(false);
    ctx.setProp(ctx.global, "body", buffer);
    buffer.dispose();
    expect(evaluate(`const b = new Uint8Array(body); let wrong = 0; for (let i = 0; i < b.length; i++) if (b[i] !== i % 251) wrong++; [b.length, wrong]`)).toEqual([
      length,
      0,
    ]);
  });

  test("a write outside the block, or after release, is refused; release frees once and tells onGone once", () => {
    const gone: EngineBytes[] = [];
    const block = EngineBytes.allocate(engine, 100, (b) => gone.push(b))!;
    expect(() => block.write(new Uint8Array(10), 95)).toThrow(RangeError);
    expect(() => block.write(new Uint8Array(1), -1)).toThrow(RangeError);
    block.write(new Uint8Array(100), 0);
    block.release();
    block.release();
    expect(gone).toEqual([block]);
    expect(() => block.write(new Uint8Array(1), 0)).toThrow("released");
    expect(() => block.adopt(ctx)).toThrow("released");
  });

  test("a released block, and an adopted one whose ArrayBuffer dies, go back to malloc (1 GiB through a 256 MiB heap)", () => {
    for (let i = 0; i < 512; i++) {
      const block = EngineBytes.allocate(engine, 1024 * 1024);
      expect(block).not.toBeNull();
      if (i % 2 === 0) block!.release();
      else block!.adopt(ctx)!.dispose(); // the only reference: QuickJS frees the ArrayBuffer and its block
    }
  });

  test("no room: allocate returns null instead of writing through a failed malloc", () => {
    expect(EngineBytes.allocate(engine, 512 * 1024 * 1024)).toBeNull();
  });
});
