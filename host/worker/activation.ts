// One activation = one run, one plugin load, or one plugin call: its budgets, its console
// output, the timers and fetches it started, and how it ended.
import { performance } from "node:perf_hooks";
import type { Limits } from "../limits.js";
import { formatBytes } from "../limits.js";
import type { ErrorKind, LogEntry, LogLevel, SandboxError } from "../types.js";
import type { Budget } from "./guard.js";
import { NO_CONTROL, type ActivationControl } from "../activation-slots.js";

/** Why an activation the embedder stopped (signal, dispose(), queue timeout) ended. */
export const ABORTED_MESSAGE = "the embedder ended the activation";

/** What one console entry costs against maxLogBytes at least (see Activation.log). */
export const LOG_ENTRY_MIN_COST = 64;

export type ActivationKind = "run" | "load" | "call";

export interface PendingFetch {
  abort(): void;
}

export class Activation implements Budget {
  readonly startedAt = performance.now();
  readonly wallDeadline: number;
  cpuUsedMs = 0;
  readonly logs: LogEntry[] = [];
  private logBytes = 0;
  private logsTruncated = false;
  /** Node timers by guest timer id; `ref` timers keep the activation alive. */
  readonly timers = new Map<number, { timer: NodeJS.Timeout; ref: boolean }>();
  refTimers = 0;
  readonly fetches = new Map<number, PendingFetch>();
  /** Fetches this activation started: its own maxFetches budget (the transport counts in it). */
  readonly fetchCounter = { fetches: 0 };
  /** Async host calls in flight (host modules), by call id; and all host calls made. */
  readonly hostCalls = new Map<number, PendingFetch>();
  hostCallCount = 0;
  /** Argument bytes of the async host calls in flight (see hostCall in bridge/host-modules.ts). */
  hostCallBytesInFlight = 0;
  failure: SandboxError | null = null;
  finished = false;

  constructor(
    readonly kind: ActivationKind,
    readonly limits: Limits,
    private readonly emitLog: ((entry: LogEntry) => void) | null,
    /** The embedder's view of this activation: stop requests in, "had effects" out. */
    readonly control: ActivationControl = NO_CONTROL,
  ) {
    this.wallDeadline = this.startedAt + limits.wallTimeMs;
  }

  cpuRemainingMs(): number {
    return this.limits.cpuTimeMs - this.cpuUsedMs;
  }

  chargeCpu(ms: number): void {
    this.cpuUsedMs += ms;
  }

  stopRequested(): boolean {
    return this.control.stopRequested();
  }

  /**
   * Call before anything the world outside the sandbox can see (a fetch leaves, a host
   * function runs): an activation that had none can be re-run transparently if its worker
   * is lost through no fault of its own (see Sandbox in host/sandbox.ts).
   */
  noteEffect(): void {
    // Told to end (aborted, disposed, or withdrawn to re-run elsewhere): the effect must
    // not happen. The run ends at the interrupt handler's next look, or at once if it waits.
    if (!this.control.noteEffect()) {
      this.fail("aborted", "AbortError", ABORTED_MESSAGE);
      throw new Error(ABORTED_MESSAGE);
    }
  }

  /** Records the first failure; later ones (consequences of the first) are ignored. */
  fail(kind: ErrorKind, name: string, message: string, stack = "", origin?: "unhandled-rejection"): void {
    this.failure ??= { kind, name, message, stack, ...(origin ? { origin } : {}) };
  }

  failLimit(kind: "cpu" | "timeout" | "memory" | "limit", message: string, stack = ""): void {
    this.fail(kind, "LimitError", message, stack);
  }

  cpuLimitMessage(): string {
    return `cpuTimeMs limit (${this.limits.cpuTimeMs} ms) exceeded`;
  }

  wallLimitMessage(): string {
    return `wallTimeMs limit (${this.limits.wallTimeMs} ms) exceeded`;
  }

  memoryLimitMessage(): string {
    return `memoryBytes limit (${formatBytes(this.limits.memoryBytes)}) exceeded`;
  }

  /**
   * Adds console output, keeping at most maxLogBytes and marking the cut once. An entry
   * costs its UTF-8 bytes but at least LOG_ENTRY_MIN_COST: an entry object (level, time,
   * message) costs the embedder memory even when its message is empty, so a loop of
   * `console.log()` is bounded in count as well as in bytes (maxLogBytes / 64 entries).
   */
  log(level: LogLevel, message: string): void {
    if (this.logsTruncated) return;
    const max = this.limits.maxLogBytes;
    const bytes = Buffer.byteLength(message, "utf8");
    const cost = Math.max(bytes, LOG_ENTRY_MIN_COST);
    if (this.logBytes + cost <= max) {
      this.logBytes += cost;
      this.push({ level, message, time: Date.now() });
      return;
    }
    const room = max - this.logBytes;
    if (room > 0) {
      // Cut on a UTF-8 boundary: decoding a cut byte string drops the partial character.
      const cut = bytes <= room ? message : Buffer.from(message, "utf8").subarray(0, room).toString("utf8").replace(/\uFFFD$/, "");
      this.push({ level, message: cut, time: Date.now() });
    }
    this.logBytes = max;
    this.logsTruncated = true;
    this.push({ level: "warn", message: `[scriptbox] console output truncated: maxLogBytes limit (${formatBytes(max)}) reached`, time: Date.now() });
  }

  private push(entry: LogEntry): void {
    this.logs.push(entry);
    this.emitLog?.(entry);
  }

  get hasPendingWork(): boolean {
    return this.refTimers > 0 || this.fetches.size > 0 || this.hostCalls.size > 0;
  }

  /** Cancels everything still pending (timers, fetches); called once when the activation ends. */
  cancelPending(): void {
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.refTimers = 0;
    for (const pending of this.fetches.values()) pending.abort();
    this.fetches.clear();
    for (const pending of this.hostCalls.values()) pending.abort();
    this.hostCalls.clear();
  }

  get wallTimeMs(): number {
    return performance.now() - this.startedAt;
  }
}
