// Issue 10 §7: cancellation and fairness. `signal` ends a run, load or call within
// milliseconds with kind "aborted" (a busy loop too); dispose() during a run gives kind
// "disposed"; stats.queuedMs sits beside wallTimeMs; queueTimeoutMs ends a run that waited
// too long with kind "queue-timeout"; a new one-shot sandbox goes to the worker with the
// least queued work; RunOptions are checked.
import { describe, expect, it } from "vitest";
import { configurePool, createSandbox, hostSync, poolStats, runScript, type RunResult, type SandboxOptions } from "scriptbox";

// Demotion off: these are placements among the shared workers, and a busy script run twice
// would otherwise go to a demoted worker the second time (that is pool-demotion.test.ts).
configurePool({ sharedWorkers: 2, demotedWorkers: 0 });


const BUSY_LOOP = "export default () => { for (;;) {} }";
/** A synchronous guest that keeps its worker busy for `ms` (under a CPU limit far above it). */
const busyFor = (ms: number) => `export default () => { const end = Date.now() + ${ms}; let n = 0; while (Date.now() < end) n++; return 'busy done' }`;

function failure(result: RunResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

describe("signal", () => {
  it("aborts a busy loop within milliseconds, long before its CPU limit; the sandbox keeps serving", async () => {
    let looping: () => void = () => {};
    const inLoop = new Promise<void>((resolve) => (looping = resolve));
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 20_000, wallTimeMs: 60_000 }, modules: { probe: { looping: hostSync(() => looping()) } } });
    await sandbox.run("export default () => 'warm'"); // its worker has started
    const controller = new AbortController();
    // Abort only once the guest is in its loop (on a loaded machine a fixed delay may end
    // before the worker ran at all), and after it had some CPU time there.
    const running = sandbox.run("import { looping } from 'probe'; export default () => { looping(); for (;;) {} }", { signal: controller.signal });
    await inLoop;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const abortedAt = performance.now();
    controller.abort();
    const result = await running;
    const tookMs = performance.now() - abortedAt;
    expect(failure(result)).toMatchObject({ kind: "aborted", name: "AbortError" });
    // The worker's own outcome came back (it has the run's stats): the loop saw the stop.
    expect(result.stats.cpuTimeMs).toBeGreaterThan(0);
    expect(tookMs).toBeLessThan(1_000); // the CPU limit would have taken 20 s
    expect(await sandbox.run("export default () => 'next'")).toMatchObject({ ok: true, value: "next" });
    await sandbox.dispose();
  });

  it("aborts a run waiting on a timer and cancels what it started", async () => {
    const logs: string[] = [];
    const sandbox = await createSandbox({ onLog: (entry) => logs.push(entry.message) });
    const controller = new AbortController();
    const running = sandbox.run("setTimeout(() => console.log('too late'), 300); export default () => new Promise(() => {})", { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    expect(failure(await running).kind).toBe("aborted");
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(logs).not.toContain("too late");
    await sandbox.dispose();
  });

  it("an already aborted signal ends the run without running it", async () => {
    const logs: string[] = [];
    const result = await runScript("console.log('ran'); export default () => 1", { signal: AbortSignal.abort(), onLog: (entry) => logs.push(entry.message) });
    expect(failure(result).kind).toBe("aborted");
    expect(logs).toEqual([]);
  });

  it("aborts a plugin call (plugin.with({ signal })) and a load", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 20_000 } });
    const plugin = await sandbox.load("export function spin() { for (;;) {} } export function ok() { return 'ok' }");
    const controller = new AbortController();
    const call = plugin.with({ signal: controller.signal }).invoke("spin");
    setTimeout(() => controller.abort(), 100);
    expect(failure(await call).kind).toBe("aborted");
    await expect(sandbox.load("for (;;) {}", { signal: AbortSignal.timeout(100) })).rejects.toMatchObject({ name: "ScriptError", kind: "aborted" });
    await sandbox.dispose();
  });
});

describe("dispose() during a run", () => {
  it("ends the run with kind disposed, a busy loop too", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 20_000 } });
    const waiting = sandbox.run("export default () => new Promise(() => {})");
    const spinning = sandbox.run(BUSY_LOOP);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sandbox.dispose();
    expect(failure(await waiting)).toMatchObject({ kind: "disposed", message: "the sandbox was disposed while the script was running" });
    expect(failure(await spinning).kind).toBe("disposed");
    // The busy loop was stopped too: the worker serves others at once.
    const next = await runScript("export default () => 'free'");
    expect(next).toMatchObject({ ok: true, value: "free" });
  });
});

describe("queueing", () => {
  it("stats.queuedMs counts the wait behind a busy run; queueTimeoutMs ends a run that waited too long without running it", async () => {
    // Runs of one sandbox share its worker: these two queue behind the busy one for sure.
    const busy = await createSandbox({ limits: { cpuTimeMs: 10_000 } });
    const blocking = busy.run(busyFor(600));
    const queued = busy.run("console.log('ran'); export default () => 'late'", { queueTimeoutMs: 100 });
    const waited = busy.run("export default () => 'after'");
    const timedOut = await queued;
    expect(failure(timedOut)).toMatchObject({ kind: "queue-timeout", name: "TimeoutError" });
    expect(timedOut.logs).toEqual([]);
    expect(timedOut.stats.queuedMs).toBeGreaterThanOrEqual(90);
    expect(await blocking).toMatchObject({ ok: true, value: "busy done" });
    const after = await waited;
    expect(after).toMatchObject({ ok: true, value: "after" });
    expect(after.stats.queuedMs).toBeGreaterThan(300);
    expect(after.stats.wallTimeMs).toBeLessThan(after.stats.queuedMs);
    await busy.dispose();
  });

  it("a queueTimeoutMs does not cut a run that has started", async () => {
    // The run must start within its queueTimeoutMs: a warm worker, and a timeout well above a
    // start (50 ms once failed in a fresh-clone CI run, with other test files running beside).
    await runScript("export default () => 1");
    const result = await runScript("export default async () => { await new Promise((r) => setTimeout(r, 600)); return 'whole' }", { queueTimeoutMs: 200 });
    expect(result, JSON.stringify(result.ok ? result.stats : result.error)).toMatchObject({ ok: true, value: "whole" });
    expect(result.stats.wallTimeMs).toBeGreaterThan(500);
  });

  it("new one-shot sandboxes go to the worker with less queued work, not behind a busy one", async () => {
    // Warm both shared workers first.
    await Promise.all([runScript("export default () => 1"), runScript("export default () => 1")]);
    let started!: () => void;
    const busyStarted = new Promise<void>((resolve) => (started = resolve));
    // A synchronous host call from inside the guest says it runs (a console line would
    // arrive only once the run is over, and the quick runs below would find the worker free).
    const modules = { probe: { started: hostSync(() => started()) } };
    const source = `import { started } from "probe"; export default () => { started(); const end = Date.now() + 1500; while (Date.now() < end); return 'busy done' }`;
    const busy = runScript(source, { limits: { cpuTimeMs: 10_000 }, modules });
    await busyStarted;
    expect(poolStats().inFlightPerSharedWorker.sort()).toEqual([0, 1]);
    const quick: RunResult[] = [];
    for (let i = 0; i < 10; i++) quick.push(await runScript("export default (x) => x + 1", { input: i }));
    const busyResult = await busy;
    expect(busyResult).toMatchObject({ ok: true });
    for (const [i, result] of quick.entries()) {
      expect(result).toMatchObject({ ok: true, value: i + 1 });
      // Queued behind the 1.5 s run, each would have waited over a second.
      expect(result.stats.queuedMs).toBeLessThan(1000);
    }
  });
});

/**
 * Four sandboxes on two idle workers, two on each, so one of the three neighbours shares
 * the worker of the one that runs `looping` (it must end with `endsWith`). The neighbours'
 * runs, queued behind it, must move to the other worker: behind it, one of them would
 * wait ~1.5 s for the loop's limit.
 */
async function neighboursMoveAway(options: SandboxOptions, looping: string, endsWith: string): Promise<void> {
  const sandboxes = [];
  for (let i = 0; i < 4; i++) sandboxes.push(await createSandbox(options));
  await Promise.all(sandboxes.map((sandbox) => sandbox.run("export default () => 'warm'")));
  const [looper, ...neighbours] = sandboxes;
  const loop = looper!.run(looping);
  await new Promise((resolve) => setTimeout(resolve, 30));
  const results = await Promise.all(neighbours.map((sandbox, i) => sandbox.run("export default (x) => x", { input: i })));
  results.forEach((result, i) => expect(result).toMatchObject({ ok: true, value: i }));
  for (const result of results) expect(result.stats.queuedMs).toBeLessThan(750);
  expect(failure(await loop).kind).toBe(endsWith);
  // The moved sandbox lives on in its new worker.
  for (const sandbox of neighbours) expect(await sandbox.run("export default () => 'again'")).toMatchObject({ ok: true, value: "again" });
  await Promise.all(sandboxes.map((sandbox) => sandbox.dispose()));
}

describe("moving off a stuck worker", () => {
  it("a run already queued behind a long guest on its worker moves to the other worker instead of waiting", async () => {
    await neighboursMoveAway({ limits: { cpuTimeMs: 1500 } }, "export default () => { for (;;) {} }", "cpu");
  });

  it("also behind a guest that calls a hostSync function every millisecond", async () => {
    // Each synchronous call moves the watchdog's CPU deadline (by the call's awake time);
    // the watchdog must still see one long entry, not a new one at every call.
    await neighboursMoveAway(
      { modules: { app: { tick: hostSync(() => 0) } }, limits: { cpuTimeMs: 1500, maxHostCalls: 1_000_000 } },
      `import { tick } from "app"; export default () => { for (;;) { const end = Date.now() + 1; while (Date.now() < end); tick() } }`,
      "cpu",
    );
  });

  it("also behind a guest that spends nearly all its time waiting for a slow hostSync function", async () => {
    // The watchdog samples the worker every 20 ms and nearly always finds it in a wait
    // (no deadline armed): it must still see one long entry holding the worker.
    const slow = hostSync(() => {
      const end = performance.now() + 2;
      while (performance.now() < end);
      return 0;
    });
    await neighboursMoveAway(
      { modules: { app: { slow } }, limits: { wallTimeMs: 1500, maxHostCalls: 1_000_000 } },
      `import { slow } from "app"; export default () => { for (;;) slow() }`,
      "timeout",
    );
  });
});

describe("RunOptions", () => {
  it("unknown keys are errors; null means no options; signal and queueTimeoutMs are checked", async () => {
    const sandbox = await createSandbox({});
    await expect(sandbox.run("export default () => 1", { sginal: AbortSignal.abort() } as never)).rejects.toThrow(/unknown run options key "sginal"/);
    expect(await sandbox.run("export default () => 1", null)).toMatchObject({ ok: true, value: 1 });
    await expect(sandbox.run("export default () => 1", { signal: {} } as never)).rejects.toThrow("signal must be an AbortSignal");
    await expect(sandbox.run("export default () => 1", { queueTimeoutMs: -1 })).rejects.toThrow(RangeError);
    await expect(sandbox.load("export const a = 1", { input: 1 } as never)).rejects.toThrow(/unknown load options key "input"/);
    expect(await runScript("export default () => 2", null)).toMatchObject({ ok: true, value: 2 });
    await sandbox.dispose();
  });
});
