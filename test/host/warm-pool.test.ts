// The worker's warm pool (host/worker/warm-pool.ts): it keeps its size in steady use, the
// engines of a burst's disposed sandboxes while the burst lasts (up to BURST_EXTRA_MAX
// more), and drops those once none was taken for BURST_IDLE_MS. The figures it buys are in
// the mixed-tenancy bench; a burst's recycled engines sharing nothing is checked end to
// end in test/tenancy/pool-lifecycle.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BURST_EXTRA_MAX, BURST_IDLE_MS, WarmPool } from "../../dist/host/worker/warm-pool.js";

describe("WarmPool", () => {
  let now = 0;
  let alive = 0;
  let dropped: number[] = [];
  const pool = (size: number) =>
    new WarmPool<number>(
      size,
      (item) => dropped.push(item),
      () => alive,
      () => now,
    );

  beforeEach(() => {
    vi.useFakeTimers();
    now = 0;
    alive = 0;
    dropped = [];
  });
  afterEach(() => vi.useRealTimers());

  /** Lets `ms` pass on both clocks (the pool's and the timers'). */
  const pass = (ms: number) => {
    now += ms;
    vi.advanceTimersByTime(ms);
  };

  it("keeps its size and no more when no more sandboxes were alive at once", () => {
    const warm = pool(3);
    for (let i = 0; i < 3; i++) warm.add(i);
    expect(warm.short).toBe(false);
    // One sandbox at a time takes an engine and gives it back.
    for (let i = 0; i < 5; i++) {
      const item = warm.take(1)!;
      expect(warm.offer(item)).toBe(true);
    }
    expect(warm.offer(99)).toBe(false);
    expect(warm.length).toBe(3);
  });

  it("keeps as many as were alive at once in a burst, up to BURST_EXTRA_MAX more than its size", () => {
    const warm = pool(3);
    for (let i = 0; i < 3; i++) warm.add(i);
    // 12 sandboxes alive at once: 3 from the pool, 9 built.
    for (let i = 1; i <= 12; i++) warm.take(i);
    expect(warm.length).toBe(0);
    for (let i = 0; i < 12; i++) expect(warm.offer(100 + i)).toBe(true);
    expect(warm.offer(200)).toBe(false);
    expect(warm.length).toBe(12);

    const big = pool(3);
    for (let i = 1; i <= 100; i++) big.take(i);
    let kept = 0;
    for (let i = 0; i < 100; i++) if (big.offer(i)) kept++;
    expect(kept).toBe(3 + BURST_EXTRA_MAX);
  });

  it("drops the burst's extra engines once none was taken for BURST_IDLE_MS, and then keeps its size again", () => {
    const warm = pool(2);
    for (let i = 1; i <= 6; i++) warm.take(i);
    for (let i = 0; i < 6; i++) warm.offer(i);
    expect(warm.length).toBe(6);

    // Still taken from now and then: the burst goes on, nothing is dropped.
    pass(BURST_IDLE_MS - 10);
    warm.offer(warm.take(6)!);
    pass(BURST_IDLE_MS - 10);
    expect(dropped).toEqual([]);
    expect(warm.length).toBe(6);

    // BURST_IDLE_MS without a take: the four beyond its size are dropped.
    pass(20);
    expect(dropped).toHaveLength(4);
    expect(warm.length).toBe(2);
    // The burst is over (no sandbox alive): an engine offered now is kept only up to its size.
    expect(warm.offer(50)).toBe(false);
  });
});
