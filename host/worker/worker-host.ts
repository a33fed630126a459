// Everything a worker thread holds: its sandboxes, a warm pool of ready ones (engine
// instance + spare realm, built off the request path), and the message handling.
//
// Why a warm pool: instantiating the wasm (~1.5 ms) and building a realm (~1 ms) is most
// of what "create a sandbox and run 1 + 1" would cost; done ahead of time, creating a
// sandbox is taking one from the pool.
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { inspect } from "node:util";
import { createEngineInstance } from "../engine/instance.js";
import { findTrackerFieldOffset, RejectionTracking, verifyRejectionTracking } from "../engine/rejection-tracker.js";
import type { EngineVariantName } from "../engine/wasm-binary.js";
import { DEFAULT_LIMITS } from "../limits.js";
import { CALL_POLL_MS, type ActivationRequest, type WorkerInit, type WorkerMessage, type WorkerRequest } from "../protocol.js";
import type { LogEntry } from "../types.js";
import { GuestBundle } from "./guest-bundle.js";
import { WatchdogSlot } from "./guard.js";
import { WorkerSandbox } from "./sandbox.js";
import { noteDroppedEngine } from "./engine-gc.js";
import { ModuleUsage } from "./module-usage.js";
import { ActivationSlots, type ActivationControl } from "../activation-slots.js";
import { currentThreadId } from "../thread-cpu.js";
import { AdaptivePoll } from "../adaptive-poll.js";

/** How long the pool waits before building new engines (recycled ones may refill it first). */
const REFILL_DELAY_MS = 15;
/** An engine grown past this is not recycled: its memory never shrinks. */
const RECYCLE_MAX_MEMORY_BYTES = 24 * 1024 * 1024;
/** Streamed console entries per message at most (see queueLog). */
const LOG_BATCH_MAX = 512;

export class WorkerHost {
  private readonly bundle = GuestBundle.load();
  private readonly watchdog: WatchdogSlot;
  /** Registered when "create" arrives, so requests pipelined behind it wait for it. */
  private readonly sandboxes = new Map<number, Promise<WorkerSandbox>>();
  /** The same sandboxes once created: looked up without a promise hop on the hot path. */
  private readonly ready = new Map<number, WorkerSandbox>();
  private readonly pool: WorkerSandbox[] = [];
  private readonly trackerOffsets = new Map<EngineVariantName, number>();
  /** Why sandboxes that failed on their own (outside a request) are gone. */
  private readonly tombstones = new Map<number, string>();
  private refilling = false;
  private readonly moduleUsage = new ModuleUsage();
  private readonly slots: ActivationSlots;
  /** How to end each waiting activation, by slot, for "abort" messages. */
  private readonly aborters = new Map<number, () => void>();

  constructor(private readonly init: WorkerInit, private readonly port: MessagePort) {
    this.watchdog = new WatchdogSlot(init.watchdog);
    this.slots = new ActivationSlots(init.activationSlots);
    // First message out: the embedder's watchdog reads this thread's CPU time by its id.
    this.post({ type: "thread", threadId: currentThreadId() });
  }

  private post(message: WorkerMessage): void {
    // Streamed console entries go out before anything that follows them (a run's reply).
    if (this.pendingLogs.length > 0) this.flushLogs();
    this.port.postMessage(message);
  }

  /**
   * Streamed console entries, sent in batches: one message per turn of the worker's event
   * loop (or per LOG_BATCH_MAX entries) instead of one per console call, so a logging loop
   * never queues an unbounded number of messages to the embedder.
   */
  private pendingLogs: { sandboxId: number; entry: LogEntry }[] = [];
  private logFlushScheduled = false;

  private queueLog(sandboxId: number, entry: LogEntry): void {
    this.pendingLogs.push({ sandboxId, entry });
    if (this.pendingLogs.length >= LOG_BATCH_MAX) this.flushLogs();
    else if (!this.logFlushScheduled) {
      this.logFlushScheduled = true;
      setImmediate(() => {
        this.logFlushScheduled = false;
        this.flushLogs();
      });
    }
  }

  private flushLogs(): void {
    const pending = this.pendingLogs;
    this.pendingLogs = [];
    let start = 0;
    for (let i = 1; i <= pending.length; i++) {
      if (i < pending.length && pending[i]!.sandboxId === pending[start]!.sandboxId) continue;
      const entries = pending.slice(start, i).map((item) => item.entry);
      this.port.postMessage({ type: "log", sandboxId: pending[start]!.sandboxId, entries } satisfies WorkerMessage);
      start = i;
    }
  }

  async newSandbox(variant: EngineVariantName, memoryBytes: number): Promise<WorkerSandbox> {
    const { engine, tracking } = await this.newEngine(variant, memoryBytes);
    return new WorkerSandbox(engine, tracking, this.bundle, this.watchdog, {
      moduleUsage: this.moduleUsage,
      emitLog: (sandboxId: number, entry: LogEntry) => this.queueLog(sandboxId, entry),
      onPoisoned: (sandbox: WorkerSandbox) => {
        const sandboxId = sandbox.sandboxId;
        if (sandboxId === 0) return;
        this.sandboxes.delete(sandboxId);
        this.ready.delete(sandboxId);
        this.tombstones.set(sandboxId, sandbox.disposedReason ?? "its engine failed");
        this.post({ type: "disposed", sandboxId, reason: sandbox.disposedReason ?? "its engine failed" });
        noteDroppedEngine(sandbox.engine.memory.buffer.byteLength);
      },
      newEngine: (variant, memoryBytes) => this.newEngine(variant, memoryBytes),
    });
  }

  private async newEngine(variant: EngineVariantName, memoryBytes: number) {
    const engine = await createEngineInstance(memoryBytes, variant);
    let offset = this.trackerOffsets.get(variant);
    const firstOfVariant = offset === undefined;
    if (offset === undefined) {
      offset = findTrackerFieldOffset(engine);
      this.trackerOffsets.set(variant, offset);
    }
    const tracking = new RejectionTracking(engine, offset);
    if (firstOfVariant) verifyRejectionTracking(engine, tracking);
    return { engine, tracking };
  }

  /** Warms V8's wasm tiers (the first long evaluation is ~3x slower) and fills the pool. */
  async start(): Promise<void> {
    const sandbox = await this.newSandbox("release", DEFAULT_LIMITS.memoryBytes);
    sandbox.configure(0, {
      limits: { ...DEFAULT_LIMITS },
      allow: [],
      env: {},
      secrets: {},
      cloud: null,
      location: null,
      streamLogs: false,
      variant: "release",
    });
    await sandbox.run("let s = 0; for (let i = 0; i < 300000; i++) s += i % 7; export default () => s", "warmup.js", undefined);
    sandbox.dispose();
    this.post({ type: "ready" });
    this.refill();
  }

  /**
   * Tops the warm pool up with new sandboxes, after a short pause: in steady use, disposed
   * sandboxes come back through recycle() (which only needs a fresh realm, not a new
   * engine), so new engines are built only when the pool is still short once things calm down.
   */
  private refill(): void {
    if (this.refilling || this.pool.length >= this.init.warmPoolSize) return;
    this.refilling = true;
    setTimeout(async () => {
      try {
        if (this.pool.length < this.init.warmPoolSize) {
          const sandbox = await this.newSandbox("release", DEFAULT_LIMITS.memoryBytes);
          sandbox.prepareSpare();
          this.pool.push(sandbox);
        }
      } catch {
        // Out of memory or similar: the pool stays smaller; requests build sandboxes themselves.
      } finally {
        this.refilling = false;
      }
      this.refill();
    }, REFILL_DELAY_MS);
  }

  /** Puts a disposed sandbox's engine back in the warm pool if it fits there; false when it is dropped. */
  private recycle(sandbox: WorkerSandbox): boolean {
    const engine = sandbox.engine;
    if (
      this.pool.length < this.init.warmPoolSize &&
      engine.memoryLimitBytes === Math.floor(DEFAULT_LIMITS.memoryBytes / 65536) * 65536 &&
      engine.memory.buffer.byteLength <= RECYCLE_MAX_MEMORY_BYTES
    ) {
      // Its spare realm (if any) was never used: it goes back as it is.
      this.pool.push(sandbox);
      sandbox.prepareSpareSoon();
      return true;
    }
    return false;
  }

  async handle(id: number, request: WorkerRequest): Promise<void> {
    try {
      const value = await this.perform(request);
      this.post({ type: "reply", id, ok: true, value });
      if (request.op === "call") this.awaitNextCall();
    } catch (error) {
      const err = error instanceof Error ? error : new Error(inspect(error, { depth: 2, breakLength: Infinity }));
      this.post({ type: "reply", id, ok: false, error: { name: err.name, message: err.message } });
    }
  }

  private lastCallAnswered = 0;
  /** Polls for the next plugin call while that pays (see CALL_POLL_MS in host/protocol.ts). */
  private readonly nextCall = new AdaptivePoll(CALL_POLL_MS);

  /**
   * After answering a plugin call that followed another one closely, keep polling the port
   * for a moment instead of going to sleep: a sleeping worker takes ~50-100 µs to wake on
   * this kind of machine, more than the call itself. The poll backs off when it does not
   * pay (host/adaptive-poll.ts): on a loaded machine it would hold the core the embedder
   * needs to send that next call.
   */
  private awaitNextCall(): void {
    const now = performance.now();
    const streak = now - this.lastCallAnswered < 1;
    this.lastCallAnswered = now;
    if (!streak) return;
    let message: { id: number; request: WorkerRequest } | undefined;
    this.nextCall.poll(
      () => {
        message = receiveMessageOnPort(this.port)?.message as typeof message;
        return message !== undefined;
      },
      () => message === undefined,
    );
    if (message) void this.handle(message.id, message.request);
  }

  private sandbox(sandboxId: number): Promise<WorkerSandbox> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (sandbox) return sandbox;
    const reason = this.tombstones.get(sandboxId) ?? "it is not in this worker";
    throw Object.assign(new Error(reason), { name: "SandboxDisposedError" });
  }

  private async create(sandboxId: number, config: WorkerRequest & { op: "create" }): Promise<WorkerSandbox> {
    const { config: settings } = config;
    const pooled =
      settings.variant === "release" && settings.limits.memoryBytes === DEFAULT_LIMITS.memoryBytes ? this.pool.shift() : undefined;
    const sandbox = pooled ?? (await this.newSandbox(settings.variant, settings.limits.memoryBytes));
    sandbox.configure(sandboxId, settings);
    if (pooled) this.refill();
    return sandbox;
  }

  private async perform(request: WorkerRequest): Promise<unknown> {
    switch (request.op) {
      case "create": {
        const created = this.create(request.sandboxId, request);
        this.sandboxes.set(request.sandboxId, created);
        try {
          this.ready.set(request.sandboxId, await created);
        } catch (error) {
          this.sandboxes.delete(request.sandboxId);
          throw error;
        }
        return true;
      }
      case "run":
        return this.activate(request, (sandbox, control) => sandbox.run(request.code, request.filename, request.input, control, request.hostCalls));
      case "load":
        return this.activate(request, (sandbox, control) => sandbox.load(request.pluginId, request.code, request.filename, control, request.hostCalls));
      case "call":
        return this.activate(request, (sandbox, control) => sandbox.call(request.pluginId, request.name, request.args, control, request.hostCalls));
      case "abort":
        this.aborters.get(request.slot)?.();
        return true;
      case "unload":
        (await this.sandboxes.get(request.sandboxId)?.catch(() => undefined))?.unload(request.pluginId);
        return true;
      case "dispose": {
        const sandbox = await this.sandboxes.get(request.sandboxId)?.catch(() => undefined);
        this.sandboxes.delete(request.sandboxId);
        this.ready.delete(request.sandboxId);
        this.tombstones.delete(request.sandboxId);
        if (sandbox && !(sandbox.dispose() && this.recycle(sandbox))) noteDroppedEngine(sandbox.engine.memory.buffer.byteLength);
        return true;
      }
    }
  }

  /** Starts an activation unless the embedder gave up on it while it was queued. */
  private async activate(
    request: ActivationRequest,
    work: (sandbox: WorkerSandbox, control: ActivationControl) => Promise<unknown>,
  ): Promise<unknown> {
    const { slot } = request;
    // The embedder has already answered for it (aborted, disposed, queue timeout).
    if (!this.slots.start(slot)) return null;
    const control = this.slots.control(slot, (abort) => this.aborters.set(slot, abort));
    try {
      return await work(this.ready.get(request.sandboxId) ?? (await this.sandbox(request.sandboxId)), control);
    } finally {
      this.aborters.delete(slot);
    }
  }
}
