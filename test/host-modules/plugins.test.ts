// Issue 9 §6: plugins and host modules. plugin.call → guest hook → host function → result,
// with the plugin's state kept; each call has its own CPU budget and its own call context
// (the signal aborts when that call ends); one module object serves many plugins, in one
// sandbox or many.
import { describe, expect, it } from "vitest";
import { createSandbox, hostSync, ScriptError, type HostCallContext } from "scriptbox";

describe("plugins calling host modules", () => {
  it("hook → host function → result, with plugin state and host state kept across calls", async () => {
    const saved: string[] = [];
    const contexts: HostCallContext[] = [];
    const sandbox = await createSandbox({
      modules: {
        app: {
          save: hostSync(function (this: HostCallContext, item: string) {
            contexts.push(this);
            saved.push(item);
            return saved.length;
          }),
          async lookup(this: HostCallContext, key: string) {
            contexts.push(this);
            return key.toUpperCase();
          },
        },
      },
    });
    try {
      const plugin = await sandbox.load(
        `import { save, lookup } from "app";
         const greeting = await lookup("loaded"); // host calls at load time too
         let calls = 0;
         export async function onItem(item) { calls++; return { stored: save(item), label: await lookup(item), calls, greeting } }`,
        { filename: "items-plugin.js" },
      );
      expect(await plugin.call("onItem", "a")).toEqual({ stored: 1, label: "A", calls: 1, greeting: "LOADED" });
      expect(await plugin.call("onItem", "b")).toEqual({ stored: 2, label: "B", calls: 2, greeting: "LOADED" });
      expect(saved).toEqual(["a", "b"]);
      expect(new Set(contexts.map((c) => c.filename))).toEqual(new Set(["items-plugin.js"]));
      // Load, call 1, call 2: three activations, three signals, all aborted now that each ended.
      const signals = new Set(contexts.map((c) => c.signal));
      expect(signals.size).toBe(3);
      expect([...signals].every((signal) => signal.aborted)).toBe(true);
    } finally {
      await sandbox.dispose();
    }
  });

  it("a call's pending host work ends with that call: its signal aborts, the next call is unaffected", async () => {
    const signals: AbortSignal[] = [];
    const sandbox = await createSandbox({
      limits: { wallTimeMs: 300 },
      modules: {
        app: {
          hang(this: HostCallContext) {
            signals.push(this.signal);
            return new Promise(() => undefined);
          },
          quick: async () => "quick",
        },
      },
    });
    try {
      const plugin = await sandbox.load(`import { hang, quick } from "app"; export const wait = () => hang(); export const fast = () => quick();`);
      const error = await plugin.call("wait").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ScriptError);
      expect((error as ScriptError).kind).toBe("timeout");
      expect(signals).toHaveLength(1);
      expect(signals[0]!.aborted).toBe(true);
      // A limit unloads the plugin (its state is torn); a new load works with the same module.
      const again = await sandbox.load(`import { quick } from "app"; export const fast = () => quick();`);
      expect(await again.call("fast")).toBe("quick");
    } finally {
      await sandbox.dispose();
    }
  });

  it("the per-call CPU budget applies to a hook that loops over host calls", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 100, maxHostCalls: 100_000_000 }, modules: { app: { tick: hostSync(() => 1) } } });
    try {
      const plugin = await sandbox.load(`import { tick } from "app"; export function busy() { let n = 0; for (;;) n += tick() } export function ok() { return tick() }`);
      const error = (await plugin.call("busy").catch((e: unknown) => e)) as ScriptError;
      expect(error).toBeInstanceOf(ScriptError);
      expect(error.kind).toBe("cpu");
      expect(error.message).toBe("cpuTimeMs limit (100 ms) exceeded; the plugin was unloaded");
    } finally {
      await sandbox.dispose();
    }
  });

  it("one module object serves many plugins, in one sandbox and across sandboxes, sharing the embedder's state", async () => {
    const counts = new Map<string, number>();
    const app = {
      bump: hostSync((key: string) => {
        counts.set(key, (counts.get(key) ?? 0) + 1);
        return counts.get(key)!;
      }),
    };
    const source = `import { bump } from "app"; export const hit = (key) => bump(key);`;
    const first = await createSandbox({ modules: { app } });
    const second = await createSandbox({ modules: { app } });
    try {
      const plugins = [await first.load(source), await first.load(source), await second.load(source)];
      const seen: number[] = [];
      for (let round = 0; round < 3; round++) for (const plugin of plugins) seen.push(await plugin.call<number>("hit", "shared"));
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(counts.get("shared")).toBe(9);
    } finally {
      await first.dispose();
      await second.dispose();
    }
  });
});
