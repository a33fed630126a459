// Issue 9 §1, §2, §4: host modules as scripts see them. Declared with createSandbox,
// sandbox.run or runScript; imported by name (named and default imports, nested objects,
// copied values); async host functions with a call context as `this`; values crossing as
// copies under the input/result rules; errors (HostError codes, TypeError/RangeError kept,
// no host stack); clear errors for bad declarations at createSandbox.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, HostError, hostSync, runScript, type HostCallContext, type Sandbox } from "scriptbox";
import { value } from "./helpers.js";

const contexts: HostCallContext[] = [];
const kv = new Map<string, unknown>();
const app = {
  version: "1.4.2",
  limits: { maxItems: 3, tags: ["a", "b"], since: new Date(Date.UTC(2024, 0, 2)) },
  notify(this: HostCallContext, message: string) {
    contexts.push(this);
    return `notified: ${message}`;
  },
  store: {
    get: hostSync((key: string) => kv.get(key) ?? null),
    set: hostSync((key: string, item: unknown) => {
      kv.set(key, item);
      return kv.size;
    }),
  },
  async findUser(id: number) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    if (id < 0) throw new HostError(`no user ${id}`, { code: "NOT_FOUND" });
    return { id, name: "Ada", joined: new Date(Date.UTC(2020, 5, 1)), avatar: new Uint8Array([1, 2, 3]), nickname: undefined };
  },
  echo: async (item: unknown) => item,
  echoSync: hostSync((item: unknown) => item),
  fail: hostSync((kind: string) => {
    if (kind === "type") throw new TypeError("bad type");
    if (kind === "range") throw new RangeError("out of range");
    if (kind === "code") throw new HostError("with a number code", { code: 409 });
    throw new Error("plain failure");
  }),
};

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ modules: { app } });
});
afterAll(async () => {
  await sandbox.dispose();
});

describe("importing host modules", () => {
  it("gives named and default imports, nested objects of functions and copied values", async () => {
    const result = await sandbox.run(
      `import app, { version, notify, store, limits } from "app";
       export default () => ({
         version, same: app.notify === notify && app.store === store,
         kinds: [typeof notify, typeof store.get, typeof app.findUser, typeof limits],
         limits, frozen: Object.isFrozen(app) && Object.isFrozen(store),
         keys: Object.keys(app).sort(),
       })`,
    );
    expect(value(result)).toEqual({
      version: "1.4.2",
      same: true,
      kinds: ["function", "function", "function", "object"],
      limits: { maxItems: 3, tags: ["a", "b"], since: "2024-01-02T00:00:00.000Z" },
      frozen: true,
      keys: ["echo", "echoSync", "fail", "findUser", "limits", "notify", "store", "version"],
    });
  });

  it("host functions have the member's name and are not constructors", async () => {
    const result = await sandbox.run(`import { notify, store } from "app";
      export default () => { let constructed = true; try { new notify() } catch { constructed = false } return [notify.name, store.get.name, constructed] }`);
    expect(value(result)).toEqual(["notify", "get", false]);
  });

  it("an undeclared module is a clear import error that lists the builtins", async () => {
    const result = await sandbox.run(`import { x } from "nope"; export default () => x`);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain('Cannot find module "nope"');
  });

  it("sandbox.run(code, { modules }) adds and replaces modules for that run only", async () => {
    const user = { name: "grace", role: "admin" };
    const perRun = await sandbox.run(
      `import { currentUser, whoami } from "request"; import { version } from "app";
       export default async () => [currentUser, await whoami(), version]`,
      { modules: { request: { currentUser: user, whoami: () => user.name } } },
    );
    expect(value(perRun)).toEqual([user, "grace", "1.4.2"]);
    const replaced = await sandbox.run(`import { version } from "app"; export default () => version`, { modules: { app: { version: "2.0.0" } } });
    expect(value(replaced)).toBe("2.0.0");
    const after = await sandbox.run(`import { version } from "app"; export default () => version`);
    expect(value(after)).toBe("1.4.2");
    const gone = await sandbox.run(`import { currentUser } from "request"; export default () => currentUser`);
    expect(gone.ok).toBe(false);
  });

  it("sandbox.runFile bundles a script that imports host modules (theirs and the run's)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scriptbox-host-modules-"));
    try {
      writeFileSync(join(dir, "helper.js"), `import { version } from "app"; export const label = (who) => who + "@" + version;`);
      writeFileSync(join(dir, "job.js"), `import { label } from "./helper.js"; import { who } from "request"; export default () => label(who);`);
      expect(value(await sandbox.runFile(join(dir, "job.js"), { modules: { request: { who: "ada" } } }))).toBe("ada@1.4.2");
      const missing = await sandbox.runFile(join(dir, "job.js"));
      expect(missing.ok).toBe(false);
      // Without the run's module, "request" is a bare name like any npm package: not installed.
      if (!missing.ok) expect(missing.error.message).toContain('Cannot import "request" (imported by the script): package "request" is not installed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runScript takes modules too", async () => {
    const result = await runScript(`import { double } from "math"; export default async (n) => double(n)`, {
      input: 21,
      modules: { math: { double: hostSync((n: number) => n * 2) } },
    });
    expect(value(result)).toBe(42);
  });

  it("a module without functions is plain data", async () => {
    const result = await runScript(`import config, { region } from "config"; export default () => [region, config]`, {
      modules: { config: { region: "eu", weights: [1, 2], nested: { deep: { flag: true } } } },
    });
    expect(value(result)).toEqual(["eu", { region: "eu", weights: [1, 2], nested: { deep: { flag: true } } }]);
  });

  it("members whose names are not identifiers or are reserved words stay on the default export", async () => {
    const result = await runScript(`import m, { ok } from "odd"; export default async () => [ok, await m["with-dash"](), m.default, await m.delete()]`, {
      modules: { odd: { ok: 1, "with-dash": () => "dash", default: "d", delete: () => "deleted" } },
    });
    expect(value(result)).toEqual([1, "dash", "d", "deleted"]);
  });
});

describe("declaring modules: clear errors at createSandbox", () => {
  const refused: [string, unknown, RegExp][] = [
    ["http", {}, /clashes with a builtin module/],
    ["cloud", {}, /clashes with a builtin module/],
    ["runtime", {}, /clashes with a builtin module/],
    ["./app", {}, /relative path/],
    ["/abs", {}, /relative path/],
    ["node:fs", {}, /has a scheme/],
    ["scriptbox:core", {}, /has a scheme/],
    ["has space", {}, /not a valid module name/],
    ["", {}, /not a valid module name/],
    // Accepted once, then impossible to import (the guest's module table is a plain object).
    ["__proto__", { f: () => 1 }, /module name "__proto__" is reserved/],
    ["app", () => 1, /must be a plain object/],
    ["app", [1, 2], /must be a plain object/],
    ["app", { value: Symbol("s") }, /a symbol cannot cross/],
    ["app", { value: 10n }, /a BigInt cannot cross/],
    ["app", { value: new Map() }, /Map instance cannot cross/],
  ];
  for (const [name, module, message] of refused) {
    it(`refuses ${JSON.stringify(name)}: ${message.source}`, async () => {
      await expect(createSandbox({ modules: { [name]: module } as never })).rejects.toThrow(message);
    });
  }

  it("refuses cycles, too deep nesting, and async functions marked hostSync", async () => {
    const cyclic: Record<string, unknown> = { f: () => 1 };
    cyclic.self = cyclic;
    await expect(createSandbox({ modules: { app: cyclic } })).rejects.toThrow(/refers to itself/);
    let deep: Record<string, unknown> = { f: () => 1 };
    for (let i = 0; i < 20; i++) deep = { inner: deep };
    await expect(createSandbox({ modules: { app: deep } })).rejects.toThrow(/nested more than 16 levels/);
    expect(() => hostSync(async () => 1)).toThrow(/is async/);
    expect(() => hostSync(42 as never)).toThrow(/must be a function/);
    await expect(createSandbox({ modules: "app" as never })).rejects.toThrow(/modules must be an object/);
  });

  it("refuses bad run modules before running anything", async () => {
    await expect(sandbox.run("export default () => 1", { modules: { http: {} } })).rejects.toThrow(/run modules: module name "http" clashes/);
  });
});

describe("async host functions", () => {
  it("resolve with a copy of the result; `this` is the call context", async () => {
    contexts.length = 0;
    const result = await sandbox.run(`import { notify, findUser } from "app"; export default async () => [await notify("hi"), await findUser(7)]`, {
      filename: "jobs/notify.js",
    });
    expect(value(result)).toEqual([
      "notified: hi",
      { id: 7, name: "Ada", joined: "2020-06-01T00:00:00.000Z", avatar: new Uint8Array([1, 2, 3]), nickname: undefined },
    ]);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]!.filename).toBe("jobs/notify.js");
    expect(contexts[0]!.sandboxId).toBe(sandbox.id);
    expect(contexts[0]!.signal).toBeInstanceOf(AbortSignal);
    // The run has ended: its signal is aborted.
    expect(contexts[0]!.signal.aborted).toBe(true);
    expect((contexts[0]!.signal.reason as Error).name).toBe("AbortError");
  });

  it("arguments and results cross as copies, both ways, with the input rules (undefined, bytes, Dates, -0, NaN, a '$sbx' key)", async () => {
    const result = await sandbox.run(`import { echo, echoSync } from "app";
      export default async () => {
        const sent = { u: undefined, bytes: new Uint8Array([9, 8]), buf: new Uint8Array([7]).buffer, when: new Date(0), n: [NaN, -0, Infinity], $sbx: "data", nested: [[{ a: null }]] };
        const a = await echo(sent);
        const b = echoSync(sent);
        a.bytes[0] = 1; // a copy: changing it changes nothing elsewhere
        return [a, b, sent.bytes[0], Object.is(b.n[1], -0)];
      }`);
    const [a, b, original, negativeZero] = value(result) as [Record<string, unknown>, Record<string, unknown>, number, boolean];
    const expected = { u: undefined, bytes: new Uint8Array([1, 8]), buf: new Uint8Array([7]), when: "1970-01-01T00:00:00.000Z", n: [NaN, -0, Infinity], $sbx: "data", nested: [[{ a: null }]] };
    expect(a).toEqual(expected);
    expect(b).toEqual({ ...expected, bytes: new Uint8Array([9, 8]) });
    expect(original).toBe(9);
    expect(negativeZero).toBe(true);
  });

  it("bytes the embedder keeps in a SharedArrayBuffer cross as a copy, async and sync (a shared buffer cannot be transferred)", async () => {
    const shared = new Uint8Array(new SharedArrayBuffer(8));
    shared.set([1, 2, 3, 4, 5, 6, 7, 8]);
    const view = shared.subarray(2, 5);
    const result = await sandbox.run(
      `import { sharedBytes, sharedBytesSync } from "app";
      export default async () => { const a = await sharedBytes(); const b = sharedBytesSync(); return [a, b] }`,
      { modules: { app: { ...app, sharedBytes: async () => ({ view }), sharedBytesSync: hostSync(() => view) } } },
    );
    expect(value(result)).toEqual([{ view: new Uint8Array([3, 4, 5]) }, new Uint8Array([3, 4, 5])]);
    expect(shared[2]).toBe(3);
  });

  it("plain primitives as whole arguments and results (the short path) cross exactly, async and sync", async () => {
    const items = [0, 7, -3, 1.5, -2.5e-7, 1e21, -1e300, Number.MAX_SAFE_INTEGER, -0, NaN, -Infinity, "", "-5", "12", 'a "quoted"\nline \u2028 é 😀', "\\", true, false, null, undefined];
    const result = await sandbox.run(`import { echo, echoSync, argsOf, argsOfSync } from "app";
      export default async (items) => {
        const out = [];
        for (const item of items) {
          const a = await echo(item);
          const b = echoSync(item);
          out.push([Object.is(a, item), Object.is(b, item), typeof a]);
        }
        out.push(await argsOf(1, "two", true, null, -4.25), argsOfSync(-1, "x\\"y", false));
        return out;
      }`, { input: items, modules: { app: { ...app, argsOf: async (...args: unknown[]) => JSON.stringify(args), argsOfSync: hostSync((...args: unknown[]) => JSON.stringify(args)) } } });
    const out = value(result) as unknown[];
    items.forEach((item, i) => expect(out[i], String(item)).toEqual([true, true, typeof item]));
    expect(out.slice(items.length)).toEqual(['[1,"two",true,null,-4.25]', '[-1,"x\\"y",false]']);
  });

  it("sync results of every size cross whole: in the shared reply block (up to 2,048 UTF-16 units of JSON) and past it on the port", async () => {
    // host/host-modules/sync-call-block.ts: small answers are written into shared memory,
    // others are posted; the sizes straddle the edge, with surrogate pairs across it.
    const pair = "😀";
    const texts = [2045, 2046, 2047, 2048, 100_000].map((n) => "é".repeat(n - 3) + pair);
    const result = await sandbox.run(`import { echoSync } from "app";
      export default (texts) => texts.map((text) => {
        const back = echoSync(text);
        const bytes = echoSync(new Uint8Array([1, 2, 3]));
        return [back === text, back.length, bytes instanceof Uint8Array && bytes.join()];
      })`, { input: texts });
    expect(value(result)).toEqual(texts.map((text) => [true, text.length, "1,2,3"]));
  });

  it("calls reach the embedder in the order the guest made them, async and sync mixed (sync calls may come through shared memory)", async () => {
    const seen: string[] = [];
    const result = await sandbox.run(`import { log, mark } from "app";
      export default async (n) => {
        const pending = [];
        for (let i = 0; i < n; i++) { pending.push(log(i)); mark(i) }
        await Promise.all(pending);
        return n;
      }`, { input: 3000, modules: { app: { ...app, log: async (i: number) => void seen.push(`a${i}`), mark: hostSync((i: number) => void seen.push(`s${i}`)) } } });
    expect(value(result)).toBe(3000);
    expect(seen).toEqual(Array.from({ length: 3000 }, (_, i) => [`a${i}`, `s${i}`]).flat());
  });

  it("a HostError's code reaches the guest as error.code, with a guest stack and no host frames", async () => {
    const result = await sandbox.run(`import { findUser } from "app";
      export default async () => { try { await findUser(-1) } catch (e) { return [e instanceof Error, e.name, e.message, e.code, e.stack] } }`, { filename: "lookup.js" });
    const [isError, name, message, code, stack] = value(result) as [boolean, string, string, string, string];
    expect([isError, name, message, code]).toEqual([true, "Error", "no user -1", "NOT_FOUND"]);
    expect(stack).toContain("lookup.js");
    expect(stack).not.toMatch(/node:|\/host\/|contract\.test/);
  });

  it("TypeError and RangeError stay what they were; other errors are Error", async () => {
    const result = await sandbox.run(`import { fail } from "app";
      export default () => ["type", "range", "code", "plain"].map((kind) => { try { fail(kind) } catch (e) { return [e.constructor.name, e.message, e.code ?? null, e.stack.includes("node:")] } })`);
    expect(value(result)).toEqual([
      ["TypeError", "bad type", null, false],
      ["RangeError", "out of range", null, false],
      ["Error", "with a number code", 409, false],
      ["Error", "plain failure", null, false],
    ]);
  });

  it("an uncaught host error fails the run like any script error", async () => {
    const result = await sandbox.run(`import { findUser } from "app"; export default () => findUser(-5)`);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatchObject({ kind: "script", name: "Error", message: "no user -5" });
  });

  it("guest values that cannot cross are a TypeError naming the function and the argument", async () => {
    const result = await sandbox.run(`import { echo, store } from "app";
      export default async () => {
        const cyclic = {}; cyclic.self = cyclic;
        const out = [];
        for (const bad of [[1, () => 1], [{ nested: { fn() {} } }], [cyclic], [new Map()], [Symbol("x")], [10n]]) {
          try { await echo(...bad); out.push("crossed") } catch (e) { out.push(e.name + ": " + e.message) }
        }
        try { store.set("k", () => 1) } catch (e) { out.push(e.name + ": " + e.message) }
        return out;
      }`);
    const messages = value(result) as string[];
    expect(messages[0]).toBe("TypeError: app.echo: argument 2: a function cannot cross the sandbox boundary");
    expect(messages[1]).toBe("TypeError: app.echo: argument 1 (at .nested.fn): a function cannot cross the sandbox boundary");
    expect(messages[2]).toMatch(/^TypeError: app\.echo: argument 1 \(at \.self\): a value with a cycle cannot cross/);
    expect(messages[3]).toMatch(/^TypeError: app\.echo: argument 1: a Map object cannot cross/);
    expect(messages[4]).toMatch(/^TypeError: app\.echo: argument 1: a symbol cannot cross/);
    expect(messages[5]).toMatch(/^TypeError: app\.echo: argument 1: a BigInt cannot cross/);
    expect(messages[6]).toBe("TypeError: app.store.set: argument 2: a function cannot cross the sandbox boundary");
  });

  it("a result the host cannot copy is a guest TypeError naming the function", async () => {
    const result = await runScript(`import { weird } from "m"; export default async () => { try { await weird() } catch (e) { return e.name + ": " + e.message } }`, {
      modules: { m: { weird: () => new Map([[1, 2]]) } },
    });
    expect(value(result)).toMatch(/^TypeError: m\.weird\(\) result: a Map instance cannot cross/);
  });
});
