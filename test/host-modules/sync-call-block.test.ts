// The shared block of synchronous host calls (host/host-modules/sync-call-block.ts), both
// sides driven from one thread: which answer is ready (call ids past 2^31 and 2^32, as a
// long-lived worker reaches them), answers in the block or on the port, and the handshake
// that hands a call over only while the embedder watches. The cross-thread behaviour is
// tested through real sandboxes in contract.test.ts and lifecycle.test.ts.
import { describe, expect, it } from "vitest";
import { SYNC_CALL_BLOCK_BYTES, SYNC_INLINE_CHARS, SyncCallBlock } from "../../dist/host/host-modules/sync-call-block.js";

const newBlock = () => new SyncCallBlock(new SharedArrayBuffer(SYNC_CALL_BLOCK_BYTES));

describe("SyncCallBlock", () => {
  it("says which call's answer is ready, for call ids past 2^31 and 2^32 too", () => {
    const block = newBlock();
    for (const id of [1, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 5, 2 ** 32 + 7, 2 ** 40 + 3]) {
      expect(block.readyFor(id)).toBe(false);
      expect(block.answerInline(id, `[${id}]`)).toBe(true);
      expect(block.readyFor(id)).toBe(true);
      expect(block.readyFor(id + 1)).toBe(false);
      expect(block.inlineText()).toBe(`[${id}]`);
    }
  });

  it("keeps answers up to SYNC_INLINE_CHARS in the block, any UTF-16; says 'on the port' otherwise", () => {
    const block = newBlock();
    const edge = "\ud83d\ude00é\u0000".repeat(SYNC_INLINE_CHARS / 4);
    expect(edge).toHaveLength(SYNC_INLINE_CHARS);
    expect(block.answerInline(3, edge)).toBe(true);
    expect(block.inlineText()).toBe(edge);
    expect(block.answerInline(4, `${edge}x`)).toBe(false);
    expect(block.readyFor(4)).toBe(false); // not marked: the caller posts it and calls answerOnPort
    block.answerOnPort(4);
    expect(block.readyFor(4)).toBe(true);
    expect(block.inlineText()).toBeNull();
  });

  it("hands a call over only while the embedder watches; a call taken as it stops watching is returned, not lost", () => {
    const block = newBlock();
    expect(block.offerCall("1a")).toBe(false); // idle: the worker posts it
    block.watchCalls();
    expect(block.takeCall()).toBeNull();
    expect(block.offerCall("1b")).toBe(true);
    expect(block.takeCall()).toBe("1b");
    expect(block.takeCall()).toBeNull(); // taken once
    expect(block.offerCall("1c")).toBe(true);
    expect(block.stopWatching()).toBe("1c"); // arrived as the session ended: the embedder handles it
    expect(block.offerCall("1d")).toBe(false);
    expect(block.stopWatching()).toBeNull();
    block.watchCalls();
    expect(block.offerCall("x".repeat(SYNC_INLINE_CHARS + 1))).toBe(false); // too long: posted
    expect(block.stopWatching()).toBeNull();
  });
});
