// Issue 2, "How it is verified": 1,000 cycles of create, run, dispose keep the host's heap
// flat; and the worker side leaks nothing either: the process RSS (the workers' heaps and
// wasm memories live in it) stays flat, and the DEBUG_SYNC QuickJS build, which aborts in
// JS_FreeRuntime when a realm is freed with a value still referenced, survives every kind
// of activation (our host reports such an abort as a disposed sandbox).
//
// The bounds are generous on purpose (the point is catching growth per cycle, not bytes);
// the measured numbers are printed with the test output.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createSandbox, HostError, hostSync, type RunResult, type Sandbox, type SandboxOptions } from "scriptbox";

const MiB = 1024 * 1024;

/** A full GC of this thread's heap, without needing node --expose-gc. */
function gcFunction(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === "function") return exposed;
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}
const gc = gcFunction();

async function settledMemory(): Promise<{ heapUsed: number; rss: number }> {
  // Let the workers finish what dispose left them (refilling their warm pools), then collect.
  await sleep(200);
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(20);
  }
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss };
}

const mb = (bytes: number) => `${(bytes / MiB).toFixed(2)} MB`;

function expectOk(result: RunResult, what: string): void {
  if (!result.ok) expect.fail(`${what}: ${result.error.kind}: ${result.error.name}: ${result.error.message}`);
}

/** One create / run / dispose cycle, with a mix of outcomes so each cleanup path is taken. */
async function cycle(i: number, logs: { count: number }): Promise<void> {
  const sandbox = await createSandbox({ onLog: () => void logs.count++, env: { CYCLE: String(i) } });
  try {
    if (i % 10 === 3) {
      const result = await sandbox.run(`export default () => { throw new RangeError("cycle ${i}"); }`);
      expect(result.ok).toBe(false);
    } else if (i % 10 === 7) {
      const plugin = await sandbox.load("let n = 0; export function add(x) { n += x; return { n, list: [n, 'x'.repeat(100)] }; }");
      for (let k = 1; k <= 3; k++) expect(await plugin.call("add", k)).toMatchObject({ n: (k * (k + 1)) / 2 });
    } else if (i % 10 === 5) {
      const result = await sandbox.run(
        `import { env } from "runtime";
         export default async (input) => {
           console.log("cycle", env.CYCLE, { input });
           await new Promise((resolve) => setTimeout(resolve, 0));
           return { cycle: Number(env.CYCLE), bytes: new Uint8Array(64), text: "y".repeat(1000), input };
         };`,
        { input: { i, data: Array.from({ length: 20 }, (_, k) => ({ k })) } },
      );
      expectOk(result, `cycle ${i}`);
    } else {
      const result = await sandbox.run(
        `import { env } from "runtime";
         export default (input) => { console.log("cycle " + env.CYCLE); return { cycle: Number(env.CYCLE), input }; };`,
        { input: { i, list: [1, 2, 3] } },
      );
      expectOk(result, `cycle ${i}`);
    }
  } finally {
    await sandbox.dispose();
  }
}

describe("leaks: 1,000 cycles of createSandbox, run, dispose", () => {
  it("keep the host's heap and the process RSS (workers included) flat", async () => {
    const logs = { count: 0 };
    const started = Date.now();
    for (let i = 0; i < 100; i++) await cycle(i, logs);
    const at100 = await settledMemory();
    for (let i = 100; i < 1000; i++) await cycle(i, logs);
    const at1000 = await settledMemory();
    const heapGrowth = at1000.heapUsed - at100.heapUsed;
    const rssGrowth = at1000.rss - at100.rss;
    console.log(
      [
        `leak test: 1,000 create/run/dispose cycles in ${((Date.now() - started) / 1000).toFixed(1)} s, ${logs.count} log entries streamed`,
        `  host heapUsed after GC: cycle 100 ${mb(at100.heapUsed)}, cycle 1000 ${mb(at1000.heapUsed)}, growth ${mb(heapGrowth)} (${Math.round(heapGrowth / 900)} bytes/cycle)`,
        `  process RSS:            cycle 100 ${mb(at100.rss)}, cycle 1000 ${mb(at1000.rss)}, growth ${mb(rssGrowth)} (${Math.round(rssGrowth / 900)} bytes/cycle)`,
      ].join("\n"),
    );
    expect(logs.count).toBeGreaterThanOrEqual(800);
    // A leaked Sandbox proxy with its listeners, or a result kept per cycle, is >= 10 KB
    // a cycle: 9 MB over 900 cycles.
    expect(heapGrowth).toBeLessThan(8 * MiB);
    // A leaked engine instance is >= 250 KB resident a cycle, a leaked realm ~100 KB:
    // 90-225 MB over 900 cycles.
    expect(rssGrowth).toBeLessThan(48 * MiB);
  }, 120_000);
});

describe("leaks: runs stopped by a limit", () => {
  // A realm stopped by the cpu limit in plain code is freed (only realms interrupted inside
  // the job queue are parked), so a loaded plugin does not make stopped runs pile up.
  it("100 cpu-stopped runs beside a loaded plugin do not grow the sandbox's memory", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 10 } });
    try {
      const plugin = await sandbox.load("export function ping() { return 'pong'; }");
      const sizes: number[] = [];
      for (let i = 0; i < 100; i++) {
        const result = await sandbox.run("for (;;) {}");
        expect(result.ok ? "ok" : result.error.kind).toBe("cpu");
        sizes.push(result.stats.memoryBytes);
      }
      expect(await plugin.call("ping")).toBe("pong");
      console.log(`wasm memory over 100 cpu-stopped runs with a plugin loaded: ${mb(sizes[0]!)} -> ${mb(sizes.at(-1)!)}`);
      expect(sizes.at(-1)! - sizes[0]!).toBeLessThan(1 * MiB);
    } finally {
      await sandbox.dispose();
    }
  }, 60_000);
});

describe("leaks: the DEBUG_SYNC engine survives every kind of activation", () => {
  // The debug build needs ~100 MB of wasm memory for a realm (assertions, leak tracking)
  // and runs an order of magnitude slower; each sandbox gets a worker of its own so that a
  // hard stop cannot touch the shared workers the other tests use.
  const debugSandbox = (limits: Record<string, number>, options: SandboxOptions = {}) =>
    createSandbox({ ...options, engineVariant: "debug", isolate: true, limits: { memoryBytes: 256 * MiB, ...limits } } as SandboxOptions);

  /**
   * What the debug engine prints when JS_FreeRuntime finds its books unbalanced ("Memory
   * leak: N bytes lost in M blocks", also for more frees than allocations), when an
   * assertion fails, or when its sanitizer sees a bad free. It writes to the worker's
   * stdout/stderr, which Node pipes into this process's streams.
   */
  const ENGINE_REPORT = /Memory leak:|Assertion failed|LeakSanitizer|AddressSanitizer|Object leaks:/;
  async function engineReports(work: () => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    const streams = [process.stdout, process.stderr];
    const originals = streams.map((stream) => stream.write);
    streams.forEach((stream, i) => {
      stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
        const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : "";
        for (const line of text.split("\n")) if (ENGINE_REPORT.test(line)) seen.push(line.trim());
        return (originals[i] as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
      } as typeof stream.write;
    });
    try {
      await work();
      await sleep(100); // the worker's output arrives after its reply
    } finally {
      streams.forEach((stream, i) => (stream.write = originals[i]!));
    }
    return seen;
  }

  /** A run that must succeed in `sandbox` after `after`: an aborted free poisons the engine,
   * and the host then reports the sandbox as disposed. */
  async function expectHealthy(sandbox: Sandbox, after: string): Promise<void> {
    const result = await sandbox.run("export default (input) => ({ ...input, ok: true })", { input: { after } });
    if (!result.ok) expect.fail(`the sandbox failed after ${after} (a leaked handle aborts the debug build): ${result.error.message}`);
    expect(result.value).toEqual({ after, ok: true });
    expect(sandbox.disposed).toBe(false);
  }

  function expectFailure(result: RunResult, kind: string, pattern?: RegExp): void {
    if (result.ok) expect.fail(`expected a ${kind} failure, the run succeeded`);
    expect(result.error.kind, result.error.message).toBe(kind);
    if (pattern) expect(result.error.message).toMatch(pattern);
  }

  it("ok, throwing, unhandled rejection, cpu and wall limits with timers pending, plugins with calls and limits: every later run succeeds, the engine reports nothing", async () => {
    const started = Date.now();
    let checks = 0;
    const reports = await engineReports(async () => {
      // cpuTimeMs is the worker thread's own CPU time: an ok or throwing run of the debug
      // build takes 170-400 ms of it on an idle machine, and a limit of 600 ms hard-stopped
      // a throwing run once under load. The wall limit is well above it, since on a loaded
      // machine a thread gets only part of a core and the cpu cases below must reach their
      // CPU limit first.
      const sandbox = await debugSandbox({ cpuTimeMs: 1_500, wallTimeMs: 6_000 });
      const healthy = async (after: string) => {
        checks++;
        await expectHealthy(sandbox, after);
      };
      try {
        expectOk(await sandbox.run(`export default (input) => { console.log("a string"); console.error("an error line"); return { input, uuid: crypto.randomUUID().length }; }`, { input: { step: 1 } }), "ok run");
        await healthy("an ok run with console and crypto");

        expectFailure(await sandbox.run(`export default () => { const o = { deep: { list: [1, 2] } }; throw new Error("thrown " + o.deep.list); }`), "script", /thrown 1,2/);
        expectFailure(await sandbox.run(`throw 42;`), "script");
        await healthy("thrown errors");

        expectFailure(await sandbox.run(`Promise.reject(new Error("nobody handles this")); export default () => 1;`), "script", /nobody handles this/);
        expectFailure(await sandbox.run(`export default async () => { (async () => { throw new TypeError("async unhandled"); })(); await null; return 1; }`), "script", /async unhandled/);
        await healthy("unhandled rejections");

        expectFailure(await sandbox.run(`const keep = [{ n: 1 }]; setTimeout(() => {}, 60_000); export default () => { for (;;) {} };`), "cpu", /cpuTimeMs/);
        await healthy("a cpu limit with a timer pending");

        expectFailure(
          // An interval of 20 ms, not 5: each of its callbacks costs the debug engine ~0.4 ms
          // of CPU (250-300 ms over a 4 s wall limit at 5 ms when idle), and under a full
          // test run that once doubled past a 600 ms CPU limit.
          await sandbox.run(`export default () => { setInterval(() => {}, 20); queueMicrotask(() => {}); return new Promise((resolve) => setTimeout(resolve, 60_000)); }`),
          "timeout",
          /wallTimeMs/,
        );
        await healthy("a wall-time limit with timers and a promise pending");

        const plugin = await sandbox.load(`
          let count = 0;
          export function bump(by) { count += by; return { count }; }
          export function fail() { throw new Error("plugin failure " + count); }
          export async function later() { await new Promise((r) => setTimeout(r, 1)); return count; }`);
        expect(await plugin.call("bump", 2)).toEqual({ count: 2 });
        expect(await plugin.call("bump", 3)).toEqual({ count: 5 });
        await expect(plugin.call("fail")).rejects.toThrow(/plugin failure 5/);
        expect(await plugin.call("later")).toBe(5);
        await plugin.unload();
        await healthy("a plugin with calls and a failing call, unloaded");

        // A call waits for what it started: an interval keeps it going until the wall
        // limit stops it, and the plugin's realm is freed with the interval pending.
        const ticking = await sandbox.load(`let ticks = 0; export function start() { setInterval(() => { ticks++; }, 1000); return ticks; }`);
        expectFailure(await ticking.invoke("start"), "timeout", /wallTimeMs/);
        await healthy("a plugin stopped by the wall limit with an interval pending");

        const spinning = await sandbox.load(`export function spin() { for (;;) {} }`);
        expectFailure(await spinning.invoke("spin"), "cpu", /cpuTimeMs/);
        await healthy("a plugin call stopped by the cpu limit");

        // Left loaded on purpose: sandbox.dispose() frees its realm (the engine would
        // report a leak or abort then, which engineReports sees).
        const kept = await sandbox.load(`const state = { list: [1, { a: "x" }] }; export function get() { return state; }`);
        expect(await kept.call("get")).toEqual({ list: [1, { a: "x" }] });
      } finally {
        await sandbox.dispose();
      }
    });
    console.log(`debug-engine leak test: ${checks} health checks in ${((Date.now() - started) / 1000).toFixed(1)} s; engine reports: ${reports.length ? reports.join(" / ") : "none"}`);
    expect(reports).toEqual([]);
  }, 120_000);

  it("host modules: answered, failed, refused, flooded, cancelled and late host calls free everything they hold", async () => {
    const reports = await engineReports(async () => {
      const app = {
        echo: async (value: unknown) => value,
        echoSync: hostSync((value: unknown) => value),
        fail: async () => {
          throw new HostError("nope", { code: "E" });
        },
        late: async () => {
          await sleep(400);
          return "late";
        },
        never: () => new Promise(() => undefined),
      };
      // The debug build takes seconds to load guest modules: a long wall limit here, a short one below.
      const sandbox = await debugSandbox({ cpuTimeMs: 20_000, wallTimeMs: 30_000, maxHostCalls: 50 }, { modules: { app } });
      const short = await debugSandbox({ cpuTimeMs: 20_000, wallTimeMs: 3_000 }, { modules: { app } });
      try {
        expectOk(
          await sandbox.run(`import { echo, echoSync, fail } from "app";
            export default async () => {
              const bytes = await echo({ b: new Uint8Array([1, 2]), list: [1, "two", null] });
              const again = echoSync(bytes);
              let code; try { await fail() } catch (e) { code = e.code }
              try { await echo(() => 1) } catch {}
              return { again, code };
            }`),
          "host calls",
        );
        await expectHealthy(sandbox, "answered, failed and refused host calls");
        expectFailure(await sandbox.run(`import { echo } from "app"; export default () => { for (let i = 0; i < 100; i++) echo(i); }`), "limit", /maxHostCalls/);
        await expectHealthy(sandbox, "a flood of host calls stopped by maxHostCalls");
        expectFailure(await short.run(`import { late, never } from "app"; export default async () => { late(); await never(); }`), "timeout", /wallTimeMs/);
        await sleep(500); // the late answer arrives after its run ended
        await expectHealthy(short, "host calls cancelled by the wall limit, one answered late");
        const plugin = await sandbox.load(`import { echo } from "app"; export async function call(v) { return echo(v) }`);
        expect(await plugin.call("call", { x: 1 })).toEqual({ x: 1 });
      } finally {
        await sandbox.dispose();
        await short.dispose();
      }
    });
    expect(reports).toEqual([]);
  }, 90_000);

  it("console formatting and the web and http modules (fetch of a data: URL, Blob, URL, TextEncoder) free everything they hold", async () => {
    const reports = await engineReports(async () => {
      // Loading these guest modules takes seconds of CPU in the debug build.
      const sandbox = await debugSandbox({ cpuTimeMs: 30_000, wallTimeMs: 60_000 });
      try {
        const result = await sandbox.run(`export default async () => {
          console.log({ a: 1, b: [1, 2], nested: { map: new Map([[1, 2]]) } }, new Error("logged"));
          const controller = new AbortController();
          const res = await fetch("data:text/plain,hello", { signal: controller.signal });
          const blob = new Blob(["x", new Uint8Array([1, 2])], { type: "text/plain" });
          const headers = new Headers({ "x-a": "1" });
          controller.abort();
          return { text: await res.text(), size: blob.size, url: new URL("/p?q=1", "https://a.example").href,
                   encoded: new TextEncoder().encode("é").length, header: headers.get("x-a"), aborted: controller.signal.aborted };
        }`);
        expectOk(result, "web and http run");
        expect(result.ok && result.value).toEqual({ text: "hello", size: 3, url: "https://a.example/p?q=1", encoded: 2, header: "1", aborted: true });
        await expectHealthy(sandbox, "a run using the web and http modules");
      } finally {
        await sandbox.dispose();
      }
    });
    expect(reports).toEqual([]);
  }, 90_000);

  it("crypto.subtle, structuredClone, performance and Intl (issue 13) free everything they hold, also after a rejection", async () => {
    const reports = await engineReports(async () => {
      const sandbox = await debugSandbox({ cpuTimeMs: 30_000, wallTimeMs: 60_000 });
      try {
        const result = await sandbox.run(`export default async () => {
          const data = new Uint8Array([1, 2, 3]);
          const key = await crypto.subtle.importKey("raw", data, { name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
          const mac = await crypto.subtle.sign("HMAC", key, data);
          const rejected = await crypto.subtle.digest("MD5", data).then(() => "resolved", (e) => e.name);
          const copy = structuredClone({ map: new Map([[1, { d: new Date(0) }]]), bytes: data });
          return {
            ok: await crypto.subtle.verify("HMAC", key, mac, data), digest: (await crypto.subtle.digest("SHA-1", data)).byteLength,
            jwk: (await crypto.subtle.exportKey("jwk", key)).kty, rejected, cloned: copy.map.get(1).d.getTime(),
            now: performance.now() >= 0, number: new Intl.NumberFormat("en").format(1234), plural: new Intl.PluralRules("en").select(1),
          };
        }`);
        expectOk(result, "web API run");
        expect(result.ok && result.value).toEqual({ ok: true, digest: 20, jwk: "oct", rejected: "NotSupportedError", cloned: 0, now: true, number: "1,234", plural: "one" });
        await expectHealthy(sandbox, "a run using crypto.subtle, structuredClone, performance and Intl");
      } finally {
        await sandbox.dispose();
      }
    });
    expect(reports).toEqual([]);
  }, 90_000);

  // KNOWN BUG (reported): after a call to a missing export, freeing the plugin's realm
  // makes the debug engine report "Memory leak: 4294967024 bytes lost in 4294967294
  // blocks", i.e. two more frees than allocations (a double free). it.fails turns red once
  // the host is fixed: then make this a plain `it`.
  it("a call to a missing export, then unload: the engine's books balance", async () => {
    const reports = await engineReports(async () => {
      const sandbox = await debugSandbox({});
      try {
        await expectHealthy(sandbox, "creation");
        const plugin = await sandbox.load("export function f() { return 1; }");
        await expect(plugin.call("missing")).rejects.toThrow(/no exported function "missing"/);
        expect(await plugin.call("f")).toBe(1);
        await plugin.unload();
        await expectHealthy(sandbox, "a call to a missing export and an unload");
      } finally {
        await sandbox.dispose();
      }
    });
    expect(reports).toEqual([]);
  }, 60_000);
});
