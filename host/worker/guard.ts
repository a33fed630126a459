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
 */
export const WATCHDOG_FIELDS = { deadline: 0, sandboxId: 1, reason: 2, cpuDeadlineNs: 3, threadId: 4, stopRequested: 5 } as const;
export const WATCHDOG_BYTES = 6 * 8;
export const WATCHDOG_REASON = { cpu: 1, timeout: 2, aborted: 3 } as const;

/** This thread's CPU clock (one per worker thread: module state is per thread). */
let threadClock: ThreadClock | null = null;
function clock(): ThreadClock {
  return (threadClock ??= currentThreadClock());
}

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
  private cpuDeadlineNs = Infinity;
  /** Wall time (performance.now()) before which the CPU deadline cannot have passed. */
  private nextCpuCheck = Infinity;
  private depth = 0;
  private entryCpuNs = 0;
  private budget: Budget | null = null;
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
    const cpuNow = clock().nowNs();
    if (cpuNow >= this.cpuDeadlineNs) {
      this.interruptedBy = "cpu";
      return true;
    }
    this.nextCpuCheck = now + (this.cpuDeadlineNs - cpuNow) / 1e6;
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
    const cpuStart = clock().nowNs();
    const remainingMs = Math.max(0, budget.cpuRemainingMs());
    this.cpuDeadlineNs = cpuStart + remainingMs * 1e6;
    this.nextCpuCheck = start + remainingMs;
    this.wallDeadline = budget.wallDeadline;
    if (remainingMs <= 0) this.interruptedBy ??= "cpu";
    else if (budget.wallDeadline <= start) this.interruptedBy ??= "timeout";
    this.entryCpuNs = cpuStart;
    this.depth = 1;
    this.budget = budget;
    this.armed = { wallEpochMs: performance.timeOrigin + budget.wallDeadline, cpuEpochMs: performance.timeOrigin + start + remainingMs };
    this.armWatchdog();
    try {
      return fn();
    } finally {
      this.depth = 0;
      this.budget = null;
      this.armed = null;
      this.watchdog.exit();
      this.wallDeadline = Infinity;
      this.cpuDeadlineNs = Infinity;
      this.nextCpuCheck = Infinity;
      // The kernel updates a running thread's schedstat only at scheduler ticks and
      // switches, so a delta can include up to a tick run before this entry began. A
      // thread cannot run longer than the time that passed: never charge more than the
      // entry's wall time (which also keeps a run's cpuTimeMs <= its wallTimeMs).
      const cpuMs = (clock().nowNs() - this.entryCpuNs) / 1e6;
      budget.chargeCpu(Math.min(cpuMs, performance.now() - start));
    }
  }

  private armWatchdog(): void {
    if (!this.armed) return;
    this.watchdog.enter(this.armed.wallEpochMs, this.armed.cpuEpochMs, this.sandboxId(), Number.isFinite(this.cpuDeadlineNs) ? this.cpuDeadlineNs : 0);
  }

  /**
   * Runs `wait`, a blocking wait inside a bridge call that is not guest execution (a
   * synchronous host function running on the embedder's thread, host modules). The
   * watchdog does not watch it (the waiter bounds it by the wall deadline itself). A
   * sleeping thread uses no CPU, so the thread's CPU clock charges nothing for it; with
   * the wall-time fallback, the CPU deadline moves by the time waited.
   */
  outsideGuest<T>(wait: () => T): T {
    if (this.depth === 0) return wait();
    this.watchdog.exit();
    const before = clock().nowNs();
    try {
      return wait();
    } finally {
      if (!clock().isCpu) {
        const waited = clock().nowNs() - before;
        this.entryCpuNs += waited;
        this.cpuDeadlineNs += waited;
        if (this.armed) this.armed.cpuEpochMs += waited / 1e6;
      }
      this.nextCpuCheck = performance.now();
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
