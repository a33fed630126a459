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

/** "aborted": the embedder asked for the activation to end (its signal, dispose(), a queue timeout). */
export type StopReason = "cpu" | "timeout" | "limit" | "aborted";

/** Size of the shared watchdog buffer: [deadline epoch ms (0 = not in guest code), sandboxId, reason]. */
export const WATCHDOG_BYTES = 3 * 8;
export const WATCHDOG_REASON = { cpu: 1, timeout: 2 } as const;

/** The worker's side of the watchdog (the embedder's side is in host/pool.ts). */
export class WatchdogSlot {
  private readonly view: Float64Array;
  constructor(buffer: SharedArrayBuffer) {
    this.view = new Float64Array(buffer);
  }
  enter(deadlineEpochMs: number, sandboxId: number, reason: "cpu" | "timeout"): void {
    this.view[1] = sandboxId;
    this.view[2] = WATCHDOG_REASON[reason];
    this.view[0] = deadlineEpochMs;
  }
  exit(): void {
    this.view[0] = 0;
  }
}

export interface Budget {
  /** CPU time left for the current activation, in ms. */
  cpuRemainingMs(): number;
  /** Wall deadline of the current activation (performance.now() clock). */
  readonly wallDeadline: number;
  chargeCpu(ms: number): void;
  /** Whether the embedder asked for the activation to end (shared memory: seen even in a busy loop). */
  stopRequested?(): boolean;
}

export class ExecutionGuard {
  private deadline = Infinity;
  private cpuDeadline = Infinity;
  private wallDeadline = Infinity;
  private deadlineReason: StopReason = "cpu";
  private depth = 0;
  private entryStart = 0;
  private budget: Budget | null = null;
  /** Why the engine was last interrupted, until reset. */
  interruptedBy: StopReason | null = null;

  constructor(private readonly watchdog: WatchdogSlot, private readonly sandboxId: () => number) {}

  /** The interrupt handler installed on the realm's runtime. */
  readonly shouldInterrupt = (): boolean => {
    if (this.interruptedBy !== null) return true;
    if (this.budget?.stopRequested?.()) {
      this.interruptedBy = "aborted";
      return true;
    }
    if (performance.now() <= this.deadline) return false;
    this.interruptedBy = this.deadlineReason;
    return true;
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
    const cpuDeadline = start + Math.max(0, budget.cpuRemainingMs());
    this.cpuDeadline = cpuDeadline;
    this.wallDeadline = budget.wallDeadline;
    this.deadline = Math.min(cpuDeadline, budget.wallDeadline);
    const reason = cpuDeadline <= budget.wallDeadline ? "cpu" : "timeout";
    this.deadlineReason = reason;
    if (this.deadline <= start) this.interruptedBy ??= reason;
    this.entryStart = start;
    this.budget = budget;
    this.depth = 1;
    this.watchdog.enter(performance.timeOrigin + this.deadline, this.sandboxId(), reason);
    try {
      return fn();
    } finally {
      this.depth = 0;
      this.watchdog.exit();
      this.deadline = Infinity;
      this.budget = null;
      budget.chargeCpu(performance.now() - this.entryStart);
    }
  }

  /**
   * Runs `wait`, a blocking wait inside a bridge call that is not guest execution (a
   * synchronous host function running on the embedder's thread): it is not charged as
   * CPU time (the CPU deadline moves by the time waited, the wall deadline stays), and the
   * watchdog does not watch it (the waiter bounds it by the wall deadline itself).
   */
  outsideGuest<T>(wait: () => T): T {
    if (this.depth === 0) return wait();
    this.watchdog.exit();
    const start = performance.now();
    try {
      return wait();
    } finally {
      const waited = performance.now() - start;
      this.entryStart += waited;
      this.cpuDeadline += waited;
      this.deadline = Math.min(this.cpuDeadline, this.wallDeadline);
      const reason = this.cpuDeadline <= this.wallDeadline ? "cpu" : "timeout";
      this.deadlineReason = reason;
      this.watchdog.enter(performance.timeOrigin + this.deadline, this.sandboxId(), reason);
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
