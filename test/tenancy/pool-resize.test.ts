// Issue 10 §6 (pool size configurable) and issue 12 target 6 (warmPool): concurrent
// warmPool() calls share one warm-up, so the shared workers still start one after another;
// configurePool() with fewer shared workers after the pool started shrinks it without
// taking a worker from any live sandbox. (vitest runs each file in a fresh process.)
import { describe, expect, it, vi } from "vitest";
import { configurePool, createSandbox, poolStats, warmPool } from "scriptbox";

describe("warmPool and configurePool on a running pool", () => {
  it("concurrent warmPool() calls share one warm-up: one worker starts, then the next", async () => {
    expect(poolStats().shared).toBe(0);
    configurePool({ sharedWorkers: 2 });
    const first = warmPool();
    const second = warmPool();
    expect(second).toBe(first);
    expect(poolStats().shared).toBe(1);
    await Promise.all([first, second]);
    expect(poolStats().shared).toBe(2);
  });

  it("fewer shared workers: an empty worker ends at once, a worker with sandboxes ends after its last one", async () => {
    configurePool({ sharedWorkers: 2 });
    await warmPool();
    // Two sandboxes created one after another land on the two workers (ties go round-robin).
    const sandboxes = [await createSandbox(), await createSandbox()];
    expect(poolStats().shared).toBe(2);
    configurePool({ sharedWorkers: 1 });
    expect(poolStats()).toMatchObject({ shared: 1, retiringShared: 1 });
    // Nobody lost a worker: both sandboxes still run, and a new one goes to the worker that stays.
    for (const sandbox of sandboxes) expect(await sandbox.run("export default () => 6 * 7")).toMatchObject({ ok: true, value: 42 });
    const third = await createSandbox();
    expect(await third.run("export default () => 'third'")).toMatchObject({ ok: true, value: "third" });
    expect(poolStats().inFlightPerSharedWorker).toHaveLength(1);
    await Promise.all([...sandboxes, third].map((sandbox) => sandbox.dispose()));
    await vi.waitFor(() => expect(poolStats()).toMatchObject({ shared: 1, retiringShared: 0 }), { timeout: 10_000 });

    // Growing again and shrinking an empty pool: the extra worker ends at once.
    configurePool({ sharedWorkers: 2 });
    await warmPool();
    expect(poolStats().shared).toBe(2);
    configurePool({ sharedWorkers: 1 });
    expect(poolStats()).toMatchObject({ shared: 1, retiringShared: 0 });
  });
});
