// A realm whose bridge cannot be made (the heap at its cap: host/engine/host-function-object.ts
// fails with a RangeError), whose guest core fails to evaluate, or whose core's hooks cannot
// be read (host/engine/own-props.ts, the same), must leave nothing of
// itself in the engine, and if freeing it fails too (QuickJS aborts freeing a runtime that
// still holds an object), the error must say both what failed first and that the engine
// is gone (a RuntimeError, which poisons the sandbox). The heap cannot be brought to its
// cap at exactly that point from a script, so the bridge's maker is replaced here by one
// that fails on demand, and the core by one that throws.
import { describe, expect, test, vi } from "vitest";
import { createEngineInstance } from "../../host/engine/instance.js";
import { findTrackerFieldOffset, RejectionTracking } from "../../host/engine/rejection-tracker.js";
import { SandboxFetchTransport } from "../../host/fetch/transport.js";
import { DEFAULT_LIMITS } from "../../host/limits.js";
import { WatchdogSlot } from "../../host/worker/guard.js";
import { Realm, type RealmServices } from "../../host/worker/realm.js";
// The built bundle: the source tree has no guest-lib/bundle.json next to host/.
import { GuestBundle } from "../../dist/host/worker/guest-bundle.js";

const bridgeFailure = vi.hoisted(() => ({ mode: "none" as "none" | "fails" | "fails-holding-an-object" }));

vi.mock("../../host/worker/bridge/index.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../host/worker/bridge/index.js")>();
  return {
    ...actual,
    createBridge: (realm: Realm, entries: Parameters<typeof actual.createBridge>[1]) => {
      if (bridgeFailure.mode === "none") return actual.createBridge(realm, entries);
      // What a failure halfway through making a function can leave: an object the runtime holds.
      if (bridgeFailure.mode === "fails-holding-an-object") realm.context.newObject();
      throw new RangeError("out of memory for host function fetch");
    },
  };
});

const MiB = 1024 * 1024;

async function realmServices(): Promise<RealmServices> {
  const engine = await createEngineInstance(64 * MiB);
  const tracking = new RejectionTracking(engine, findTrackerFieldOffset(engine));
  const config = { limits: { ...DEFAULT_LIMITS }, allow: [], env: {}, secrets: {}, cloud: null, location: null, streamLogs: false, variant: "release" as const };
  const transport = new SandboxFetchTransport({ allow: [] });
  return {
    engine,
    tracking,
    bundle: GuestBundle.load() as unknown as RealmServices["bundle"],
    watchdog: new WatchdogSlot(new SharedArrayBuffer(24)),
    sandboxId: 1,
    config: () => config,
    transport: () => transport,
    emitLog: () => undefined,
    poisoned: (reason: string) => {
      throw new Error(`engine poisoned: ${reason}`);
    },
  };
}

/** The services with the guest core replaced by `coreSource`, read from source every time (no bytecode cache: the cache is shared by the thread's engines and keyed by the module's name). */
function withCore(services: RealmServices, coreSource: string): RealmServices {
  const bundle = Object.create(services.bundle, {
    source: { value: (name: string) => (name === "core" ? coreSource : services.bundle.source(name)) },
  }) as RealmServices["bundle"];
  return { ...services, bundle, engine: { ...services.engine, bytecode: null } };
}

describe("a realm whose bridge cannot be made", () => {
  test("fails with that error and frees its runtime and context: 300 such failures leave the engine's memory where it was, and the next realm works", async () => {
    const services = await realmServices();
    bridgeFailure.mode = "none";
    new Realm(services).dispose();
    const memoryBefore = services.engine.memory.buffer.byteLength;
    bridgeFailure.mode = "fails";
    try {
      // A runtime and context left behind would be ~100 KB each: 300 of them would grow the memory.
      for (let i = 0; i < 300; i++) expect(() => new Realm(services)).toThrow(RangeError);
    } finally {
      bridgeFailure.mode = "none";
    }
    expect(services.engine.memory.buffer.byteLength).toBe(memoryBefore);
    const realm = new Realm(services);
    expect(realm.context.unwrapResult(realm.context.evalCode("6 * 7")).consume((value) => realm.context.getNumber(value))).toBe(42);
    realm.dispose();
  });

  test("if freeing it fails as well, a RuntimeError (the engine is unusable) that keeps the first failure's message", async () => {
    const services = await realmServices();
    bridgeFailure.mode = "fails-holding-an-object";
    let thrown: unknown;
    try {
      new Realm(services);
    } catch (error) {
      thrown = error;
    } finally {
      bridgeFailure.mode = "none";
    }
    expect(thrown).toBeInstanceOf(WebAssembly.RuntimeError);
    expect((thrown as Error).message).toMatch(/^out of memory for host function fetch; then freeing the unprepared realm failed: /);
  });

  test("a guest core that fails to evaluate frees the realm as well: 300 such failures leave the engine's memory where it was", async () => {
    const services = await realmServices();
    // A core that throws when it runs.
    const failing = withCore(services, "(function (require) { throw new RangeError('the core ran out of room') })");
    expect(() => new Realm(failing)).toThrow(/the core ran out of room/);
    const memoryBefore = services.engine.memory.buffer.byteLength;
    // A runtime, context and bridge left behind would be ~100 KB each: 300 of them would grow the memory.
    for (let i = 0; i < 300; i++) expect(() => new Realm(failing)).toThrow(/the core ran out of room/);
    expect(services.engine.memory.buffer.byteLength).toBe(memoryBefore);
    const realm = new Realm(services);
    expect(realm.context.unwrapResult(realm.context.evalCode("6 * 7")).consume((value) => realm.context.getNumber(value))).toBe(42);
    realm.dispose();
  });

  test("a core whose hooks cannot be read (host/engine/own-props.ts fails) frees the realm as well: 300 such failures leave the engine's memory where it was", async () => {
    const services = await realmServices();
    // The read fails as it would at the heap's cap: the core evaluated, its exports made.
    const failing = withCore(services, "(function (require) { return { hooks: { get serialize() { throw new Error('unreadable') } } } })");
    expect(() => new Realm(failing)).toThrow(/out of memory for the value of serialize/);
    const memoryBefore = services.engine.memory.buffer.byteLength;
    for (let i = 0; i < 300; i++) expect(() => new Realm(failing)).toThrow(RangeError);
    expect(services.engine.memory.buffer.byteLength).toBe(memoryBefore);
    const realm = new Realm(services);
    expect(realm.context.unwrapResult(realm.context.evalCode("6 * 7")).consume((value) => realm.context.getNumber(value))).toBe(42);
    realm.dispose();
  });
});
