// Overflow workers (PoolOptions.overflowWorkers): while every shared worker is held by a
// guest (one entry running 20 ms or more), a createSandbox sandbox placed then gets an
// extra shared worker instead of queueing behind a guest that may run to its CPU limit.
// Found by review: two sandboxes of one tenant spinning in `for (;;) {}` held both shared
// workers of a 2-core machine, and every other createSandbox run waited ~2 CPU limits.
import { afterEach, describe, expect, it, vi } from "vitest";
import { configurePool, createSandbox, hostSync, poolStats, runScript, type Sandbox } from "scriptbox";

/** A sandbox whose run spins until aborted, and a promise that resolves once it spins. */
async function hog(): Promise<{ sandbox: Sandbox; controller: AbortController; running: Promise<unknown> }> {
  let looping: () => void = () => {};
  const inLoop = new Promise<void>((resolve) => (looping = resolve));
  const sandbox = await createSandbox({ limits: { cpuTimeMs: 30_000, wallTimeMs: 60_000 }, modules: { probe: { looping: hostSync(() => looping()) } } });
  const controller = new AbortController();
  const running = sandbox.run("import { looping } from 'probe'; export default () => { looping(); for (;;) {} }", { signal: controller.signal });
  await inLoop;
  return { sandbox, controller, running };
}

/** Both shared workers held by a spinning sandbox each, seen held by the watchdog (20 ms or more). */
async function holdBothSharedWorkers(overflowWorkers: number): Promise<Awaited<ReturnType<typeof hog>>[]> {
  configurePool({ sharedWorkers: 2, overflowWorkers, demotedWorkers: 0 });
  const hogs = [await hog(), await hog()];
  opened.push(...hogs.map(({ sandbox }) => sandbox));
  await new Promise((resolve) => setTimeout(resolve, 100));
  return hogs;
}

/** With overflowWorkers: 0 and both shared workers held, the run `start` makes ends only after the hogs are stopped. */
async function expectToWaitForTheHogs(start: () => Promise<unknown>): Promise<void> {
  const [first, second] = await holdBothSharedWorkers(0);
  const order: string[] = [];
  const result = start().then((outcome) => (order.push("victim"), outcome));
  await new Promise((resolve) => setTimeout(resolve, 300));
  order.push("hogs stopped");
  first!.controller.abort();
  second!.controller.abort();
  expect(await result).toMatchObject({ ok: true, value: "served" });
  expect(order).toEqual(["hogs stopped", "victim"]);
  expect(poolStats().overflow).toBe(0);
  await Promise.all([first!.running, second!.running]);
}

const opened: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sandbox) => sandbox.dispose()));
});

describe("overflow workers", () => {
  it("a sandbox created while every shared worker is held runs on an overflow worker at once; the overflow worker ends 5 s after its last sandbox", async () => {
    const [first, second] = await holdBothSharedWorkers(1);
    expect(poolStats()).toMatchObject({ shared: 2, overflow: 0 });
    const order: string[] = [];
    void first.running.then(() => order.push("hog"));
    void second.running.then(() => order.push("hog"));
    const victim = await createSandbox();
    opened.push(victim);
    const result = await victim.run("export default () => 'served'");
    order.push("victim");
    expect(result).toMatchObject({ ok: true, value: "served" });
    expect(order).toEqual(["victim"]);
    expect(poolStats().overflow).toBe(1);
    first.controller.abort();
    second.controller.abort();
    await Promise.all([first.running, second.running]);
    await Promise.all(opened.splice(0).map((sandbox) => sandbox.dispose()));
    // Its last sandbox released: it ends OVERFLOW_IDLE_MS (5 s) later.
    await vi.waitFor(() => expect(poolStats().overflow).toBe(0), { timeout: 15_000, interval: 250 });
  }, 60_000);

  it("with overflowWorkers: 0, such a sandbox waits for a held worker (as before)", async () => {
    await expectToWaitForTheHogs(async () => {
      const victim = await createSandbox();
      opened.push(victim);
      return victim.run("export default () => 'served'");
    });
  }, 60_000);

  it("once no shared worker is held, new sandboxes go to the shared workers: the overflow worker ends under steady light traffic", async () => {
    configurePool({ sharedWorkers: 2, overflowWorkers: 1, demotedWorkers: 0 });
    const first = await hog();
    const second = await hog();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const victim = await createSandbox();
    expect((await victim.run("export default () => 1")).ok).toBe(true);
    expect(poolStats().overflow).toBe(1);
    first.controller.abort();
    second.controller.abort();
    await Promise.all([first.running, second.running]);
    await Promise.all([first.sandbox.dispose(), second.sandbox.dispose(), victim.dispose()]);
    // A sandbox every 400 ms, each alive 1 s: offered the overflow worker too, it took its
    // share of them and never ended (found by review).
    const living: Promise<void>[] = [];
    const until = performance.now() + 8_000;
    while (performance.now() < until) {
      living.push(
        (async () => {
          const sandbox = await createSandbox();
          expect((await sandbox.run("export default () => 1")).ok).toBe(true);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          await sandbox.dispose();
        })(),
      );
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    expect(poolStats().overflow).toBe(0);
    await Promise.all(living);
  }, 60_000);

  it("turning overflowWorkers off and on while everything is held starts no more overflow workers than it allows", async () => {
    configurePool({ sharedWorkers: 2, overflowWorkers: 1, demotedWorkers: 0 });
    const hogs = [await hog(), await hog()];
    await new Promise((resolve) => setTimeout(resolve, 100));
    hogs.push(await hog()); // on the overflow worker, holding it
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(poolStats().overflow).toBe(1);
    for (let i = 0; i < 3; i++) {
      configurePool({ overflowWorkers: 0 }); // the held overflow worker retires (it has a sandbox)
      configurePool({ overflowWorkers: 1 });
      const extra = await createSandbox();
      opened.push(extra);
      const controller = new AbortController();
      // Queued behind a held worker: nothing else may start while the retiring one lives.
      void extra.run("export default () => 1", { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      controller.abort();
    }
    const stats = poolStats();
    expect(stats.overflow + stats.retiringShared).toBeLessThanOrEqual(1);
    for (const { controller } of hogs) controller.abort();
    await Promise.all(hogs.map(({ running }) => running));
    opened.push(...hogs.map(({ sandbox }) => sandbox));
  }, 60_000);

  it("runScript runs waiting in line while every shared worker is held go to an overflow worker too", async () => {
    // Found by review: two spinning createSandbox sandboxes (never demoted: their state is in
    // their worker) held both shared workers, and runScript got 7 runs through in 8 s.
    const [first, second] = await holdBothSharedWorkers(1);
    const order: string[] = [];
    void first.running.then(() => order.push("hog"));
    void second.running.then(() => order.push("hog"));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => runScript("export default (n) => n * 2", { input: i })));
    order.push("victims");
    expect(results.map((result) => (result.ok ? result.value : result.error.message))).toEqual(Array.from({ length: 20 }, (_, i) => i * 2));
    expect(order).toEqual(["victims"]);
    expect(poolStats().overflow).toBe(1);
    first.controller.abort();
    second.controller.abort();
    await Promise.all([first.running, second.running]);
  }, 60_000);

  it("a burst from the line spreads over the overflow workers, at most queuedRunsPerWorker each", async () => {
    // A review saw 8 runs all pick one new overflow worker before any was sent there.
    const [first, second] = await holdBothSharedWorkers(2);
    const runs = Array.from({ length: 8 }, (_, i) => runScript("export default async (n) => { await new Promise((r) => setTimeout(r, 400)); return n }", { input: i }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stats = poolStats();
    expect(stats.overflow).toBe(2);
    expect(stats.inFlightPerOverflowWorker.every((count) => count <= 4)).toBe(true);
    expect(stats.inFlightPerOverflowWorker.reduce((sum, count) => sum + count, 0)).toBe(8);
    expect((await Promise.all(runs)).map((result) => (result.ok ? result.value : result.error.message))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    first.controller.abort();
    second.controller.abort();
    await Promise.all([first.running, second.running]);
  }, 60_000);

  it("idle createSandbox sandboxes on an overflow worker, and line runs waiting on timers there, leave it room for the line", async () => {
    // Counting them (a second review), 4 idle sandboxes took the overflow worker's room and
    // the line waited for the hogs again.
    const [first, second] = await holdBothSharedWorkers(1);
    for (let i = 0; i < 5; i++) opened.push(await createSandbox());
    expect(poolStats().overflow).toBe(1);
    const runs = Promise.all(Array.from({ length: 12 }, (_, i) => runScript("export default async (n) => { await new Promise((r) => setTimeout(r, 300)); return n }", { input: i })));
    const results = await Promise.race([runs, new Promise<"late">((resolve) => setTimeout(() => resolve("late"), 10_000))]);
    expect(results === "late" ? results : results.map((result) => (result.ok ? result.value : result.error.message))).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(poolStats().overflow).toBe(1);
    first.controller.abort();
    second.controller.abort();
    await Promise.all([first.running, second.running]);
  }, 60_000);

  it("with demotion off, a runScript run that holds the only shared worker sends the line to an overflow worker too", async () => {
    // Nothing moves a one-shot hog without demotion (demotedWorkers 0, or no per-thread CPU clock).
    configurePool({ sharedWorkers: 1, overflowWorkers: 1, demotedWorkers: 0 });
    let looping: () => void = () => {};
    const inLoop = new Promise<void>((resolve) => (looping = resolve));
    const controller = new AbortController();
    const hogRun = runScript("import { looping } from 'probe'; export default () => { looping(); for (;;) {} }", {
      limits: { cpuTimeMs: 30_000, wallTimeMs: 60_000 },
      modules: { probe: { looping: hostSync(() => looping()) } },
      signal: controller.signal,
    });
    await inLoop;
    await new Promise((resolve) => setTimeout(resolve, 100));
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => runScript("export default (n) => n + 1", { input: i })));
    expect(results.map((result) => (result.ok ? result.value : result.error.message))).toEqual([1, 2, 3, 4, 5]);
    expect(poolStats().overflow).toBe(1);
    controller.abort();
    expect((await hogRun).ok).toBe(false);
  }, 60_000);

  it("with overflowWorkers: 0, runScript runs wait in line for a held worker (as before)", async () => {
    await expectToWaitForTheHogs(() => runScript("export default () => 'served'"));
  }, 60_000);

  it("overflowWorkers is checked like the other pool options", () => {
    expect(() => configurePool({ overflowWorkers: -1 })).toThrow(RangeError);
    expect(() => configurePool({ overflowWorkers: 65 })).toThrow(/overflowWorkers must be an integer from 0 to 64/);
  });
});
