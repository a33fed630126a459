// Issue 10 §2: every entry into guest code the host makes for its own purposes (export
// listing, plugin arguments and results, the post-run module-usage hook, error
// description) is guarded by the sandbox's CPU limit, and host-side marshalling calls no
// accessor, toJSON or prototype method a script defined. Each hostile case runs beside
// bystander sandboxes (at least one on the same worker: see guest-helpers.ts), which keep answering.
// `MODE=forever` variants make the hostile code loop forever: they must end with kind `cpu`
// within the CPU limit (+25 ms, the interrupt's granularity) instead of hanging the worker.
import { describe, expect, it } from "vitest";
import { ScriptError } from "scriptbox";
import { bystandersAnswer, hostileAmongBystanders } from "./guest-helpers.js";

const CPU_LIMIT_MS = 150;
const limits = { cpuTimeMs: CPU_LIMIT_MS, wallTimeMs: 5_000 };

/** A plugin load that must fail with kind `cpu` (or succeed, for the harmless variants). */
async function loadOutcome(hostile: Awaited<ReturnType<typeof hostileAmongBystanders>>["hostile"], source: string) {
  try {
    const plugin = await hostile.load(source);
    return { ok: true as const, plugin };
  } catch (error) {
    expect(error).toBeInstanceOf(ScriptError);
    return { ok: false as const, error: error as ScriptError };
  }
}

describe("guarded entries into guest code, with bystanders on the same worker", () => {
  it("Object.prototype.toJSON that loops forever: load() ends (export listing calls no toJSON)", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const started = performance.now();
      const [loaded] = await Promise.all([
        loadOutcome(world.hostile, `Object.prototype.toJSON = () => { for (;;) {} }; export const a = 1; export function f(x) { return x + 1 } export const g = () => ({ x: 1 });`),
        bystandersAnswer(world.bystanders),
      ]);
      expect(performance.now() - started).toBeLessThan(limits.wallTimeMs);
      // Export names are strings: listing them needs no toJSON at all, so the load succeeds.
      expect(loaded.ok).toBe(true);
      if (loaded.ok) {
        expect(loaded.plugin.exports).toEqual(["a", "f", "g"]);
        // A call's number result crosses directly; the missing-export error lists exports too.
        expect(await loaded.plugin.call("f", 41)).toBe(42);
        const missing = await loaded.plugin.invoke("nope");
        expect(missing).toMatchObject({ ok: false, error: { kind: "script", message: 'the plugin has no exported function "nope" (its exports: a, f, g)' } });
        // An object result does consult toJSON (documented marshalling); it loops forever: kind cpu.
        const object = await loaded.plugin.invoke("g");
        expect(object).toMatchObject({ ok: false, error: { kind: "cpu" } });
        if (!object.ok) expect(object.stats.cpuTimeMs).toBeLessThanOrEqual(CPU_LIMIT_MS + 25);
      }
      await bystandersAnswer(world.bystanders);
    } finally {
      await world.dispose();
    }
  });

  it("a setter on Array.prototype[0] never runs when bytes cross in (input and plugin arguments)", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const hostileRun = world.hostile.run(
        `Object.defineProperty(Array.prototype, 0, { set() { for (;;) {} }, get() { for (;;) {} }, configurable: true });
         export default (input) => [input.bytes.length, input.more[1].length];`,
        { input: { bytes: new Uint8Array([1, 2, 3]), more: [new Uint8Array(1), new Uint8Array(5)] } },
      );
      const [result] = await Promise.all([hostileRun, bystandersAnswer(world.bystanders)]);
      // The input crossed without calling the setter (the script then read it: the lengths).
      // Its result does not cross while the setter is there: a clear error of its own run.
      expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "TypeError" } });
      if (!result.ok) expect(result.error.message).toContain('the script defined an index property ("0") on Array.prototype');
      const plugin = await world.hostile.load(
        `Object.defineProperty(Array.prototype, 0, { set() { for (;;) {} }, get() { for (;;) {} }, configurable: true });
         export function size(a, b) { return a.length * 10 + b.length }
         export function bytes(n) { return new Uint8Array(n) }`,
      );
      expect(await plugin.call("size", new Uint8Array(4), new Uint8Array(2))).toBe(42);
      // An object result is written by QuickJS's own JSON.stringify, which stores into an
      // internal array and so would meet the setter: while a script's index property is on
      // Array.prototype no value crosses out (a clear error of the script's own result).
      const bytes = await plugin.invoke("bytes", 3);
      expect(bytes).toMatchObject({ ok: false, error: { kind: "script", name: "TypeError" } });
      if (!bytes.ok) expect(bytes.error.message).toContain('the script defined an index property ("0") on Array.prototype');
      await bystandersAnswer(world.bystanders);
    } finally {
      await world.dispose();
    }
  });

  it("a replaced Map.prototype.forEach/get/set does not reach the post-run module-usage hook", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const spin = `() => { for (;;) {} }`;
      const results = await Promise.all([
        world.hostile.run(`Map.prototype.forEach = ${spin}; Map.prototype.keys = ${spin}; Map.prototype.clear = ${spin};
          export default () => { console.log("uses console"); return 7 }`),
        bystandersAnswer(world.bystanders),
      ]);
      expect(results[0]).toMatchObject({ ok: true, value: 7 });
      expect(results[0].stats.cpuTimeMs).toBeLessThan(CPU_LIMIT_MS);
      // MODE=forever: Map.prototype.get/set/has and the array iterator are what the module
      // registry would use to load console and marshal after the script ran.
      const forever = await world.hostile.run(`Map.prototype.get = ${spin}; Map.prototype.set = ${spin}; Map.prototype.has = ${spin};
        Array.prototype[Symbol.iterator] = ${spin}; Object.defineProperty(Object.prototype, "get", { get: ${spin}, configurable: true });
        export default () => { console.log("logged"); return { value: 8 } }`);
      expect(forever).toMatchObject({ ok: true, value: { value: 8 }, logs: [{ message: "logged" }] });
      await bystandersAnswer(world.bystanders);
    } finally {
      await world.dispose();
    }
  });

  it("error description that loops forever (a thrown object with a looping getter) ends with kind cpu", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const [result] = await Promise.all([
        world.hostile.run(`export default () => { throw { get message() { for (;;) {} }, get stack() { for (;;) {} } } }`),
        bystandersAnswer(world.bystanders),
      ]);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.kind).toBe("cpu");
        expect(result.stats.cpuTimeMs).toBeLessThanOrEqual(CPU_LIMIT_MS + 25);
      }
      await bystandersAnswer(world.bystanders);
    } finally {
      await world.dispose();
    }
  });

  it("a plugin whose module evaluation loops forever fails its load with kind cpu; the sandbox stays usable", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const [loaded] = await Promise.all([loadOutcome(world.hostile, `for (;;) {} export const a = 1;`), bystandersAnswer(world.bystanders)]);
      expect(loaded.ok).toBe(false);
      if (!loaded.ok) expect(loaded.error.kind).toBe("cpu");
      expect(await world.hostile.run(`export default () => "still here"`)).toMatchObject({ ok: true, value: "still here" });
    } finally {
      await world.dispose();
    }
  });
});
