// Issue 10 §6: `isolate: true` sandboxes come from a bounded pool of dedicated workers.
// Beyond maxIsolatedWorkers a new isolated sandbox waits for one (its wait is queued time,
// and queueTimeoutMs applies); released workers are reused; a native hog in an isolated
// sandbox takes down its own worker only.
import { beforeAll, describe, expect, it } from "vitest";
import { configurePool, createSandbox, poolStats, runScript, type RunResult } from "scriptbox";

const NATIVE_HOG = `const s = "a".repeat(1 << 24); export default () => { let n = 0; for (let i = 0; i < 200; i++) n += s.indexOf("b"); return n }`;
const waitThenReturn = (ms: number, value: number) => `export default async () => { await new Promise((r) => setTimeout(r, ${ms})); return ${value} }`;

beforeAll(() => {
  configurePool({ maxIsolatedWorkers: 2, idleIsolatedWorkers: 1 });
});

describe("isolate: true", () => {
  it("never runs more than maxIsolatedWorkers dedicated workers; the rest wait their turn and all succeed", async () => {
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, poolStats().isolated)), 5);
    const runs: Promise<RunResult>[] = [];
    for (let i = 0; i < 6; i++) runs.push(runScript(waitThenReturn(300, i), { isolate: true }));
    const results = await Promise.all(runs);
    clearInterval(sampler);
    results.forEach((result, i) => expect(result).toMatchObject({ ok: true, value: i }));
    expect(most).toBe(2);
    // Three waves of two: the last ones waited for a worker at least two runs long.
    const queued = results.map((result) => result.stats.queuedMs).sort((a, b) => a - b);
    expect(queued[5]).toBeGreaterThan(500);
    // Released workers are kept for reuse only up to idleIsolatedWorkers.
    expect(poolStats().idleIsolated).toBeLessThanOrEqual(1);
  });

  it("a run waiting for a dedicated worker ends with kind queue-timeout after queueTimeoutMs; a released worker is reused", async () => {
    const holders = [await createSandbox({ isolate: true }), await createSandbox({ isolate: true })];
    for (const holder of holders) expect(await holder.run("export default () => 'holding'")).toMatchObject({ ok: true });
    const started = performance.now();
    const waiting = await runScript("export default () => 'never'", { isolate: true, queueTimeoutMs: 150 });
    expect(waiting).toMatchObject({ ok: false, error: { kind: "queue-timeout" } });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(poolStats().isolated).toBe(2);
    // A sandbox that waits gets the worker the moment one is released.
    const next = await createSandbox({ isolate: true });
    const pending = next.run("export default () => 'got one'");
    await holders[0]!.dispose();
    expect(await pending).toMatchObject({ ok: true, value: "got one" });
    expect(poolStats().isolated).toBe(2);
    await holders[1]!.dispose();
    await next.dispose();
  });

  it("disposing an isolated sandbox that still waits for a worker gives up its place", async () => {
    const holders = [await createSandbox({ isolate: true }), await createSandbox({ isolate: true })];
    await Promise.all(holders.map((holder) => holder.run("export default () => 1")));
    const waiter = await createSandbox({ isolate: true });
    const pending = waiter.run("export default () => 'never'");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(poolStats().waitingForIsolated).toBe(1);
    await waiter.dispose();
    expect(await pending).toMatchObject({ ok: false, error: { kind: "disposed" } });
    expect(poolStats().waitingForIsolated).toBe(0);
    for (const holder of holders) await holder.dispose();
  });

  it("a native hog in an isolated sandbox stops only its own worker; the other isolated sandbox is untouched", async () => {
    const neighbour = await createSandbox({ isolate: true });
    const ordinary = neighbour.run(waitThenReturn(600, 7));
    const hog = await runScript(NATIVE_HOG, { isolate: true, limits: { cpuTimeMs: 100 } });
    expect(hog).toMatchObject({ ok: false, error: { kind: "cpu" } });
    expect(await ordinary).toMatchObject({ ok: true, value: 7 });
    expect(neighbour.disposed).toBe(false);
    // The terminated worker left the pool; a new isolated sandbox gets a fresh one.
    expect(await runScript("export default () => 'fresh'", { isolate: true })).toMatchObject({ ok: true, value: "fresh" });
    await neighbour.dispose();
    expect(poolStats().isolated).toBeLessThanOrEqual(2);
  });
});
