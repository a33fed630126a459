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

// The embedder's side with a scripted worker (this thread plays it through the real
// ports and block): a synchronous call the worker handed over in the block and then gave
// up on (its run hit wallTimeMs while the embedder was busy in a long host function) must
// not overwrite the answer to the worker's next call, which its next run may have posted
// meanwhile. Found by a hostile review: the next run's call waited out its own deadline.
describe("HostCallServer and calls the worker gave up on", () => {
  async function scriptedWorker() {
    const { HostCallServer, SyncCallState } = await import("../../dist/host/host-modules/call-server.js");
    const { callToWire } = await import("../../dist/host/host-modules/manifest.js");
    const { MessageChannel } = await import("node:worker_threads");
    const server = new HostCallServer();
    const calls = new MessageChannel();
    const syncReplies = new MessageChannel();
    const signal = new SharedArrayBuffer(SYNC_CALL_BLOCK_BYTES);
    server.attach({ type: "host-calls", calls: calls.port2, syncReplies: syncReplies.port2, signal });
    const block = new SyncCallBlock(signal);
    const ran: string[] = [];
    const functions: { label: string; sync: boolean; fn: (...args: unknown[]) => unknown }[] = [];
    const token = server.openActivation({
      functions: (id: number) => functions[id],
      sandboxId: 1,
      filename: "scripted.js",
      syncState: new SyncCallState(),
      maxCallBytes: 1 << 20,
    });
    const send = (id: number, fn: number, arg: string, sync: boolean) =>
      calls.port1.postMessage(callToWire({ t: token, c: id, f: fn, j: JSON.stringify([arg]), b: [], s: sync ? 1 : 0 }));
    const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
    const close = () => {
      server.closeAll();
      calls.port1.close();
      syncReplies.port1.close();
    };
    return { server, block, ran, functions, token, send, settle, close, callToWire };
  }

  it("an older call taken from the block is answered before newer posted ones, and READY ends on the newest", async () => {
    const w = await scriptedWorker();
    try {
      w.functions.push({ label: "app.get", sync: true, fn: (arg) => (w.ran.push(String(arg)), `answer to ${arg}`) });
      w.functions.push({
        label: "app.busy",
        sync: false,
        // Runs on the embedder's thread inside its poll session. Meanwhile, "the worker"
        // hands sync call 3 over in the block, gives up on it, and its next run posts 4.
        fn: () => {
          w.ran.push("busy");
          expect(w.block.offerCall(w.callToWire({ t: w.token, c: 3, f: 0, j: JSON.stringify(["A"]), b: [], s: 1 }) as string)).toBe(true);
          w.send(4, 0, "B", true);
          return "done";
        },
      });
      w.send(1, 0, "first", true);
      w.send(2, 1, "x", false);
      await w.settle();
      expect(w.ran).toEqual(["first", "busy", "A", "B"]);
      expect(w.block.readyFor(4)).toBe(true);
      expect(w.block.inlineText()).toBe(JSON.stringify("answer to B"));
    } finally {
      w.close();
    }
  });

  it("a synchronous call older than the last one answered is not run and answers nothing", async () => {
    const w = await scriptedWorker();
    try {
      w.functions.push({ label: "app.get", sync: true, fn: (arg) => (w.ran.push(String(arg)), `answer to ${arg}`) });
      w.send(10, 0, "newer", true);
      await w.settle();
      w.send(9, 0, "given up", true);
      await w.settle();
      expect(w.ran).toEqual(["newer"]);
      expect(w.block.readyFor(10)).toBe(true);
      expect(w.block.inlineText()).toBe(JSON.stringify("answer to newer"));
      // Whole ids compared, not their low 32 bits: a sync call more than 2^31 ids after the
      // last one answered (billions of async calls in between) is newer, and runs.
      w.send(10 + 2 ** 31 + 5, 0, "2^31 later", true);
      await w.settle();
      w.send(2 ** 32 + 11, 0, "past 2^32", true);
      await w.settle();
      expect(w.ran).toEqual(["newer", "2^31 later", "past 2^32"]);
      expect(w.block.readyFor(2 ** 32 + 11)).toBe(true);
    } finally {
      w.close();
    }
  });
});
