// The worker's warm pool (host/worker/warm-pool.ts): it keeps its size in steady use, the
// engines of a burst's disposed sandboxes while the burst uses them (up to burstExtraMax
// more), and every BURST_WINDOW_MS drops those that lay unused for the whole window. The
// figures it buys are in the mixed-tenancy bench; a burst's recycled engines sharing
// nothing is checked end to end in test/tenancy/pool-lifecycle.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BURST_EXTRA_MAX, BURST_WINDOW_MS, REFILL_DELAY_MS, WarmPool, WarmPoolRefill } from "../../dist/host/worker/warm-pool.js";

describe("WarmPool", () => {
  let alive = 0;
  let dropped: number[] = [];
  const pool = (size: number, burstExtraMax = BURST_EXTRA_MAX) =>
    new WarmPool<number>(
      size,
      burstExtraMax,
      (item) => dropped.push(item),
      () => alive,
    );

  beforeEach(() => {
    vi.useFakeTimers();
    alive = 0;
    dropped = [];
  });
  afterEach(() => vi.useRealTimers());

  /** `count` sandboxes alive at once take from the pool, then all give their engines back (new ones beyond what it held). */
  const wave = (warm: WarmPool<number>, count: number, firstNew: number) => {
    const taken: number[] = [];
    for (let i = 1; i <= count; i++) taken.push(warm.take(i) ?? firstNew++);
    return taken.map((item) => warm.offer(item));
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

  it("keeps as many as were alive at once in a burst, up to burstExtraMax more than its size", () => {
    const warm = pool(3);
    for (let i = 0; i < 3; i++) warm.add(i);
    // 12 sandboxes alive at once: 3 from the pool, 9 built.
    expect(wave(warm, 12, 100)).toEqual(Array(12).fill(true));
    expect(warm.offer(200)).toBe(false);
    expect(warm.length).toBe(12);

    const big = pool(3);
    expect(wave(big, 100, 0).filter(Boolean)).toHaveLength(3 + BURST_EXTRA_MAX);
  });

  it("with burstExtraMax 0 keeps its size only; with size 0 and burstExtraMax 1 (a dedicated worker), the engine it served", () => {
    const steady = pool(2, 0);
    expect(wave(steady, 8, 0).filter(Boolean)).toHaveLength(2);
    const none = pool(0, 0);
    expect(wave(none, 1, 0)).toEqual([false]);
    const dedicated = pool(0, 1);
    expect(wave(dedicated, 1, 0)).toEqual([true]);
    expect(dedicated.take(1)).toBe(0);
    vi.advanceTimersByTime(BURST_WINDOW_MS);
    expect(dropped).toEqual([]);
  });

  it("a busy worker keeps only the extra engines it uses: each window drops those that lay unused all of it", () => {
    const warm = pool(2);
    // A burst of 18 at once: 16 beyond its size kept.
    expect(wave(warm, 18, 0).filter(Boolean)).toHaveLength(18);
    // The load falls to 5 sandboxes at once, taken all the time: 13 engines lie unused.
    for (let t = 0; t < 10; t++) {
      wave(warm, 5, 1000);
      vi.advanceTimersByTime(BURST_WINDOW_MS / 10);
    }
    expect(dropped).toHaveLength(13);
    expect(warm.length).toBe(5);
    // Still 5 at once in the next window: nothing more is dropped.
    for (let t = 0; t < 10; t++) {
      wave(warm, 5, 1000);
      vi.advanceTimersByTime(BURST_WINDOW_MS / 10);
    }
    expect(dropped).toHaveLength(13);
    expect(warm.length).toBe(5);
  });

  it("an engine built while a dispose refilled the pool is trimmed too", () => {
    const warm = pool(2);
    warm.add(0);
    // A dispose brings it to its size while a refill build is in flight; the build lands after.
    warm.take(1);
    expect(warm.offer(1)).toBe(true);
    warm.add(2);
    warm.add(3);
    expect(warm.length).toBe(3);
    vi.advanceTimersByTime(BURST_WINDOW_MS);
    expect(dropped).toEqual([3]);
    expect(warm.length).toBe(2);
  });

  it("while sandboxes stay alive, the burst's measure holds: their engines come back and are kept", () => {
    const warm = pool(1);
    expect(wave(warm, 6, 0).filter(Boolean)).toHaveLength(6);
    // Six sandboxes bind engines again and stay alive across the window.
    const held = Array.from({ length: 6 }, (_, i) => warm.take(i + 1) ?? 100 + i);
    alive = 6;
    vi.advanceTimersByTime(BURST_WINDOW_MS);
    // All were taken in the window: none dropped, and the six come back into the pool.
    expect(dropped).toEqual([]);
    expect(held.map((item) => warm.offer(item))).toEqual(Array(6).fill(true));
  });

  it("a dedicated worker's engine that no sandbox takes for a window is dropped", () => {
    const dedicated = pool(0, 1);
    expect(wave(dedicated, 1, 7)).toEqual([true]);
    vi.advanceTimersByTime(BURST_WINDOW_MS);
    expect(dropped).toEqual([7]);
    expect(dedicated.length).toBe(0);
  });

  it("drops the extra engines of a burst a window after it ended, and then keeps its size again", () => {
    const warm = pool(2);
    expect(wave(warm, 6, 0).filter(Boolean)).toHaveLength(6);
    vi.advanceTimersByTime(BURST_WINDOW_MS - 10);
    expect(dropped).toEqual([]);
    vi.advanceTimersByTime(10);
    expect(dropped).toHaveLength(4);
    expect(warm.length).toBe(2);
    // The burst is over (no sandbox alive): an engine offered now is kept only up to its size.
    expect(warm.offer(50)).toBe(false);
    // Nothing is scheduled any more.
    expect(vi.getTimerCount()).toBe(0);
  });

  describe("refill (WarmPoolRefill)", () => {
    // WarmPool.shortForMs reads performance.now(), which vi.useFakeTimers() fakes along with
    // the timers (its default toFake), so these tests run on one clock.
    /** A pool of `size` full, and a refill whose builds are counted; idle work runs at once, builds resolve in a microtask. */
    const refilled = (size: number) => {
      const warm = pool(size);
      for (let i = 0; i < size; i++) warm.add(i);
      let built = 0;
      const refill = new WarmPoolRefill(
        warm,
        async () => {
          built++;
          warm.add(100 + built);
        },
        (task) => task(),
      );
      return { warm, refill, built: () => built };
    };

    it("builds nothing while disposes keep giving engines back (a create-run-dispose loop)", async () => {
      const { warm, refill, built } = refilled(3);
      // One sandbox at a time, alive 1.45 ms of every 1.65 ms cycle, for 330 ms: the pool is
      // short most of the time (when each refill timer fires, too), but never for
      // REFILL_DELAY_MS without a break.
      for (let cycle = 0; cycle < 200; cycle++) {
        const engine = warm.take(1)!;
        refill.request();
        await vi.advanceTimersByTimeAsync(1.45);
        expect(warm.offer(engine)).toBe(true);
        await vi.advanceTimersByTimeAsync(0.2);
      }
      expect(built()).toBe(0);
      expect(dropped).toEqual([]);
      expect(warm.length).toBe(3);
    });

    it("tops the pool up once it stays short for REFILL_DELAY_MS, one engine at a time, and then stops", async () => {
      const { warm, refill, built } = refilled(3);
      // Two sandboxes bind engines and stay alive.
      warm.take(1);
      refill.request();
      await vi.advanceTimersByTimeAsync(5);
      warm.take(2);
      refill.request();
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS - 5 - 1);
      expect(built()).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(built()).toBe(1);
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS);
      expect(built()).toBe(2);
      expect(warm.length).toBe(3);
      await vi.advanceTimersByTimeAsync(10 * REFILL_DELAY_MS);
      expect(built()).toBe(2);
      expect(vi.getTimerCount()).toBe(0);
    });

    it("counts the wait from the last time the pool was full, not from the request", async () => {
      const { warm, refill, built } = refilled(2);
      const engine = warm.take(1)!;
      refill.request();
      await vi.advanceTimersByTimeAsync(10);
      // Given back and taken again 10 ms into the wait: short since then only.
      warm.offer(engine);
      warm.take(1);
      refill.request();
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS - 1);
      expect(built()).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(built()).toBe(1);
    });

    it("the wait stays REFILL_DELAY_MS however often the pool is refilled in between", async () => {
      const { warm, refill, built } = refilled(2);
      let engine = warm.take(1)!;
      refill.request();
      // Given back and taken again at 14 and 28 ms: short for 14 ms at most each time.
      for (let i = 0; i < 2; i++) {
        await vi.advanceTimersByTimeAsync(14);
        warm.offer(engine);
        engine = warm.take(1)!;
        refill.request();
      }
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS - 1);
      expect(built()).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(built()).toBe(1);
    });

    it("builds nothing in a loop whose cycles vary in length, however the timers fall", async () => {
      const { warm, refill, built } = refilled(3);
      // 2,000 cycles of one sandbox at a time, alive 0.5-14.5 ms and gone 0.05-0.55 ms (a fixed
      // sequence): never short for REFILL_DELAY_MS without a break.
      // Park-Miller: the product stays below 2^53, so the sequence is exact and fixed.
      let seed = 12345;
      const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
      for (let cycle = 0; cycle < 2000; cycle++) {
        const engine = warm.take(1)!;
        refill.request();
        await vi.advanceTimersByTimeAsync(0.5 + 14 * next());
        warm.offer(engine);
        await vi.advanceTimersByTimeAsync(0.05 + 0.5 * next());
      }
      expect(built()).toBe(0);
      expect(dropped).toEqual([]);
    });

    it("idle work that runs late checks the wait again: a pool full in between is not refilled yet", async () => {
      const warm = pool(2);
      for (let i = 0; i < 2; i++) warm.add(i);
      let built = 0;
      const idle: (() => void)[] = [];
      const refill = new WarmPoolRefill(
        warm,
        async () => void warm.add(100 + ++built),
        (task) => void idle.push(task),
      );
      const engine = warm.take(1)!;
      refill.request();
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS);
      // The check passed and queued its idle work; the worker is busy, and meanwhile a
      // dispose gives the engine back and a new sandbox takes it again.
      expect(idle).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(5);
      warm.offer(engine);
      warm.take(1);
      await vi.advanceTimersByTimeAsync(2);
      idle.shift()!();
      await vi.advanceTimersByTimeAsync(0);
      expect(built).toBe(0);
      // Short without a break since then: built once REFILL_DELAY_MS have passed.
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS - 2);
      expect(idle).toHaveLength(1);
      idle.shift()!();
      await vi.advanceTimersByTimeAsync(0);
      expect(built).toBe(1);
    });

    // A build that fails leaves the pool short and is tried again later, whether its promise
    // rejects (no memory for a new instance) or the fill throws before making one.
    it.each([
      ["rejects", "async"],
      ["throws at once, instead of rejecting", "sync"],
    ] as const)("a failed build (%s) leaves the pool short and is tried again later", async (_how, kind) => {
      const warm = pool(1);
      let attempts = 0;
      const attempt = () => {
        attempts++;
        if (attempts === 1) throw new RangeError("out of memory");
        warm.add(attempts);
      };
      const refill = new WarmPoolRefill(warm, kind === "async" ? async () => attempt() : () => (attempt(), Promise.resolve()), (task) => task());
      refill.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(attempts).toBe(1);
      expect(warm.length).toBe(0);
      await vi.advanceTimersByTimeAsync(REFILL_DELAY_MS);
      expect(attempts).toBe(2);
      expect(warm.length).toBe(1);
    });
  });
});
