// The worker's warm pool: sandboxes whose engine instance is built (and, once idle work
// got to it, whose spare realm is ready), waiting for the next sandbox to bind one.
//
// Two sources fill it: idle-time builds up to its size (WorkerHost.refill), and the
// engines of disposed sandboxes (offer). It keeps `size` of them in steady use, and more
// while more sandboxes were alive on the worker at once than that (a burst): in a burst of
// one-shot runs (runScript, 50 at a time over two workers) a worker binds 10-25 engines at
// once, and with only 3 kept, every other sandbox built a new engine (a wasm instance
// whose fresh memory pages fault in: ~11 µs per 4 KiB page on the VMs we measured) and
// dropped its engine after its run (a full GC of the worker's heap per 32 MiB dropped:
// engine-gc.ts). Keeping them took the mixed-tenancy bench's ordinary runs from ~390 to
// ~620 runs/s (docs/performance.md). The extra ones are dropped once none was taken for
// BURST_IDLE_MS, so an idle worker holds `size` again. A dedicated (`isolate: true`)
// worker, of size 0, so keeps the engine of the sandbox it served for the next one it
// serves (isolated runs: ~80 to ~250 runs/s in the same bench).

/** Engines kept beyond `size`, at most, after a burst. */
export const BURST_EXTRA_MAX = 16;
/** The engines kept beyond `size` are dropped once none was taken for this long. */
export const BURST_IDLE_MS = 3_000;

export class WarmPool<T> {
  private readonly items: T[] = [];
  /** Most sandboxes alive at once since the extra engines were last dropped. */
  private peakAlive = 0;
  /** When an item was last taken (now()). */
  private lastTake = Number.NEGATIVE_INFINITY;
  private trimTimer: ReturnType<typeof setTimeout> | null = null;

  /**
   * `size`: how many to keep in steady use (warmPoolSize). `drop`: frees one that is not
   * kept. `alive`: how many sandboxes are alive on the worker now.
   */
  constructor(
    private readonly size: number,
    private readonly drop: (item: T) => void,
    private readonly alive: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Whether idle-time builds should top it up (fewer than `size`). */
  get short(): boolean {
    return this.items.length < this.size;
  }

  /**
   * One for a new sandbox, if any. `aliveWithIt`: the sandboxes alive on the worker once
   * this one is bound (the burst's measure).
   */
  take(aliveWithIt: number): T | undefined {
    this.peakAlive = Math.max(this.peakAlive, aliveWithIt);
    const item = this.items.shift();
    if (item !== undefined) this.lastTake = this.now();
    return item;
  }

  /** A newly built one (idle-time refill). */
  add(item: T): void {
    this.items.push(item);
  }

  /**
   * The engine of a disposed sandbox, healthy and reusable: kept (true) while there are
   * fewer than `size`, or fewer than were alive at once lately (up to BURST_EXTRA_MAX
   * more); otherwise the caller drops it (false).
   */
  offer(item: T): boolean {
    const keep = Math.max(this.size, Math.min(this.peakAlive, this.size + BURST_EXTRA_MAX));
    if (this.items.length >= keep) return false;
    this.items.push(item);
    if (this.items.length > this.size) this.trimLater(BURST_IDLE_MS);
    return true;
  }

  /** Drops what is beyond `size` once none was taken for BURST_IDLE_MS; the burst is then over. */
  private trimLater(delayMs: number): void {
    if (this.trimTimer !== null) return;
    this.trimTimer = setTimeout(() => {
      this.trimTimer = null;
      const idleMs = this.now() - this.lastTake;
      if (idleMs < BURST_IDLE_MS) return this.trimLater(BURST_IDLE_MS - idleMs);
      this.peakAlive = this.alive();
      for (const extra of this.items.splice(this.size)) this.drop(extra);
    }, delayMs);
    // A pending trim keeps no process alive (the embedder's or a test's).
    this.trimTimer.unref?.();
  }
}
