// Issue 2 "Bad input": a script that deletes or replaces globals, calls bridge functions
// with wrong types or huge arguments, floods timers or microtasks, or throws while the
// host formats its value gets a guest-side error or a limit, never a host crash, a hang
// or a leak.
import { describe, expect, it } from "vitest";
import { createSandbox, runScript } from "scriptbox";
import { createEngineInstance } from "../../dist/host/engine/instance.js";
import { findTrackerFieldOffset, RejectionTracking } from "../../dist/host/engine/rejection-tracker.js";
import { GuestBundle } from "../../dist/host/worker/guest-bundle.js";
import { WatchdogSlot } from "../../dist/host/worker/guard.js";
import { Realm } from "../../dist/host/worker/realm.js";
import { bridgeFunctions, createBridge } from "../../dist/host/worker/bridge/index.js";
import { DEFAULT_LIMITS } from "../../dist/host/limits.js";
import { SandboxFetchTransport } from "../../dist/host/fetch/transport.js";

describe("scripts that break their own realm", () => {
  it("deleting and replacing globals only affects the script; results still cross", async () => {
    const result = await runScript(`
      delete globalThis.console; delete globalThis.Promise; delete globalThis.JSON; delete globalThis.Map;
      Object.keys = null; Array.prototype.push = () => { throw new Error("poisoned push") };
      Array.prototype.indexOf = Array.prototype.pop = Function.prototype.call = Function.prototype.apply = null;
      export default () => ({ list: [1, 2], when: new Date(0), nested: { ok: true } });`);
    expect(result).toMatchObject({ ok: true, value: { list: [1, 2], when: "1970-01-01T00:00:00.000Z", nested: { ok: true } } });
  });

  it("guest modules load with the original builtins even after a script replaced them", async () => {
    const result = await runScript(`
      Object.defineProperty = () => { throw new Error("defineProperty is poisoned") };
      Function.prototype.call = null;
      export default () => ({ loaded: typeof Headers, sum: [1, 2].length });`);
    expect(result).toMatchObject({ ok: true, value: { loaded: "function", sum: 2 } });
  });

  it("guest modules load after a script added enumerable properties to Object.prototype (as old libraries do)", async () => {
    // esbuild's module helpers walked inherited keys: every lazy import failed with "invalid getter".
    const result = await runScript(`
      Object.prototype.polluted = 1;
      Object.prototype.get = function () { return "inherited get" };
      const http = await import("http");
      const cloud = await import("cloud");
      const { env } = await import("runtime");
      export default async () => ({
        modules: [typeof http.fetch, typeof cloud.default, typeof env],
        web: [await new Blob(["x"]).text(), new Headers({ a: "1" }).get("a"), new URL("http://h/?q=2").searchParams.get("q"), await new Response("hi").text()],
        other: [typeof crypto.subtle.digest, new Intl.NumberFormat("en").format(1234), structuredClone({ n: 1 }).n],
        headersMethods: Object.keys(Headers.prototype).includes("polluted"),
      });`);
    expect(result).toMatchObject({
      ok: true,
      value: { modules: ["function", "object", "object"], web: ["x", "1", "2", "hi"], other: ["function", "1,234", 1], headersMethods: false },
    });
  });

  it("a builtin locked beyond repair gives a guest-side error that says what broke", async () => {
    // A worker of its own, with no history: no guest module is preloaded into the realm
    // (see ModuleUsage), so the marshal module really loads after the script's damage.
    const result = await runScript(
      `
      Object.defineProperty(Function.prototype, "call", { value: null, writable: false, configurable: false });
      export default () => ({ needs: "the marshal module" });`,
      { isolate: true },
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.kind).toBe("script");
      expect(result.error.name).toBe("TypeError");
      expect(result.error.message).not.toBe("an exception that could not be described");
    }
  });

  it("timers, crypto and console keep working after the globals they use are deleted", async () => {
    const result = await runScript(`
      const keepTimeout = setTimeout, keepConsole = console, keepCrypto = crypto, KeptPromise = Promise;
      delete globalThis.Map; delete globalThis.Set; delete globalThis.Promise; delete globalThis.Uint8Array; delete globalThis.JSON;
      export default async () => {
        await new KeptPromise((resolve) => keepTimeout(resolve, 1));
        keepConsole.log({ a: [1, 2] }); // the inspect module loads now, after the damage
        return [keepCrypto.randomUUID().length, keepCrypto.getRandomValues(new Int8Array(4)).length];
      };`);
    expect(result).toMatchObject({ ok: true, value: [36, 4], logs: [{ level: "log", message: "{ a: [ 1, 2 ] }" }] });
  });

  it("a prototype method the library calls at run time, poisoned, gives a guest-side error only", async () => {
    // Module loading and value marshalling are protected from a script's damage; the rest of
    // the guest library runs in the script's realm and uses its builtins as they are.
    const sandbox = await createSandbox();
    try {
      // (String.prototype.slice no longer serves: module loading uses a captured copy of it.)
      const result = await sandbox.run(`String.prototype.indexOf = null; console.log({ a: "x" }); export default () => 1`);
      expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "TypeError" } });
      expect(await sandbox.run("export default () => 'next run is clean'")).toMatchObject({ ok: true, value: "next run is clean" });
    } finally {
      await sandbox.dispose();
    }
  });

  it("a poisoned realm does not survive into the next run of the same sandbox", async () => {
    const sandbox = await createSandbox();
    try {
      await sandbox.run("Object.prototype.then = (r) => r('hijacked'); Function.prototype.call = null; export default () => 1");
      expect(await sandbox.run("export default async () => { await null; return [typeof ({}).then, 'clean'] }")).toMatchObject({
        ok: true,
        value: ["undefined", "clean"],
      });
    } finally {
      await sandbox.dispose();
    }
  });

  it("a result whose formatting throws or never ends gives a guest-side error or a limit", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 200 } });
    try {
      const getter = await sandbox.run("export default () => ({ get boom() { throw new Error('getter') } })");
      expect(getter).toMatchObject({ ok: false, error: { kind: "script", message: "getter" } });
      const toJSON = await sandbox.run("export default () => ({ toJSON() { throw new TypeError('toJSON') } })");
      expect(toJSON).toMatchObject({ ok: false, error: { kind: "script", name: "TypeError", message: "toJSON" } });
      const endless = await sandbox.run("export default () => ({ toJSON() { for (;;) {} } })");
      expect(endless).toMatchObject({ ok: false, error: { kind: "cpu" } });
      const proxy = await sandbox.run("export default () => new Proxy({}, { ownKeys() { throw new Error('trap') }, getPrototypeOf() { throw new Error('proto trap') } })");
      expect(proxy).toMatchObject({ ok: false, error: { kind: "script" } });
      const logged = await sandbox.run(`
        const evil = new Proxy({}, { get() { throw new Error('get trap') }, ownKeys() { throw new Error('keys trap') } });
        const tagged = { get [Symbol.toStringTag]() { throw new Error('tag') } };
        console.log(evil, tagged, { toString() { throw 1 } });
        export default () => 'logged';`);
      // The formatter guards every property read: throwing traps and getters print, not fail.
      expect(logged).toMatchObject({
        ok: true,
        value: "logged",
        logs: [{ message: "{} { [Symbol(Symbol.toStringTag)]: [Getter] } { toString: [Function: toString] }" }],
      });
      expect(await sandbox.run("export default () => 'still fine'")).toMatchObject({ ok: true, value: "still fine" });
    } finally {
      await sandbox.dispose();
    }
  });

  it("huge console arguments are capped, not copied without bound", async () => {
    const result = await runScript("console.log('x'.repeat(20 * 1024 * 1024)); export default () => 'ok'", { limits: { maxLogBytes: 4096 } });
    expect(result).toMatchObject({ ok: true, value: "ok" });
    expect(result.logs[0]!.message.length).toBe(4096);
  });

  it("wrong argument types to the public APIs are guest TypeErrors", async () => {
    const result = await runScript(`export default () => {
      const errors = [];
      const attempt = (f) => { try { f(); errors.push("none") } catch (e) { errors.push(e.name) } };
      attempt(() => setTimeout(undefined));
      attempt(() => setInterval({}, 1));
      attempt(() => queueMicrotask(null));
      attempt(() => crypto.getRandomValues(null));
      attempt(() => crypto.getRandomValues({ length: 4 }));
      clearTimeout({}); clearTimeout(Symbol.iterator === 1); clearInterval(-1);
      return errors;
    }`);
    expect(result).toMatchObject({ ok: true, value: ["TypeError", "TypeError", "TypeError", "TypeMismatchError", "TypeMismatchError"] });
  });

  it("__scriptbox.import with an Object.prototype name or a non-string is a guest TypeError; the sandbox and its plugin live on", async () => {
    // A plain lookup table found "valueOf" on Object.prototype; the function went into the
    // run's used-module list, the host could not read that list, and disposed the sandbox.
    const sandbox = await createSandbox();
    try {
      const counter = await sandbox.load("let n = 0; export function next() { return ++n }");
      expect(await counter.call("next")).toBe(1);
      const result = await sandbox.run(`export default () => {
        const seen = [];
        for (const name of ["valueOf", "toString", "constructor", "hasOwnProperty", "isPrototypeOf", "__proto__", "host:valueOf", "nope", 7, null, { toString: () => "http" }]) {
          try { __scriptbox.import(name); seen.push("none"); } catch (e) { seen.push(e.name + ": " + e.message); }
        }
        return seen;
      }`);
      expect(result).toMatchObject({
        ok: true,
        value: [
          "TypeError: no builtin module named valueOf",
          "TypeError: no builtin module named toString",
          "TypeError: no builtin module named constructor",
          "TypeError: no builtin module named hasOwnProperty",
          "TypeError: no builtin module named isPrototypeOf",
          "TypeError: no builtin module named __proto__",
          'TypeError: no host module named "valueOf"',
          "TypeError: no builtin module named nope",
          "TypeError: a module name must be a string",
          "TypeError: a module name must be a string",
          "TypeError: a module name must be a string",
        ],
      });
      expect(await counter.call("next")).toBe(2);
      expect(await sandbox.run("export default () => typeof __scriptbox.import('http').fetch")).toMatchObject({ ok: true, value: "function" });
    } finally {
      await sandbox.dispose();
    }
  });
});

describe("the bridge validates every argument", () => {
  it("calling each bridge function directly with garbage gives guest errors, never host exceptions", async () => {
    const engine = await createEngineInstance(64 * 1024 * 1024);
    const tracking = new RejectionTracking(engine, findTrackerFieldOffset(engine));
    const config = { limits: { ...DEFAULT_LIMITS, cpuTimeMs: 2000 }, allow: [], env: {}, secrets: {}, cloud: null, location: null, streamLogs: false, variant: "release" as const };
    const transport = new SandboxFetchTransport({ allow: [] });
    const realm = new Realm({
      engine,
      tracking,
      bundle: GuestBundle.load(),
      watchdog: new WatchdogSlot(new SharedArrayBuffer(24)),
      sandboxId: 1,
      config: () => config,
      transport: () => transport,
      emitLog: () => undefined,
      poisoned: (reason: string) => {
        throw new Error(`engine poisoned: ${reason}`);
      },
    });
    // Expose a second copy of the raw bridge to guest code, which normally cannot reach it.
    const bridge = createBridge(realm, bridgeFunctions(realm));
    realm.context.setProp(realm.context.global, "rawBridge", bridge);
    bridge.dispose();
    const outcome = await realm.run(
      `const garbage = [undefined, null, 1.5, -1, 2 ** 60, NaN, "", "x".repeat(2e6), {}, [], () => 1, Symbol("s"), 10n, new ArrayBuffer(8)];
      export default async () => {
        const report = {};
        for (const name of Object.keys(rawBridge)) {
          const outcomes = new Set();
          for (const a of garbage) for (const b of [undefined, a]) {
            try {
              const value = rawBridge[name](a, b, a, b);
              if (value && typeof value.then === "function") await value.then(() => outcomes.add("resolved"), () => outcomes.add("rejected"));
              else outcomes.add("returned");
            } catch (e) { outcomes.add(e instanceof TypeError || e instanceof RangeError ? "guest " + e.name : "other " + e) }
          }
          report[name] = [...outcomes].sort();
        }
        return report;
      }`,
      "hostile.js",
      undefined,
    );
    expect(outcome.ok).toBe(true);
    const report = outcome.value as Record<string, string[]>;
    expect(Object.keys(report).sort()).toEqual(
      [
        "checkLimits", "cloudConfig", "cryptoDigest", "cryptoHmac", "env", "fetch", "fetchAbort", "intl", "loadModule", "location", "log", "performanceNow",
        "performanceTimeOrigin", "promiseState", "randomBytes", "secret", "timerStart", "timerStop", "utf8Encode",
        "hostModule", "hostCall", "hostCallSync",
      ].sort(),
    );
    for (const [name, outcomes] of Object.entries(report)) {
      for (const seen of outcomes) expect(seen, `${name}: ${outcomes.join(", ")}`).toMatch(/^(guest TypeError|guest RangeError|returned|rejected|resolved)$/);
    }
    // Functions that take arguments refused the garbage.
    for (const name of ["log", "timerStart", "timerStop", "loadModule", "randomBytes", "secret", "fetch", "fetchAbort", "utf8Encode", "hostModule", "hostCall", "hostCallSync", "cryptoDigest", "cryptoHmac", "intl"]) {
      expect(report[name], name).toContain("guest TypeError");
    }

    // Crafted arguments for the bridge functions with structured input (Intl, crypto):
    // prototype keys, methods outside the allow-list, oversized keys and requests.
    const crafted = await realm.run(
      `export default () => {
        const outcome = (f) => { try { const v = f(); return "returned " + typeof v; } catch (e) { return (e instanceof TypeError || e instanceof RangeError ? "guest " : "other ") + e.name; } };
        const intl = (request) => outcome(() => rawBridge.intl(typeof request === "string" ? request : JSON.stringify(request)));
        return {
          proto: intl(["__proto__", null, null, "format", []]),
          ctorMethod: intl(["NumberFormat", null, null, "constructor", []]),
          protoMethod: intl(["NumberFormat", null, null, "__proto__", []]),
          notAllowedFn: intl(["Intl", null, null, "DateTimeFormat", []]),
          badLocale: intl(["NumberFormat", "not a locale!", null, "format", [1]]),
          badOptions: intl(["NumberFormat", null, { style: "currency" }, "format", [1]]),
          arrayOptions: intl(["NumberFormat", null, [], "format", [1]]),
          hugeBigInt: intl(["NumberFormat", null, null, "format", [{ $bigint: "9".repeat(5000) }]]),
          huge: intl("[" + "1,".repeat(200000) + "1]"),
          notJson: intl("{"),
          ok: intl(["NumberFormat", "en", null, "format", [1234.5]]),
          manyFormatters: outcome(() => { for (let i = 0; i < 500; i++) rawBridge.intl(JSON.stringify(["NumberFormat", "en", { minimumFractionDigits: i % 20 }, "format", [1]])); }),
          digestProtoHash: outcome(() => rawBridge.cryptoDigest("constructor", new ArrayBuffer(1))),
          digestView: outcome(() => rawBridge.cryptoDigest("SHA-256", new Uint8Array(4))),
          hmacHugeKey: outcome(() => rawBridge.cryptoHmac("SHA-256", new ArrayBuffer(1024 * 1024), new ArrayBuffer(1))),
          hmacOk: outcome(() => rawBridge.cryptoHmac("SHA-256", new ArrayBuffer(1), new ArrayBuffer(1))),
        };
      }`,
      "hostile-crafted.js",
      undefined,
    );
    expect(crafted.ok, JSON.stringify(crafted)).toBe(true);
    expect(crafted.value).toEqual({
      proto: "guest TypeError",
      ctorMethod: "guest TypeError",
      protoMethod: "guest TypeError",
      notAllowedFn: "guest TypeError",
      badLocale: "guest RangeError",
      badOptions: "guest TypeError",
      arrayOptions: "guest TypeError",
      hugeBigInt: "returned string", // not revived past 400 digits: an object, which formats as "NaN"
      huge: "guest TypeError",
      notJson: "guest TypeError",
      ok: "returned string",
      manyFormatters: "returned undefined",
      digestProtoHash: "guest TypeError",
      digestView: "guest TypeError",
      hmacHugeKey: "guest TypeError",
      hmacOk: "returned object",
    });
    realm.dispose();
  });
});
