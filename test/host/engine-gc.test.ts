// When a worker collects the memory of the engine instances it dropped
// (host/worker/engine-gc.ts): at once when they add up to 32 MiB, and once it has dropped
// nothing for QUIET_MS (an idle isolate does not collect, and the memory of an instance
// stays resident until a GC finds it unreachable). What that gives back to the embedder's
// process end to end is test/tenancy/pool-rss.test.ts; here, the timing, with the
// collector stubbed (an exposed `gc` is what the module uses first) and fake timers.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

const MiB = 1024 * 1024;
const scope = globalThis as { gc?: () => void };

describe("engine-gc", () => {
  let gc: ReturnType<typeof vi.fn<() => void>>;
  let exposed: (() => void) | undefined;

  beforeEach(() => {
    vi.useFakeTimers();
    // The module keeps its counters and its collector: a fresh copy for each test.
    vi.resetModules();
    exposed = scope.gc;
    gc = vi.fn<() => void>();
    scope.gc = gc;
  });
  afterEach(() => {
    vi.useRealTimers();
    if (exposed === undefined) delete scope.gc;
    else scope.gc = exposed;
  });

  const load = () => import("../../dist/host/worker/engine-gc.js");

  it("collects less than the threshold once nothing more was dropped for QUIET_MS, once", async () => {
    const { noteDroppedEngine, QUIET_MS } = await load();
    noteDroppedEngine(20 * MiB);
    vi.advanceTimersByTime(QUIET_MS - 100);
    // Another drop pushes the collection back.
    noteDroppedEngine(4 * MiB);
    vi.advanceTimersByTime(QUIET_MS - 100);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(100);
    expect(gc).toHaveBeenCalledTimes(1);
    // Nothing dropped since: no more collections.
    vi.advanceTimersByTime(10 * QUIET_MS);
    expect(gc).toHaveBeenCalledTimes(1);
  });

  it("collects at once at the threshold, and again once quiet (the first may have run while an instance was still reachable)", async () => {
    const { noteDroppedEngine, QUIET_MS } = await load();
    noteDroppedEngine(40 * MiB);
    expect(gc).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(gc).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(QUIET_MS);
    expect(gc).toHaveBeenCalledTimes(2);
    // A later drop below the threshold: one more, QUIET_MS after it.
    noteDroppedEngine(8 * MiB);
    vi.advanceTimersByTime(QUIET_MS);
    expect(gc).toHaveBeenCalledTimes(3);
  });

  it("the quiet collection waits for the worker's idle work (never ahead of a queued run)", async () => {
    const { noteDroppedEngine, setIdleScheduler, QUIET_MS } = await load();
    const idleWork: (() => void)[] = [];
    setIdleScheduler((task) => idleWork.push(task));
    noteDroppedEngine(20 * MiB);
    vi.advanceTimersByTime(QUIET_MS);
    expect(gc).not.toHaveBeenCalled();
    expect(idleWork).toHaveLength(1);
    idleWork.shift()!();
    expect(gc).toHaveBeenCalledTimes(1);
  });

  it("while drops keep coming, only the threshold collects", async () => {
    const { noteDroppedEngine, QUIET_MS } = await load();
    // 16 MiB every QUIET_MS / 2 for 20 drops: 320 MiB, ten thresholds.
    for (let i = 0; i < 20; i++) {
      noteDroppedEngine(16 * MiB);
      vi.advanceTimersByTime(QUIET_MS / 2);
    }
    expect(gc).toHaveBeenCalledTimes(10);
    vi.advanceTimersByTime(QUIET_MS);
    expect(gc).toHaveBeenCalledTimes(11);
  });
});
