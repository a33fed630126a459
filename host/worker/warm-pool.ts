// The worker's warm pool: sandboxes whose engine instance is built (and, once idle work
// got to it, whose spare realm is ready), waiting for the next sandbox to bind one.
//
// Two sources fill it: idle-time builds up to its size (WorkerHost.refill), and the
// engines of disposed sandboxes (offer). It keeps `size` of them in steady use, and up to
// `burstExtraMax` more while more sandboxes were alive on the worker at once than that (a
// burst): in a burst of one-shot runs (runScript, 50 at a time over two workers) a worker
// binds 10-25 engines at once, and with only 3 kept, every other sandbox built a new
// engine (a wasm instance whose fresh memory pages fault in: ~11 µs per 4 KiB page on the
// VMs we measured) and dropped its engine after its run (a full GC of the worker's heap
// per 32 MiB dropped: engine-gc.ts). Keeping them took the mixed-tenancy bench's ordinary
// runs from ~390 to ~620 runs/s (docs/performance.md).
//
// The extra ones are only as many as the worker uses: every BURST_WINDOW_MS, the extras
// the window did not need are dropped (the fewest the pool held right after a take in
// it; all of them when nothing was taken). A worker whose load falls from 20 sandboxes at
// once to 5 holds 5 engines (or `size`, if more) a window later, not 20; an idle one
// holds `size` again.

/** Engines kept beyond `size`, at most, on a shared worker after a burst (WorkerInit.burstExtraMax). */
export const BURST_EXTRA_MAX = 16;
/** How often the engines beyond `size` that were not needed are dropped. */
export const BURST_WINDOW_MS = 3_000;

export class WarmPool<T> {
  private readonly items: T[] = [];
  /** Most sandboxes alive at once lately (the burst's measure): in the last window, and in this one so far. */
  private peakAlive = 0;
  private windowPeakAlive = 0;
  /** The fewest items the pool held right after a take in this window (Infinity: none taken): that many were never needed. */
  private lowWater = Number.POSITIVE_INFINITY;
  private trimTimer: ReturnType<typeof setTimeout> | null = null;
  /** When the pool last fell below `size` and has stayed there since (performance.now()); null while it holds `size`. */
  private shortSince: number | null = null;

  /**
   * `size`: how many to keep in steady use (WorkerInit.warmPool). `burstExtraMax`: how many more
   * it may keep after a burst. `drop`: frees one that is not kept. `alive`: how many
   * sandboxes are alive on the worker now.
   */
  constructor(
    private readonly size: number,
    private readonly burstExtraMax: number,
    private readonly drop: (item: T) => void,
    private readonly alive: () => number,
  ) {
    this.noteLength();
  }

  get length(): number {
    return this.items.length;
  }

  /** Whether idle-time builds should top it up (fewer than `size`). */
  get short(): boolean {
    return this.items.length < this.size;
  }

  /**
   * How long it has held fewer than `size` without a break (0 when it holds `size`). A
   * sandbox taken from it usually gives its engine back when disposed: a refill that
   * builds a new engine because the pool was short for an instant has the next dispose
   * drop an engine instead (in a create-run-dispose loop, a build and a drop every few
   * cycles, and a full GC per 32 MiB dropped: engine-gc.ts).
   */
  shortForMs(): number {
    return this.shortSince === null ? 0 : performance.now() - this.shortSince;
  }

  /** Keeps `shortSince` right after every change of length. */
  private noteLength(): void {
    if (this.items.length >= this.size) this.shortSince = null;
    else this.shortSince ??= performance.now();
  }

  /**
   * One for a new sandbox, if any. `aliveWithIt`: the sandboxes alive on the worker once
   * this one is bound (the burst's measure).
   */
  take(aliveWithIt: number): T | undefined {
    this.windowPeakAlive = Math.max(this.windowPeakAlive, aliveWithIt);
    this.peakAlive = Math.max(this.peakAlive, aliveWithIt);
    const item = this.items.shift();
    this.lowWater = Math.min(this.lowWater, this.items.length);
    this.noteLength();
    return item;
  }

  /** A newly built one (idle-time refill). */
  add(item: T): void {
    this.items.push(item);
    this.noteLength();
    // A dispose may have refilled the pool while this one was being built.
    if (this.items.length > this.size) this.trimEachWindow();
  }

  /**
   * The engine of a disposed sandbox, healthy and reusable: kept (true) while there are
   * fewer than `size`, or fewer than were alive at once lately (up to burstExtraMax
   * more); otherwise the caller drops it (false).
   */
  offer(item: T): boolean {
    const keep = Math.max(this.size, Math.min(this.peakAlive, this.size + this.burstExtraMax));
    if (this.items.length >= keep) return false;
    this.items.push(item);
    this.noteLength();
    if (this.items.length > this.size) this.trimEachWindow();
    return true;
  }

  /** Drops what lay unused beyond `size` for a whole window, once per window while there is any. */
  private trimEachWindow(): void {
    if (this.trimTimer !== null) return;
    // The window starts now: what the pool holds counts as unused until a take lowers it.
    this.lowWater = Number.POSITIVE_INFINITY;
    this.windowPeakAlive = this.alive();
    this.trimTimer = setTimeout(() => {
      this.trimTimer = null;
      const unused = Math.min(this.lowWater, this.items.length - this.size);
      if (unused > 0) for (const extra of this.items.splice(this.items.length - unused)) this.drop(extra);
      // The burst's measure looks back one window: a load that fell keeps what it uses now.
      this.peakAlive = Math.max(this.windowPeakAlive, this.alive());
      if (this.items.length > this.size) this.trimEachWindow();
    }, BURST_WINDOW_MS);
    // A pending trim keeps no process alive (the embedder's or a test's).
    this.trimTimer.unref?.();
  }
}

/** How long the pool must have been short, without a break, before new engines are built. */
export const REFILL_DELAY_MS = 15;

/**
 * Tops a warm pool up to its size with new engines, one at a time, as idle work, once it
 * has been short for REFILL_DELAY_MS without a break (WarmPool.shortForMs). In steady use,
 * disposed sandboxes give their engines back (WarmPool.offer: only a fresh realm to
 * build, not a new engine), so new engines are for a pool that stays short. Looking only
 * at the moment the timer fired found the pool short most times in a create-run-dispose
 * loop (its one sandbox was alive most of the time): it built an engine, and the next
 * dispose dropped one (21 builds and 20 drops in ~800 cycles of one worker), and the full
 * GCs those drops caused (9-24 ms each) were the loop's p99 (docs/performance.md,
 * "Sandbox lifecycle"). The threshold stays REFILL_DELAY_MS however often the check is
 * put off: a timer re-armed for what was left of it once let a pool short for 14 ms, then
 * for ever less, be refilled (a reviewer's repro). A build that fails (no memory for a new
 * instance) is tried again REFILL_DELAY_MS later while the pool stays short, without
 * backing off, as before this class: each attempt fails fast, as idle work.
 */
export class WarmPoolRefill {
  private pending = false;

  /** `fill`: builds one engine and adds it to the pool (a failure leaves the pool smaller: requests build their own). */
  constructor(
    private readonly pool: { readonly short: boolean; shortForMs(): number },
    private readonly fill: () => Promise<void>,
    private readonly whenIdle: (task: () => void) => void,
  ) {}

  /** At the worker's start: fills the pool as idle work, without waiting. */
  start(): void {
    this.arm(0, 0);
  }

  /** After a take: builds what the pool lacks once it has stayed short for REFILL_DELAY_MS. */
  request(): void {
    this.arm(REFILL_DELAY_MS, REFILL_DELAY_MS);
  }

  /** Checks after `delayMs` whether the pool has been short for `thresholdMs` without a break; builds one engine if so. */
  private arm(delayMs: number, thresholdMs: number): void {
    if (this.pending || !this.pool.short) return;
    this.pending = true;
    setTimeout(() => {
      // Full again in between (a dispose gave an engine back): short only since then.
      const wait = thresholdMs - this.pool.shortForMs();
      if (wait > 0) {
        this.pending = false;
        this.arm(wait, thresholdMs);
        return;
      }
      this.whenIdle(() => {
        // Idle work may come much later: the pool may have been full again since.
        const stillWait = thresholdMs - this.pool.shortForMs();
        if (!this.pool.short || stillWait > 0) {
          this.pending = false;
          if (this.pool.short) this.arm(stillWait, thresholdMs);
          return;
        }
        // (A fill that threw at once, instead of rejecting, would otherwise stop refills for good.)
        Promise.resolve()
          .then(this.fill)
          .catch(() => undefined)
          .finally(() => {
            this.pending = false;
            this.request();
          });
      });
    }, delayMs);
  }
}
