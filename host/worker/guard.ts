// Time budgets for guest execution.
//
// Every entry into guest code (module evaluation, a job pump, a timer callback, a hook
// call) goes through ExecutionGuard.enter, which arms a deadline: the sooner of the
// activation's remaining CPU budget and its wall deadline. QuickJS calls our interrupt
// handler every few thousand instructions; past the deadline it answers "interrupt" and
// the engine throws an uncatchable InternalError. Native builtins that ignore the
// interrupt (a huge indexOf) are stopped by the embedder's watchdog, which reads the
// same deadline from shared memory and terminates the worker (host/pool.ts).
import { performance } from "node:perf_hooks";
import { currentThreadClock, currentThreadId, type ThreadClock } from "../thread-cpu.js";

export type StopReason = "cpu" | "timeout" | "limit" | "aborted";

/**
 * The shared watchdog buffer, Float64 fields (the worker writes all but STOP_REQUESTED):
 *   [0] DEADLINE      epoch ms past which the guest should have been interrupted (0 = not
 *                     in guest code): the sooner of the wall deadline and "now + CPU time
 *                     left" (conservative: CPU time never runs faster than wall time)
 *   [1] SANDBOX_ID    the sandbox in guest code
 *   [2] REASON        WATCHDOG_REASON of DEADLINE
 *   [3] CPU_DEADLINE  the worker thread's CPU clock (ns, host/thread-cpu.ts) at which the
 *                     CPU limit is reached; 0 = no CPU deadline. With THREAD_ID the embedder
 *                     reads the same clock (threadClock(id)), so a starved thread is never
 *                     taken for a spinning one.
 *   [4] THREAD_ID     the worker thread's kernel id (-1: no per-thread CPU clock; CPU_DEADLINE
 *                     is then wall-clock ns from process.hrtime)
 *   [5] STOP_REQUESTED written by the embedder: a sandbox id whose current activation must
 *                     stop (abort signal); the interrupt handler honours it at its next check
 *                     (reason "aborted") and the worker clears it back to 0.
 *   [6] ENTRY         counts guest entries' starts and ends: odd while an entry runs (also
 *                     while it waits for a synchronous host call, when DEADLINE is 0), even
 *                     between entries. The embedder tells one entry from the next by it, not
 *                     by CPU_DEADLINE, which also moves within an entry (outsideGuest), nor
 *                     by DEADLINE, which is the same for all entries of an activation.
 *   [7] ENTRY_CPU_NS  the thread's CPU clock when the running entry began (written just
 *                     before ENTRY turns odd; 0 for a wall-only budget: unknown, never
 *                     the previous entry's, which made a preempted realm preparation
 *                     look like a hold, found by review): the
 *                     embedder measures how long an entry has held the worker from its
 *                     start, not from when the watchdog first saw it, up to a tick later.
 */
export const WATCHDOG_FIELDS = { deadline: 0, sandboxId: 1, reason: 2, cpuDeadlineNs: 3, threadId: 4, stopRequested: 5, entry: 6, entryCpuNs: 7 } as const;
export const WATCHDOG_BYTES = 8 * 8;
export const WATCHDOG_REASON = { cpu: 1, timeout: 2, aborted: 3 } as const;

/** This thread's CPU clock (one per worker thread: module state is per thread). */
let threadClock: ThreadClock | null = null;
function clock(): ThreadClock {
  return (threadClock ??= currentThreadClock());
}

/**
 * A recent reading of this thread's CPU clock and the wall time (performance.now()) it was
 * taken at. Reading the clock costs 2-8 µs (a pread of /proc), as much as a whole host call
 * besides it, and a run making host calls enters guest code a few times per call. So an
 * entry does not read the clock when a reading at most ANCHOR_MAX_AGE_MS old exists: the
 * thread's CPU time at the entry is then somewhere between that reading and the reading
 * plus the wall time since, and the guard takes the side that never lets a guest run past
 * its budget (see ExecutionGuard.enter).
 */
const ANCHOR_MAX_AGE_MS = 1;
let anchorCpuNs = 0;
/** The thread's run_delay at that reading: time it had waited, runnable, for a CPU. */
let anchorRunDelayNs = 0;
let anchorWallMs = -Infinity;

function readClock(now: number): number {
  anchorCpuNs = clock().nowNs();
  anchorRunDelayNs = clock().lastRunDelayNs();
  anchorWallMs = now;
  return anchorCpuNs;
}

/**
 * An entry that returns within this much wall time without the interrupt handler having
 * read the clock is charged its wall time (minus waits outside guest code): an upper bound
 * of its CPU time, short enough that the difference is noise, and no clock read at all.
 */
const SHORT_ENTRY_MS = 0.5;

/** The worker's side of the watchdog (the embedder's side is in host/pool.ts). */
export class WatchdogSlot {
  private readonly view: Float64Array;
  constructor(buffer: SharedArrayBuffer) {
    this.view = new Float64Array(buffer);
    if (this.view.length > WATCHDOG_FIELDS.threadId) this.view[WATCHDOG_FIELDS.threadId] = clock().isCpu ? (currentThreadId() ?? -1) : -1;
  }
  /**
   * Arms the watchdog. With a per-thread CPU clock, DEADLINE is the wall deadline alone and
   * the CPU limit is CPU_DEADLINE on the thread's clock; without one (wall-time fallback),
   * DEADLINE is the sooner of both, as wall time.
   */
  enter(wallDeadlineEpochMs: number, cpuDeadlineEpochMs: number, sandboxId: number, cpuDeadlineNs: number): void {
    const perThread = this.view.length > WATCHDOG_FIELDS.threadId && this.view[WATCHDOG_FIELDS.threadId]! >= 0;
    const cpuFirst = !perThread && cpuDeadlineEpochMs <= wallDeadlineEpochMs;
    this.view[1] = sandboxId;
    this.view[2] = WATCHDOG_REASON[cpuFirst ? "cpu" : "timeout"];
    if (this.view.length > WATCHDOG_FIELDS.cpuDeadlineNs) this.view[WATCHDOG_FIELDS.cpuDeadlineNs] = perThread ? cpuDeadlineNs : 0;
    this.view[0] = cpuFirst ? cpuDeadlineEpochMs : wallDeadlineEpochMs;
  }
  exit(): void {
    this.view[0] = 0;
  }
  /** Marks the start (ENTRY becomes odd) and the end (even) of a guest entry; `cpuStartNs`: the thread's CPU clock at a start (0: none). */
  markEntry(cpuStartNs = 0): void {
    if (this.view.length > WATCHDOG_FIELDS.entryCpuNs) this.view[WATCHDOG_FIELDS.entryCpuNs] = cpuStartNs;
    if (this.view.length > WATCHDOG_FIELDS.entry) this.view[WATCHDOG_FIELDS.entry]!++;
  }
  /** Whether the embedder asked to stop this sandbox's activation (clears the request). */
  takeStopRequest(sandboxId: number): boolean {
    if (this.view.length <= WATCHDOG_FIELDS.stopRequested || this.view[WATCHDOG_FIELDS.stopRequested] !== sandboxId || sandboxId === 0) return false;
    this.view[WATCHDOG_FIELDS.stopRequested] = 0;
    return true;
  }
}

export interface Budget {
  /** CPU time left for the current activation, in ms. */
  cpuRemainingMs(): number;
  /** Wall deadline of the current activation (performance.now() clock). */
  readonly wallDeadline: number;
  chargeCpu(ms: number): void;
  /** Whether the embedder asked for the activation to end (its activation slot in shared memory: seen even in a busy loop). */
  stopRequested?(): boolean;
  /**
   * Bounded by wall time alone: no CPU deadline, no CPU clock read (2-8 µs each, twice per
   * entry otherwise), charged its wall time. For our own code run before any script in a
   * realm (its preparation, preloading modules into a spare), which no script can make
   * slow: its caller makes wallDeadline the sandbox's wall limit (at least 1 s for preloading:
   * Realm.ownBudget).
   */
  readonly wallOnly?: boolean;
}

/**
 * CPU time is the worker thread's own (host/thread-cpu.ts), not wall time in guest code: on
 * a busy machine a starved thread is not a spinning one. Reading that clock costs ~2 µs,
 * and QuickJS calls the interrupt handler every few thousand instructions, so the handler
 * first compares wall time (performance.now(), ~50 ns) with the earliest moment the CPU
 * deadline could have passed (CPU time never advances faster than wall time) and reads the
 * CPU clock only past it; then it computes the next such moment from the CPU time left.
 */
export class ExecutionGuard {
  private wallDeadline = Infinity;
  /** The CPU deadline on the thread's run-time clock, for the embedder's watchdog (host/pool.ts). */
  private cpuDeadlineNs = Infinity;
  /** Wall time (performance.now()) before which the CPU deadline cannot have passed. */
  private nextCpuCheck = Infinity;
  private depth = 0;
  /** The clock reading the entry started from (see readClock): its run_delay and wall time. */
  private entryRunDelayNs = 0;
  private entryAnchorWallMs = 0;
  /** The activation's CPU time left when the entry began. */
  private entryBudgetMs = 0;
  private entryWallMs = 0;
  /** Whether the clock was read since the entry began (then its end reads it too). */
  private readInEntry = false;
  /** Wall time spent waiting outside guest code during the entry (outsideGuest). */
  private waitedMs = 0;
  private budget: Budget | null = null;
  /** The current entry's budget is wall-only (see Budget.wallOnly). */
  private wallOnly = false;
  /** The watchdog's view of the current entry, re-armed after a wait outside guest code. */
  private armed: { wallEpochMs: number; cpuEpochMs: number } | null = null;
  /** Why the engine was last interrupted, until reset. */
  interruptedBy: StopReason | null = null;
  /** CPU clock reads by the interrupt handler (for docs/limits.md's cost figures and tests). */
  cpuClockReads = 0;

  constructor(private readonly watchdog: WatchdogSlot, private readonly sandboxId: () => number) {}

  /** The interrupt handler installed on the realm's runtime. */
  readonly shouldInterrupt = (): boolean => {
    if (this.interruptedBy !== null) return true;
    if (this.budget?.stopRequested?.() || this.watchdog.takeStopRequest(this.sandboxId())) {
      this.interruptedBy = "aborted";
      return true;
    }
    const now = performance.now();
    if (now > this.wallDeadline) {
      this.interruptedBy = "timeout";
      return true;
    }
    if (now < this.nextCpuCheck) return false;
    this.cpuClockReads++;
    readClock(now);
    this.readInEntry = true;
    const leftMs = this.entryBudgetMs - this.ranInEntryMs(now);
    if (leftMs <= 0) {
      this.interruptedBy = "cpu";
      return true;
    }
    this.nextCpuCheck = now + leftMs;
    return false;
  };

  /** Runs `fn` (which enters guest code) under the budget; nested entries share the outer one. */
  enter<T>(budget: Budget, fn: () => T): T {
    if (this.depth > 0) {
      this.depth++;
      try {
        return fn();
      } finally {
        this.depth--;
      }
    }
    const start = performance.now();
    if (budget.wallOnly) return this.enterWallOnly(budget, start, fn);
    // The CPU clock at the start is taken as the last reading (at most ANCHOR_MAX_AGE_MS
    // old): never later than the truth, so the CPU deadline is never later either (at
    // worst the guest loses the host work of that last millisecond from its budget).
    // CPU time never runs faster than wall time, so that deadline cannot have passed
    // before the reading's wall time plus the budget: the handler reads the clock only then.
    const fresh = start - anchorWallMs <= ANCHOR_MAX_AGE_MS;
    const cpuStart = fresh ? anchorCpuNs : readClock(start);
    const remainingMs = Math.max(0, budget.cpuRemainingMs());
    this.cpuDeadlineNs = cpuStart + remainingMs * 1e6;
    this.nextCpuCheck = anchorWallMs + remainingMs;
    this.wallDeadline = budget.wallDeadline;
    if (remainingMs <= 0) this.interruptedBy ??= "cpu";
    else if (budget.wallDeadline <= start) this.interruptedBy ??= "timeout";
    this.entryRunDelayNs = anchorRunDelayNs;
    this.entryAnchorWallMs = anchorWallMs;
    this.entryBudgetMs = remainingMs;
    return this.runEntry(budget, start, performance.timeOrigin + start + remainingMs, fn, () => this.entryCharge());
  }

  /** enter() for a wall-only budget: the same deadline, watchdog and bookkeeping, without the CPU clock. */
  private enterWallOnly<T>(budget: Budget, start: number, fn: () => T): T {
    this.cpuDeadlineNs = Infinity;
    this.nextCpuCheck = Infinity;
    this.wallDeadline = budget.wallDeadline;
    if (budget.wallDeadline <= start) this.interruptedBy ??= "timeout";
    this.wallOnly = true;
    return this.runEntry(budget, start, Infinity, fn, () => Math.max(0, performance.now() - start - this.waitedMs));
  }

  /** The bookkeeping both kinds of entry share: arm the watchdog, run `fn`, disarm, charge the budget. */
  private runEntry<T>(budget: Budget, start: number, cpuEpochMs: number, fn: () => T, charge: () => number): T {
    this.entryWallMs = start;
    this.readInEntry = false;
    this.waitedMs = 0;
    this.depth = 1;
    this.budget = budget;
    this.armed = { wallEpochMs: performance.timeOrigin + budget.wallDeadline, cpuEpochMs };
    // The CPU clock at the start, as enter() took it (never later than the truth).
    this.watchdog.markEntry(Number.isFinite(this.cpuDeadlineNs) ? this.cpuDeadlineNs - this.entryBudgetMs * 1e6 : 0);
    this.armWatchdog();
    try {
      return fn();
    } finally {
      this.depth = 0;
      this.budget = null;
      this.wallOnly = false;
      this.armed = null;
      this.watchdog.exit();
      this.watchdog.markEntry();
      this.wallDeadline = Infinity;
      this.cpuDeadlineNs = Infinity;
      this.nextCpuCheck = Infinity;
      budget.chargeCpu(charge());
    }
  }

  /**
   * CPU time of the entry that just ended. An entry that was short and during which the
   * clock was not read is charged its wall time (an upper bound, no read). Otherwise the
   * entry is charged its wall time minus what it spent not running: the sleeps in
   * outsideGuest, and the time it waited, runnable, for a CPU (run_delay's advance since
   * the start reading). Not the run-time field's advance: for a running thread the kernel
   * folds the time run into it only at ticks and switches, so a chain of sub-tick entries
   * (timer callbacks of 0.6 ms each) read deltas of 0 most of the time and a guest could
   * spend 6x its cpuTimeMs. run_delay is exact when read by the running thread itself.
   * Conservative both ways it can be off: a start reading up to ANCHOR_MAX_AGE_MS early
   * may include waits before the entry (so at most the gap is discounted), and the wait
   * for a CPU after a sleep counts in both the sleep and run_delay (so the larger of the
   * two is discounted, not their sum). The charge never exceeds the entry's wall time, so
   * a run's cpuTimeMs <= its wallTimeMs.
   */
  private entryCharge(): number {
    const end = performance.now();
    const guestWallMs = Math.max(0, end - this.entryWallMs - this.waitedMs);
    if (!this.readInEntry && guestWallMs <= SHORT_ENTRY_MS) return guestWallMs;
    readClock(end);
    return this.ranInEntryMs(end);
  }

  /**
   * CPU time the current entry has run until `now`, from a clock reading taken at `now`
   * (see entryCharge). The interrupt handler uses the same figure against the entry's
   * budget, so the charge and the stop agree; the run-time field would stop a loop up to
   * a tick late (its lag) and, under contention, later still.
   */
  private ranInEntryMs(now: number): number {
    const spentMs = Math.max(0, now - this.entryWallMs);
    const readingGapMs = this.entryWallMs - this.entryAnchorWallMs;
    const waitedForCpuMs = Math.max(0, (anchorRunDelayNs - this.entryRunDelayNs) / 1e6 - readingGapMs);
    return Math.max(0, spentMs - Math.max(this.waitedMs, waitedForCpuMs));
  }

  private armWatchdog(): void {
    if (!this.armed) return;
    this.watchdog.enter(this.armed.wallEpochMs, this.armed.cpuEpochMs, this.sandboxId(), Number.isFinite(this.cpuDeadlineNs) ? this.cpuDeadlineNs : 0);
  }

  /**
   * Runs `wait`, a blocking wait inside a bridge call that is not guest execution (a
   * synchronous host function running on the embedder's thread, host modules). The
   * watchdog does not watch it (the waiter bounds it by the wall deadline itself), and the
   * guest is not charged for it (entryCharge discounts waitedMs).
   *
   * The thread is not asleep for all of the wait: it may watch for the answer a moment
   * before sleeping (host/adaptive-poll.ts) and it reads the answer after waking. That
   * CPU time shows on the thread's clock, which the embedder's watchdog compares with
   * CPU_DEADLINE; left as it was, the watchdog would see a guest making many quick host
   * calls pass its deadline well before the guard does, and hard-stop a run the guard
   * would have stopped cleanly (or not at all). So CPU_DEADLINE moves by the wait's
   * awake time, its wall time minus `sleptMs()` (the waiter's own measure of its sleeps):
   * an upper bound of the CPU it used, without a clock read. Sleeps do not move it, so a
   * guest cannot widen the watchdog's margin by calling a slow host function.
   */
  outsideGuest<T>(wait: () => T, sleptMs: () => number): T {
    if (this.depth === 0) return wait();
    this.watchdog.exit();
    const before = performance.now();
    try {
      return wait();
    } finally {
      const waitedMs = performance.now() - before;
      this.waitedMs += waitedMs;
      if (clock().isCpu) {
        // The wall time before which the CPU deadline cannot pass only got more
        // conservative; the watchdog's deadline moves by the CPU the wait may have used.
        this.cpuDeadlineNs += Math.max(0, waitedMs - sleptMs()) * 1e6;
      } else if (!this.wallOnly) {
        // The wall-time fallback: the CPU deadline moves by the whole wait.
        this.cpuDeadlineNs += waitedMs * 1e6;
        this.nextCpuCheck += waitedMs;
        if (this.armed) this.armed.cpuEpochMs += waitedMs;
      }
      this.armWatchdog();
    }
  }

  /** Makes the engine stop at its next interrupt check (a limit was hit inside a bridge call). */
  stopNow(reason: StopReason): void {
    this.interruptedBy ??= reason;
  }

  get inGuest(): boolean {
    return this.depth > 0;
  }

  reset(): void {
    this.interruptedBy = null;
  }
}
