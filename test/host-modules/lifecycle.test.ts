// Issue 9 §2, §3, §5: how host calls live and end. Async calls are pending work of the run
// (many at once; wallTimeMs ends them and aborts their signals; late answers are dropped);
// synchronous calls block only their own worker, count toward wallTimeMs and not
// cpuTimeMs, and refuse promises and re-entry into their own sandbox.
import { setTimeout as sleepWith } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { createSandbox, hostSync, Sandbox, type HostCallContext } from "scriptbox";
import { failure, value } from "./helpers.js";
import { WorkerPool } from "../../dist/host/pool.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
function busyWait(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

const pools: WorkerPool[] = [];
afterAll(async () => {
  for (const pool of pools) await pool.shutdown();
});

describe("async host calls as pending work", () => {
  it("many calls may be pending at once; the run waits for all of them", async () => {
    let inFlight = 0;
    let most = 0;
    // Every call waits until all 500 are in flight at once (or 10 s pass, failing below).
    let releaseAll: () => void = () => undefined;
    const allInFlight = new Promise<void>((resolve) => (releaseAll = resolve));
    const sandbox = await createSandbox({
      modules: {
        app: {
          async slowDouble(n: number) {
            inFlight++;
            most = Math.max(most, inFlight);
            if (inFlight === 500) releaseAll();
            await Promise.race([allInFlight, sleep(10_000)]);
            inFlight--;
            return n * 2;
          },
        },
      },
    });
    try {
      const result = await sandbox.run(`import { slowDouble } from "app";
        export default async () => (await Promise.all(Array.from({ length: 500 }, (_, i) => slowDouble(i)))).reduce((a, b) => a + b, 0)`);
      expect(value(result)).toBe(2 * ((499 * 500) / 2));
      expect(most).toBe(500);
      // A call the script does not await still belongs to the run: the run waits for it.
      const log: string[] = [];
      const fire = await sandbox.run(`import { slowDouble } from "app"; slowDouble(1).then((v) => console.log("settled " + v)); export default () => "returned"`);
      log.push(...fire.logs.map((entry) => entry.message));
      expect(value(fire)).toBe("returned");
      expect(log).toEqual(["settled 2"]);
    } finally {
      await sandbox.dispose();
    }
  });

  it("wallTimeMs ends pending calls: each call's signal aborts, and late answers are dropped without error", async () => {
    const signals: AbortSignal[] = [];
    let lateAnswers = 0;
    const sandbox = await createSandbox({
      limits: { wallTimeMs: 300 },
      modules: {
        db: {
          async query(this: HostCallContext, ms: number) {
            signals.push(this.signal);
            await sleep(ms);
            lateAnswers++;
            return "late";
          },
          never(this: HostCallContext) {
            signals.push(this.signal);
            return new Promise(() => undefined); // never settles
          },
        },
      },
    });
    try {
      const result = await sandbox.run(`import { query, never } from "db";
        export default async () => { query(600); query(700); await never(); return "unreachable" }`);
      expect(failure(result)).toMatchObject({ kind: "timeout", message: expect.stringContaining("wallTimeMs limit (300 ms) exceeded") });
      expect(signals).toHaveLength(3);
      expect(signals.every((signal) => signal.aborted)).toBe(true);
      await sleep(500); // the answers arrive after the run ended
      expect(lateAnswers).toBe(2);
      // and the sandbox carries on, untroubled by them
      expect(value(await sandbox.run(`import { query } from "db"; export default () => query(1)`))).toBe("late");
    } finally {
      await sandbox.dispose();
    }
  });

  it("a call whose promise never settles does not keep the script's arguments once the run has ended", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const sent: WeakRef<ArrayBuffer>[] = [];
    const waiting: (() => void)[] = [];
    const sandbox = await createSandbox({
      limits: { wallTimeMs: 300 },
      modules: {
        app: {
          // Keeps only its resolver, as a function waiting for an approval would.
          waitFor(bytes: Uint8Array) {
            sent.push(new WeakRef(bytes.buffer as ArrayBuffer));
            return new Promise<void>((resolve) => waiting.push(resolve));
          },
        },
      },
    });
    try {
      const result = await sandbox.run(`import { waitFor } from "app";
        export default async () => { waitFor(new Uint8Array(1 << 20)); await waitFor(new Uint8Array(1 << 20)); }`);
      expect(failure(result).kind).toBe("timeout");
      expect(sent).toHaveLength(2);
      await sleep(10);
      gc();
      // Before: each pending reaction held its call message, with the argument's buffer.
      expect(sent.map((ref) => ref.deref())).toEqual([undefined, undefined]);
    } finally {
      for (const resolve of waiting) resolve();
      await sandbox.dispose();
    }
  });

  it("the arguments of calls waiting for an answer carry at most memoryBytes; an answer makes room again", async () => {
    // A script firing un-awaited 8 MiB calls at a slow function made the embedder hold ~2 GB.
    const waiting: (() => void)[] = [];
    let received = 0;
    const sandbox = await createSandbox({
      modules: {
        app: {
          slow(bytes: Uint8Array) {
            received++;
            const size = bytes.length;
            return new Promise<number>((resolve) => waiting.push(() => resolve(size)));
          },
        },
      },
    });
    try {
      const run = sandbox.run(`import { slow } from "app";
        export default async () => {
          const pending = [];
          for (let i = 0; i < 11; i++) pending.push(slow(new Uint8Array(6 << 20)));
          const outcomes = (await Promise.allSettled(pending)).map((o) => o.status === "fulfilled" ? o.value : o.reason.name + ": " + o.reason.message);
          outcomes.push(await slow(new Uint8Array(6 << 20)));
          return outcomes;
        }`);
      const deadline = Date.now() + 20_000;
      while (received < 10 && Date.now() < deadline) await sleep(10);
      await sleep(100);
      expect(received).toBe(10);
      for (const answer of waiting.splice(0)) answer();
      while (received < 11 && Date.now() < deadline) await sleep(10);
      for (const answer of waiting.splice(0)) answer();
      const outcomes = value(await run) as unknown[];
      expect(outcomes.slice(0, 10)).toEqual(Array(10).fill(6 << 20));
      expect(outcomes[10]).toMatch(/^RangeError: limit: the arguments of the host calls waiting for an answer may carry at most memoryBytes \(64 MiB\); app\.slow would add \d+ bytes to \d+$/);
      expect(outcomes[11]).toBe(6 << 20);
    } finally {
      await sandbox.dispose();
    }
  });

  it("many concurrent calls passing the run's signal on are no listener-leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    const sandbox = await createSandbox({
      modules: {
        app: {
          async lookup(this: HostCallContext, id: number) {
            await sleepWith(20, null, { signal: this.signal }); // as docs/host-modules.md advises
            return id;
          },
        },
      },
    });
    try {
      const result = await sandbox.run(`import { lookup } from "app";
        export default () => Promise.all(Array.from({ length: 30 }, (_, i) => lookup(i)))`);
      expect(value(result)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      await sleep(10);
      expect(warnings).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await sandbox.dispose();
    }
  });

  it("the signal lets the embedder cancel its own work when the run fails", async () => {
    // (A call that reaches the embedder only after its run has ended is refused unrun.)
    let cancelled = false;
    const sandbox = await createSandbox({
      modules: {
        db: {
          query(this: HostCallContext) {
            return new Promise((_, reject) => {
              this.signal.addEventListener("abort", () => {
                cancelled = true;
                reject(this.signal.reason);
              });
            });
          },
        },
      },
    });
    try {
      const result = await sandbox.run(`import { query } from "db"; query(); export default async () => { await new Promise((r) => setTimeout(r, 50)); throw new Error("script gave up") }`);
      expect(failure(result).message).toBe("script gave up");
      expect(cancelled).toBe(true);
    } finally {
      await sandbox.dispose();
    }
  });
});

describe("synchronous host calls", () => {
  it("return the value directly (no await), also from nested objects and in loops", async () => {
    const counts = new Map<string, number>();
    const sandbox = await createSandbox({
      modules: { app: { counter: { inc: hostSync((key: string) => (counts.set(key, (counts.get(key) ?? 0) + 1), counts.get(key))) } } },
    });
    try {
      const result = await sandbox.run(`import { counter } from "app"; export default () => { let last; for (let i = 0; i < 1000; i++) last = counter.inc("a"); return last }`);
      expect(value(result)).toBe(1000);
    } finally {
      await sandbox.dispose();
    }
  });

  it("a synchronous function that returns a promise is a clear guest TypeError, not a hang", async () => {
    const sandbox = await createSandbox({ modules: { app: { get: hostSync(() => Promise.resolve(1) as unknown as number) } } });
    try {
      const result = await sandbox.run(`import { get } from "app"; export default () => { try { get() } catch (e) { return e.name + ": " + e.message } }`);
      expect(value(result)).toBe("TypeError: app.get is a synchronous host function (hostSync) but returned a promise; make it return its value, or declare it without hostSync");
    } finally {
      await sandbox.dispose();
    }
  });

  it("calling back into its own sandbox from a synchronous function is a guest error, not a deadlock", async () => {
    let sandbox: Sandbox | null = null;
    let embedderSaw = "";
    sandbox = await createSandbox({
      modules: {
        app: {
          reenter: hostSync(() => {
            const pending = sandbox!.run("export default () => 1");
            pending.catch((error: Error) => (embedderSaw = error.message));
            return 0;
          }),
        },
      },
    });
    try {
      const result = await sandbox.run(`import { reenter } from "app"; export default () => { try { reenter() } catch (e) { return e.message } }`);
      expect(value(result)).toBe("app.reenter called sandbox.run on its own sandbox from a synchronous host function, which would deadlock");
      expect(embedderSaw).toMatch(/^sandbox\.run was called from inside app\.reenter, a synchronous host function of the same sandbox/);
      expect(value(await sandbox.run("export default () => 'still fine'"))).toBe("still fine");
    } finally {
      await sandbox.dispose();
    }
  });

  it("the wait counts toward wallTimeMs, not cpuTimeMs", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 100, wallTimeMs: 5_000 }, modules: { app: { slow: hostSync(() => (busyWait(400), "done")) } } });
    try {
      const result = await sandbox.run(`import { slow } from "app"; export default () => slow()`);
      expect(value(result)).toBe("done");
      expect(result.stats.cpuTimeMs).toBeLessThan(100);
      expect(result.stats.wallTimeMs).toBeGreaterThanOrEqual(400);
    } finally {
      await sandbox.dispose();
    }
    const short = await createSandbox({ limits: { wallTimeMs: 200 }, modules: { app: { slow: hostSync(() => (busyWait(600), "done")), next: hostSync((n: number) => n + 1) } } });
    try {
      const result = await short.run(`import { slow } from "app"; export default () => { try { return slow() } catch { return "caught" } }`);
      expect(failure(result)).toMatchObject({ kind: "timeout", message: expect.stringContaining("while waiting for app.slow (a synchronous host function)") });
      expect(value(await short.run(`export default () => "next run"`))).toBe("next run");
      // The late answer ("done") lands before this call's: each call takes its own answer.
      expect(value(await short.run(`import { next } from "app"; export default () => [next(41), next(1)]`))).toEqual([42, 2]);
    } finally {
      await short.dispose();
    }
  });
});

describe("isolation between sandboxes", () => {
  it("a slow async host call does not hold up another sandbox on the same worker", async () => {
    const pool = new WorkerPool({ sharedWorkers: 1 });
    pools.push(pool);
    const order: string[] = [];
    const modules = { app: { slow: async () => (await sleep(400), "slow") } };
    const a = await Sandbox.create({ modules }, pool);
    const b = await Sandbox.create({}, pool);
    const first = a.run(`import { slow } from "app"; export default () => slow()`).then((result) => order.push(`a:${value(result)}`));
    await sleep(50);
    const second = b.run(`export default () => { let s = 0; for (let i = 0; i < 1e5; i++) s += i; return s }`).then((result) => order.push(`b:${value(result)}`));
    await Promise.all([first, second]);
    expect(order).toEqual(["b:4999950000", "a:slow"]);
    await a.dispose();
    await b.dispose();
  });

  it("a slow synchronous host call blocks only its own worker: a sandbox on another worker keeps computing", async () => {
    const pool = new WorkerPool({ sharedWorkers: 2 });
    pools.push(pool);
    const a = await Sandbox.create({ modules: { app: { block: hostSync(() => (busyWait(800), "blocked")) } } }, pool);
    const b = await Sandbox.create({}, pool);
    // b's guest loop runs in the other worker while a's sync call holds a's worker (and
    // this thread); b's own clock shows it was not held up by a's 800 ms.
    const bRun = b.run(`export default () => { const end = Date.now() + 150; let n = 0; while (Date.now() < end) n++; return n > 0 }`);
    await sleep(20);
    const aRun = a.run(`import { block } from "app"; export default () => block()`);
    const [aResult, bResult] = await Promise.all([aRun, bRun]);
    expect(value(aResult)).toBe("blocked");
    expect(value(bResult)).toBe(true);
    expect(bResult.stats.wallTimeMs).toBeLessThan(700);
    await a.dispose();
    await b.dispose();
  });

  it("isolate: true keeps a sandbox's slow synchronous calls in its own worker, away from the shared ones", async () => {
    const a = await createSandbox({ isolate: true, modules: { app: { block: hostSync(() => (busyWait(800), "blocked")) } } });
    const b = await createSandbox({});
    try {
      const bRun = b.run(`export default () => { const end = Date.now() + 150; let n = 0; while (Date.now() < end) n++; return n > 0 }`);
      await sleep(20);
      const [aResult, bResult] = await Promise.all([a.run(`import { block } from "app"; export default () => block()`), bRun]);
      expect(value(aResult)).toBe("blocked");
      expect(value(bResult)).toBe(true);
      expect(bResult.stats.wallTimeMs).toBeLessThan(700);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  });
});

describe("the embedder's process", () => {
  // A script that embeds scriptbox ends when its work is done, host modules or not: the
  // ports host calls travel on never keep the process alive by themselves.
  const embedder = (modules: string, code: string, dispose: boolean) => `
    import { createSandbox, hostSync } from "scriptbox";
    const sandbox = await createSandbox({ modules: ${modules} });
    const result = await sandbox.run(${JSON.stringify(code)});
    console.log(JSON.stringify(result.ok ? result.value : result.error));
    ${dispose ? "await sandbox.dispose();" : ""}`;
  const cases = [
    ["synchronous host calls, sandbox disposed", `{ app: { f: hostSync((i) => i + 1) } }`, `import { f } from "app"; export default () => f(1)`, true],
    ["async host calls, sandbox disposed", `{ app: { f: async (i) => i + 1 } }`, `import { f } from "app"; export default async () => await f(1)`, true],
    ["synchronous host calls, sandbox left idle", `{ app: { f: hostSync((i) => i + 1) } }`, `import { f } from "app"; export default () => f(1)`, false],
  ] as const;
  for (const [name, modules, code, dispose] of cases) {
    it(`exits on its own once its sandboxes are done: ${name}`, async () => {
      const { execFile } = await import("node:child_process");
      const outcome = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(process.execPath, ["--input-type=module", "-e", embedder(modules, code, dispose)], { cwd: process.cwd(), timeout: 20_000 }, (error, stdout, stderr) =>
          resolve({ code: child.exitCode, signal: child.signalCode ?? (error as { signal?: string } | null)?.signal ?? null, stdout, stderr }),
        );
      });
      expect(outcome).toMatchObject({ code: 0, signal: null, stdout: "2\n" });
    }, 30_000);
  }
});
