// Issue 2 §8: sandbox.load() keeps a module alive; plugin.call() calls an export many
// times with its state kept, each call with its own CPU budget, JSON-like arguments and
// results; calling a missing export is a clear error.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, ScriptError, type Plugin, type Sandbox } from "scriptbox";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ limits: { cpuTimeMs: 150 } });
});
afterAll(async () => {
  await sandbox.dispose();
});

const COUNTER = `
  let count = 0;
  const seen = [];
  export function add(n) { count += n; return count }
  export async function remember(item) { await new Promise((r) => setTimeout(r, 5)); seen.push(item); return seen.length }
  export function items() { return seen }
  export function burn(ms) { const end = Date.now() + ms; while (Date.now() < end) {} return ms }
  export function fail(message) { throw new RangeError(message) }
  export function spin() { for (;;) {} }
  export const notAFunction = 42;
`;

describe("plugins", () => {
  let plugin: Plugin;
  beforeAll(async () => {
    plugin = await sandbox.load(COUNTER, { filename: "counter.js" });
  });

  it("lists the module's exports", () => {
    expect([...plugin.exports]).toEqual(["add", "burn", "fail", "items", "notAFunction", "remember", "spin"]);
  });

  it("keeps module state across calls", async () => {
    expect(await plugin.call("add", 2)).toBe(2);
    expect(await plugin.call("add", 3)).toBe(5);
    expect(await plugin.call("add", -5)).toBe(0);
  });

  it("passes JSON-like arguments and results as copies", async () => {
    await plugin.call("remember", { id: 1, tags: ["a"], at: new Date(0) });
    await plugin.call("remember", { id: 2, bytes: new Uint8Array([7]) });
    expect(await plugin.call("items")).toEqual([
      { id: 1, tags: ["a"], at: "1970-01-01T00:00:00.000Z" },
      { id: 2, bytes: new Uint8Array([7]) },
    ]);
    await expect(plugin.call("add", () => 1)).rejects.toThrow("args[0]: a function cannot cross into the sandbox");
  });

  it("gives every call its own CPU budget", async () => {
    // Each call burns 100 ms of a 150 ms budget; together they use far more than one budget.
    for (let i = 0; i < 4; i++) expect(await plugin.call("burn", 100)).toBe(100);
  });

  it("runs calls on one plugin one after another", async () => {
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => plugin.call("add", n)));
    expect(results).toEqual([1, 3, 6, 10, 15]);
    await plugin.call("add", -15);
  });

  it("reports a missing export clearly", async () => {
    const error = await plugin.call("nope").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScriptError);
    expect((error as ScriptError).message).toBe(
      'the plugin has no exported function "nope" (its exports: add, burn, fail, items, notAFunction, remember, spin)',
    );
    await expect(plugin.call("notAFunction")).rejects.toThrow('the plugin has no exported function "notAFunction"');
  });

  it("turns a throwing call into a ScriptError and stays loaded", async () => {
    const error = (await plugin.call("fail", "out of range").catch((e: unknown) => e)) as ScriptError;
    expect(error).toBeInstanceOf(ScriptError);
    expect(error).toMatchObject({ kind: "script", guestName: "RangeError", message: "out of range" });
    expect(error.stack).toMatch(/counter\.js:\d+:\d+/);
    expect(await plugin.call("add", 1)).toBe(1);
  });

  it("invoke returns the whole result with logs and stats", async () => {
    // Some real work, so that the thread's CPU clock (host/thread-cpu.ts) has moved.
    const chatty = await sandbox.load("export function hello(name) { console.log('hello', name); let s = 0; for (let i = 0; i < 3e5; i++) s += i; return s > 0 ? name.length : 0 }");
    const result = await chatty.invoke("hello", "ada");
    expect(result).toMatchObject({ ok: true, value: 3, logs: [{ level: "log", message: "hello ada" }] });
    expect(result.stats.cpuTimeMs).toBeGreaterThan(0);
    // A thread cannot run longer than the time that passed (host/worker/guard.ts caps each
    // entry's charge at its wall time: schedstat lags by up to a scheduler tick).
    expect(result.stats.cpuTimeMs).toBeLessThanOrEqual(result.stats.wallTimeMs);
  });

  it("a call answered without logs keeps the whole result: its value, kept undefined or null, and every stat", async () => {
    // Such answers cross from the worker in a short form (host/protocol.ts: CallAnswerMessage).
    const server = createServer((_request, response) => response.end("hi"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const fetching = await createSandbox({ net: { allow: [`127.0.0.1:${port}`] } });
    try {
      const quiet = await fetching.load(`
        export function nothing() {}
        export function none() { return null }
        export function nested(n) { return { n, list: [n, { deep: [true, "x"] }], bytes: new Uint8Array([n]), missing: undefined } }
        export async function fetched() { return (await fetch("http://127.0.0.1:${port}/")).text() }`);
      const stats = { cpuTimeMs: expect.any(Number), wallTimeMs: expect.any(Number), memoryBytes: expect.any(Number), fetches: 0, queuedMs: expect.any(Number) };
      // (Whether an undefined value stays an own key is test/host/protocol.test.ts's: toEqual cannot tell.)
      expect(await quiet.invoke("nothing")).toEqual({ ok: true, value: undefined, logs: [], stats });
      expect(await quiet.invoke("none")).toEqual({ ok: true, value: null, logs: [], stats });
      expect(await quiet.invoke("nested", 7)).toEqual({ ok: true, value: { n: 7, list: [7, { deep: [true, "x"] }], bytes: new Uint8Array([7]) }, logs: [], stats });
      const result = await quiet.invoke("fetched");
      expect(result).toEqual({ ok: true, value: "hi", logs: [], stats: { ...stats, fetches: 1 } });
      expect(result.stats.memoryBytes).toBeGreaterThan(1024 * 1024);
      expect(result.stats.cpuTimeMs).toBeGreaterThan(0);
      expect(result.stats.cpuTimeMs).toBeLessThanOrEqual(result.stats.wallTimeMs);
    } finally {
      await fetching.dispose();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("unloads a plugin stopped by a limit, and the sandbox goes on", async () => {
    const victim = await sandbox.load(COUNTER);
    const error = (await victim.call("spin").catch((e: unknown) => e)) as ScriptError;
    expect(error).toMatchObject({ kind: "cpu", message: "cpuTimeMs limit (150 ms) exceeded; the plugin was unloaded" });
    await expect(victim.call("add", 1)).rejects.toThrow("the plugin is not loaded");
    expect(await plugin.call("add", 0)).toBe(1); // the other plugin is untouched
    expect(await sandbox.run("export default () => 'run ok'")).toMatchObject({ ok: true, value: "run ok" });
  });

  it("unload() frees a plugin; later calls fail clearly", async () => {
    const temporary = await sandbox.load("export const f = () => 1");
    expect(await temporary.call("f")).toBe(1);
    await temporary.unload();
    await expect(temporary.call("f")).rejects.toThrow("the plugin is not loaded");
  });

  it("a plugin that fails to load is a ScriptError with its kind", async () => {
    await expect(sandbox.load("export const = 1", { filename: "broken.js" })).rejects.toMatchObject({ kind: "syntax" });
    await expect(sandbox.load("throw new Error('init failed')")).rejects.toMatchObject({ kind: "script", message: "init failed" });
    await expect(sandbox.load("const x: number = ;", { filename: "broken.ts" })).rejects.toMatchObject({ kind: "syntax" });
  });

  it("plugins live in their own realms, apart from runs and from each other", async () => {
    const a = await sandbox.load("globalThis.shared = 'a'; export const read = () => globalThis.shared");
    const b = await sandbox.load("export const read = () => typeof globalThis.shared");
    expect(await a.call("read")).toBe("a");
    expect(await b.call("read")).toBe("undefined");
    expect(await sandbox.run("export default () => typeof globalThis.shared")).toMatchObject({ ok: true, value: "undefined" });
  });
});
