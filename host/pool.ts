// The embedder's side of the worker threads: a small shared pool (one worker per core, at
// most four) in which sandboxes live, plus dedicated workers for `isolate: true` sandboxes.
//
// Why workers: deep recursion or nested parsing inside QuickJS overflows the embedder's
// native stack and poisons the runtime on the main thread, and terminating a worker is the
// only hard stop for native builtins that ignore QuickJS's interrupt (DESIGN.md). The
// watchdog below reads each worker's current guest deadline from shared memory and
// terminates a worker stuck past it.
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { compiledEngineModule } from "./engine/wasm-binary.js";
import type { WorkerInit, WorkerMessage, WorkerRequest } from "./protocol.js";
import type { LogEntry } from "./types.js";
import { WATCHDOG_BYTES, WATCHDOG_FIELDS, WATCHDOG_REASON } from "./worker/guard.js";
import { threadClock, type ThreadClock } from "./thread-cpu.js";

/**
 * How long past its deadline a guest may stay in native code before its worker is
 * terminated. The interrupt stops JavaScript within a few ms of the deadline; this grace
 * only matters for native builtins that ignore it (seconds past the deadline). It is
 * generous because on a loaded machine a worker starved of CPU for a moment looks the
 * same as a stuck one, and terminating a shared worker disposes its other sandboxes too.
 */
export const HARD_STOP_GRACE_MS = 500;
const WATCHDOG_INTERVAL_MS = 20;
const WORKER_STACK_MB = 16;
/**
 * Plugin calls briefly poll for their reply instead of sleeping until it arrives. Waking
 * an idle embedder thread costs ~100-200 µs on this kind of machine, far more than a call;
 * polling for a reply that comes within microseconds makes the round trip ~10 µs. The
 * poll is bounded and adaptive: only while recent calls answered quickly, at most this long.
 */
const CALL_SPIN_MAX_MS = 0.2;
const WARM_POOL_SIZE = 3;

export class WorkerLostError extends Error {
  constructor(
    message: string,
    /** The sandbox whose runaway guest made the watchdog terminate the worker, if any. */
    readonly stoppedSandboxId: number | null,
    readonly stopReason: "cpu" | "timeout" | null,
  ) {
    super(message);
    this.name = "WorkerLostError";
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class WorkerConnection {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly watchdog: Float64Array;
  /** The worker thread's CPU clock, opened when the watchdog first needs it. */
  private threadCpu: ThreadClock | null = null;
  /** Recent plugin-call round trips (ms, smoothed): polling only pays while they are short. */
  private recentCallMs = CALL_SPIN_MAX_MS / 2;
  private readonly callStarts = new Map<number, number>();
  private readonly pending = new Map<number, Pending>();
  private readonly logListeners = new Map<number, (entry: LogEntry) => void>();
  private readonly disposeListeners = new Map<number, (reason: string) => void>();
  private nextId = 1;
  sandboxCount = 0;
  lost: WorkerLostError | null = null;

  constructor(private readonly pool: WorkerPool, readonly dedicated: boolean) {
    const watchdog = new SharedArrayBuffer(WATCHDOG_BYTES);
    this.watchdog = new Float64Array(watchdog);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const init: WorkerInit = { port: port2, wasmModules: { release: compiledEngineModule("release") }, watchdog, warmPoolSize: dedicated ? 0 : WARM_POOL_SIZE };
    this.worker = new Worker(new URL("./worker/entry.js", import.meta.url), {
      workerData: init,
      transferList: [port2],
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
      // Not the embedder's Node flags: `node --input-type=module -e …`, for one, makes a
      // worker started from a file fail.
      execArgv: [],
    });
    this.worker.unref();
    this.port.unref();
    this.port.on("message", (message: WorkerMessage) => this.onMessage(message));
    this.worker.on("error", (error) => this.onLost(new WorkerLostError(`the sandbox worker failed: ${error.message}`, null, null)));
    this.worker.on("exit", (code) => this.onLost(new WorkerLostError(`the sandbox worker exited (code ${code})`, null, null)));
  }

  request<T>(request: WorkerRequest): Promise<T> {
    if (this.lost) return Promise.reject(this.lost);
    const id = this.nextId++;
    const promise = new Promise<T>((resolve, reject) => {
      // A pending request keeps the process alive; an idle pool does not.
      if (this.pending.size === 0) {
        this.worker.ref();
        this.port.ref();
      }
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.pool.watch();
      this.port.postMessage({ id, request });
    });
    if (request.op === "call") {
      this.callStarts.set(id, performance.now());
      if (this.recentCallMs < CALL_SPIN_MAX_MS) this.pollForReply(id);
    }
    return promise;
  }

  /** See CALL_SPIN_MAX_MS. Messages taken here go through the usual handler. */
  private pollForReply(id: number): void {
    const until = performance.now() + CALL_SPIN_MAX_MS;
    while (this.pending.has(id) && performance.now() < until) {
      const received = receiveMessageOnPort(this.port);
      if (received) this.onMessage(received.message as WorkerMessage);
    }
  }

  onLog(sandboxId: number, listener: ((entry: LogEntry) => void) | null): void {
    if (listener) this.logListeners.set(sandboxId, listener);
    else this.logListeners.delete(sandboxId);
  }

  /** Tells a sandbox proxy that the worker disposed its sandbox on its own. */
  onDisposed(sandboxId: number, listener: ((reason: string) => void) | null): void {
    if (listener) this.disposeListeners.set(sandboxId, listener);
    else this.disposeListeners.delete(sandboxId);
  }

  get busy(): boolean {
    return this.pending.size > 0;
  }

  private onMessage(message: WorkerMessage): void {
    if (message.type === "log") {
      const listener = this.logListeners.get(message.sandboxId);
      if (listener) {
        for (const entry of message.entries) {
          try {
            listener(entry);
          } catch (error) {
            // The embedder's onLog threw: report it without disturbing the run.
            process.emitWarning(`scriptbox: onLog threw: ${(error as Error).message}`);
          }
        }
      }
      return;
    }
    if (message.type === "disposed") {
      this.disposeListeners.get(message.sandboxId)?.(message.reason);
      return;
    }
    if (message.type !== "reply") return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    const callStarted = this.callStarts.get(message.id);
    if (callStarted !== undefined) {
      this.callStarts.delete(message.id);
      this.recentCallMs = 0.8 * this.recentCallMs + 0.2 * (performance.now() - callStarted);
    }
    if (this.pending.size === 0) {
      this.worker.unref();
      this.port.unref();
    }
    if (message.ok) pending.resolve(message.value);
    else pending.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
  }

  /** Called by the pool's watchdog; terminates the worker if its guest is stuck past the deadline. */
  checkDeadline(nowEpochMs: number): void {
    const deadline = this.watchdog[WATCHDOG_FIELDS.deadline]!;
    if (deadline === 0 || this.lost) return;
    let reason: "cpu" | "timeout" = this.watchdog[WATCHDOG_FIELDS.reason] === WATCHDOG_REASON.timeout ? "timeout" : "cpu";
    if (nowEpochMs <= deadline + HARD_STOP_GRACE_MS) {
      // The CPU limit, on the worker thread's own CPU clock (see WatchdogSlot in host/worker/guard.ts):
      // a thread starved by a busy machine is not a spinning one.
      const cpuDeadlineNs = this.watchdog[WATCHDOG_FIELDS.cpuDeadlineNs]!;
      const threadId = this.watchdog[WATCHDOG_FIELDS.threadId]!;
      if (cpuDeadlineNs === 0 || threadId < 0) return;
      this.threadCpu ??= threadClock(threadId);
      if (this.threadCpu.nowNs() <= cpuDeadlineNs + HARD_STOP_GRACE_MS * 1e6) return;
      reason = "cpu";
    }
    const sandboxId = this.watchdog[WATCHDOG_FIELDS.sandboxId]!;
    this.onLost(new WorkerLostError(`the worker was terminated to stop sandbox ${sandboxId}, stuck past its deadline`, sandboxId, reason));
    void this.worker.terminate();
  }

  private onLost(error: WorkerLostError): void {
    if (this.lost) return;
    this.lost = error;
    this.threadCpu?.close();
    this.pool.forget(this);
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.callStarts.clear();
    this.worker.unref();
    this.port.close();
  }

  terminate(): void {
    this.onLost(new WorkerLostError("the worker was shut down", null, null));
    void this.worker.terminate();
  }
}

export class WorkerPool {
  private readonly shared: WorkerConnection[] = [];
  private readonly all = new Set<WorkerConnection>();
  private nextShared = 0;
  private watchdogTimer: NodeJS.Timeout | null = null;

  constructor(private readonly size = Math.max(1, Math.min(4, availableParallelism()))) {}

  /** A worker for a new sandbox: the least loaded shared one, or a dedicated one. */
  acquire(dedicated: boolean): WorkerConnection {
    let connection: WorkerConnection;
    if (dedicated) {
      connection = new WorkerConnection(this, true);
    } else if (this.shared.length < this.size) {
      connection = new WorkerConnection(this, false);
      this.shared.push(connection);
    } else {
      // Least loaded; ties go round-robin, so sandboxes created one after another land on
      // different workers while each refills its warm pool.
      const start = this.nextShared++ % this.shared.length;
      connection = this.shared[start]!;
      for (let i = 1; i < this.shared.length; i++) {
        const candidate = this.shared[(start + i) % this.shared.length]!;
        if (candidate.sandboxCount < connection.sandboxCount) connection = candidate;
      }
    }
    this.all.add(connection);
    connection.sandboxCount++;
    return connection;
  }

  release(connection: WorkerConnection): void {
    connection.sandboxCount--;
    if (connection.dedicated && connection.sandboxCount === 0) connection.terminate();
  }

  /** Starts the shared workers now instead of at the first createSandbox. */
  warmUp(): void {
    while (this.shared.length < this.size) {
      const connection = new WorkerConnection(this, false);
      this.shared.push(connection);
      this.all.add(connection);
    }
  }

  forget(connection: WorkerConnection): void {
    this.all.delete(connection);
    const index = this.shared.indexOf(connection);
    if (index !== -1) this.shared.splice(index, 1);
  }

  /** Runs the watchdog while any worker has a request in flight. */
  watch(): void {
    if (this.watchdogTimer) return;
    this.watchdogTimer = setInterval(() => {
      const now = performance.timeOrigin + performance.now();
      let busy = false;
      for (const connection of this.all) {
        if (!connection.busy) continue;
        busy = true;
        connection.checkDeadline(now);
      }
      if (!busy && this.watchdogTimer) {
        clearInterval(this.watchdogTimer);
        this.watchdogTimer = null;
      }
    }, WATCHDOG_INTERVAL_MS);
    this.watchdogTimer.unref();
  }

  /** Terminates every worker (tests, graceful shutdown). Sandboxes in them become unusable. */
  async shutdown(): Promise<void> {
    for (const connection of [...this.all]) connection.terminate();
    this.all.clear();
    this.shared.length = 0;
  }
}

let defaultPool: WorkerPool | null = null;
export function sharedPool(): WorkerPool {
  defaultPool ??= new WorkerPool();
  return defaultPool;
}
