// Issue 10 §8 and §9: per-run counters belong to the activation (a plugin call never
// shares or resets a run's maxFetches), and "__proto__" own keys cross as plain data in
// both directions (input, plugin arguments, results, env, secrets), polluting nothing.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "scriptbox";

let server: Server;
let origin: string;
beforeAll(async () => {
  server = createServer((_request, response) => response.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe("counters per activation", () => {
  it("a run limited to 10 fetches makes 10 while plugin calls on the same sandbox fetch too", async () => {
    const sandbox = await createSandbox({ net: { allow: [origin] }, limits: { maxFetches: 10 } });
    try {
      const plugin = await sandbox.load(`export async function one(url) { await (await fetch(url)).text(); return 1 }`);
      const url = `http://${origin}/`;
      // The run fetches one at a time, waiting on timers between, so plugin calls interleave.
      const run = sandbox.run(
        `export default async (url) => {
          let made = 0, refused = 0;
          for (let i = 0; i < 30; i++) {
            try { await (await fetch(url)).text(); made++ } catch (error) { refused++; if (!String(error.message).includes("maxFetches")) throw error }
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
          return { made, refused };
        }`,
        { input: url },
      );
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < 30; i++) {
        calls.push(plugin.call("one", url));
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      const result = await run;
      expect(result).toMatchObject({ ok: true, value: { made: 10, refused: 20 } });
      expect(result.stats.fetches).toBe(10);
      // Each plugin call is an activation with its own budget of 10: all 30 succeed.
      expect(await Promise.all(calls)).toEqual(Array(30).fill(1));
    } finally {
      await sandbox.dispose();
    }
  });
});

describe("__proto__ keys are data", () => {
  const withProto = () => JSON.parse('{"__proto__": {"polluted": true}, "list": [{"__proto__": 1}], "$sbx": "kept"}') as Record<string, unknown>;

  it("input and results: the key arrives, the prototype is untouched, nothing is polluted", async () => {
    const sandbox = await createSandbox();
    try {
      const result = await sandbox.run(
        `export default (input) => ({
          keys: Object.keys(input),
          inner: input.__proto__,
          plainPrototype: Object.getPrototypeOf(input) === Object.prototype,
          polluted: ({}).polluted,
          back: JSON.parse('{"__proto__": {"x": 2}, "n": [{"__proto__": null}]}'),
        })`,
        { input: withProto() },
      );
      expect(result.ok).toBe(true);
      const value = result.ok ? (result.value as Record<string, unknown>) : {};
      expect(value.keys).toEqual(["__proto__", "list", "$sbx"]);
      expect(value.inner).toEqual({ polluted: true });
      expect(value.plainPrototype).toBe(true);
      expect(value.polluted).toBeUndefined();
      const back = value.back as Record<string, unknown>;
      expect(Object.keys(back)).toEqual(["__proto__", "n"]);
      expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(back, "__proto__")?.value).toEqual({ x: 2 });
      expect(Object.hasOwn((back.n as object[])[0]!, "__proto__")).toBe(true);
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    } finally {
      await sandbox.dispose();
    }
  });

  it("plugin arguments", async () => {
    const sandbox = await createSandbox();
    try {
      const plugin = await sandbox.load(`export const keys = (value) => [Object.keys(value), Object.hasOwn(value.list[0], "__proto__"), value.$sbx]`);
      expect(await plugin.call("keys", withProto())).toEqual([["__proto__", "list", "$sbx"], true, "kept"]);
    } finally {
      await sandbox.dispose();
    }
  });

  it("env and secrets named __proto__ are refused with a clear error, never silently dropped", async () => {
    // Carried as data by the marshal (above); as option names they are refused (host/options.ts).
    await expect(createSandbox({ env: JSON.parse('{"__proto__": "env value", "X": "1"}') })).rejects.toThrow('env key "__proto__" is not allowed');
    await expect(
      createSandbox({ secrets: JSON.parse('{"__proto__": {"value": "secret value 7f3a9c2e51b4", "origins": ["https://example.com"]}}') }),
    ).rejects.toThrow('"__proto__" is not allowed');
  });
});
