// Everything a worker thread holds: its sandboxes, a warm pool of ready ones (engine
// instance + spare realm, built off the request path, and the engines of disposed
// sandboxes: warm-pool.ts), and the message handling.
//
// Why a warm pool: instantiating the wasm (~1.5 ms) and building a realm (~1 ms) is most
// of what "create a sandbox and run 1 + 1" would cost; done ahead of time, creating a
// sandbox is taking one from the pool.
//
// Scheduling (docs/architecture.md, "Sandbox lifecycle and scheduling"): requests are
// answered in the order they arrive, but
//  - "create" only records the sandbox: its engine is taken (or built) at its first run,
//    so a burst of creates never queues engine builds ahead of runs;
//  - runs and loads (the requests that build a realm and enter guest code) start one per
//    turn of the event loop, so the timers, fetches and host calls of runs already started
//    are served between them instead of after the whole queue;
//  - "dispose" forgets the sandbox at once and frees it in the next turn, off the reply;
//  - work nobody waits for (spare realms, refilling the warm pool, the engine warm-up)
//    runs only while no run or load is queued or starting ("idle work").
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { inspect } from "node:util";
import { createEngineInstance } from "../engine/instance.js";
import { findTrackerFieldOffset, RejectionTracking, verifyRejectionTracking } from "../engine/rejection-tracker.js";
import type { EngineVariantName } from "../engine/wasm-binary.js";
import { DEFAULT_LIMITS } from "../limits.js";
import { CALL_POLL_MS, callAnswerMessage, readRequestMessage, type ActivationOutcome, type ActivationRequest, type RequestMessage, type SandboxConfig, type WorkerInit, type WorkerMessage, type WorkerRequest } from "../protocol.js";
import type { LogEntry } from "../types.js";
import { GuestBundle } from "./guest-bundle.js";
import { WatchdogSlot } from "./guard.js";
import { WorkerSandbox } from "./sandbox.js";
import { noteDroppedEngine, setIdleScheduler } from "./engine-gc.js";
import { WarmPool, WarmPoolRefill } from "./warm-pool.js";
import { ModuleUsage } from "./module-usage.js";
import { ActivationSlots, type ActivationControl } from "../activation-slots.js";
import { currentThreadId } from "../thread-cpu.js";
import { AdaptivePoll } from "../adaptive-poll.js";
import { loadUndici } from "../fetch/sharedDispatcher.js";

/** The engine warm-up (see warmUp): loop iterations of guest code, in this many slices. */
const WARM_UP_ITERATIONS = 300_000;
const WARM_UP_SLICES = 30;
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
  private readonly pool: WarmPool<WorkerSandbox>;
  private readonly trackerOffsets = new Map<EngineVariantName, number>();
  /** Why sandboxes that failed on their own (outside a request) are gone. */
  private readonly tombstones = new Map<number, string>();
  /** Builds new engines for the warm pool as idle work once it has been short for a while. */
  private readonly refiller: WarmPoolRefill;
  private readonly moduleUsage = new ModuleUsage();
  private readonly slots: ActivationSlots;
  /** How to end each waiting activation, by slot, for "abort" messages. */
  private readonly aborters = new Map<number, () => void>();
  /** Sandboxes created and not run yet: their engine is bound at the first activation. */
  private readonly declared = new Map<number, SandboxConfig>();
  /** Runs and loads not started yet (see pump). */
  private readonly queued: { id: number; request: ActivationRequest }[] = [];
  /** Whether pump is starting queued runs and loads. */
  private pumping = false;
  private readonly idleWork: (() => void)[] = [];
  private idleScheduled = false;
  private undiciRequested = false;
  /** Sandboxes disposed and not freed yet (see "dispose" and pump). */
  private readonly disposed: WorkerSandbox[] = [];

  constructor(init: WorkerInit, private readonly port: MessagePort) {
    this.watchdog = new WatchdogSlot(init.watchdog);
    this.slots = new ActivationSlots(init.activationSlots);
    this.pool = new WarmPool(init.warmPool.size, init.warmPool.burstExtraMax, (sandbox) => this.free(sandbox, false), () => this.sandboxes.size);
    this.refiller = new WarmPoolRefill(
      this.pool,
      () =>
        this.newSandbox("release", DEFAULT_LIMITS.memoryBytes).then((sandbox) => {
          this.pool.add(sandbox);
          // Its spare realm is another slice of idle work (the engine was built off a turn).
          sandbox.prepareSpareSoon();
        }),
      (task) => this.whenIdle(task),
    );
    // One host per thread: its idle work runs the collection of dropped engines once quiet.
    setIdleScheduler((task) => this.whenIdle(task));
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
      whenIdle: (task) => this.whenIdle(task),
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

  /**
   * Fills the warm pool and warms V8's wasm tiers (the first long evaluation is ~3x
   * slower), both as idle work: a request that arrives while the worker starts is served
   * first (the first sandbox of a process waits for nothing but the thread and its engine).
   */
  start(): void {
    this.refiller.start();
    // "ready" in every case: warmPool() waits for it.
    this.warmUp()
      .catch(() => undefined)
      .finally(() => this.post({ type: "ready" }));
  }

  /**
   * ~300,000 loop iterations of guest code, in slices of idle work: V8 tiers hot wasm
   * functions up by the work done in them, not by how long one evaluation lasts, so short
   * slices warm it as well as one long run while a request that arrives waits for one
   * slice (a few ms) at most.
   */
  private async warmUp(): Promise<void> {
    const idle = () => new Promise<void>((resolve) => this.whenIdle(resolve));
    await idle();
    const sandbox = this.pool.take(0) ?? (await this.newSandbox("release", DEFAULT_LIMITS.memoryBytes));
    await idle();
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
    const loaded = await sandbox.load(0, "export function spin(n) { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s }", "warmup.js");
    for (let slice = 0; loaded.ok && slice < WARM_UP_SLICES; slice++) {
      await idle();
      await sandbox.call(0, "spin", [WARM_UP_ITERATIONS / WARM_UP_SLICES]);
    }
    await idle();
    this.free(sandbox);
  }

  /**
   * Runs `task` once no run or load is queued, one task per turn of the event loop:
   * work nobody waits for must not delay work somebody does.
   */
  whenIdle(task: () => void): void {
    this.idleWork.push(task);
    this.scheduleIdle();
  }

  private scheduleIdle(): void {
    if (this.idleScheduled || this.idleWork.length === 0) return;
    this.idleScheduled = true;
    setImmediate(() => {
      this.idleScheduled = false;
      // Requests that arrived since the last turn go first.
      this.takePendingRequests();
      // pump() schedules idle work again once it has started every queued run.
      if (this.pumping || this.queued.length > 0) return;
      const task = this.idleWork.shift();
      try {
        task?.();
      } catch {
        // Idle work is best effort (a spare realm, a refill): requests do it themselves.
      }
      this.scheduleIdle();
    });
  }

  /** Takes the requests waiting on the port now, without waiting for the event loop's next poll. */
  private takePendingRequests(): void {
    for (let received = receiveMessageOnPort(this.port); received; received = receiveMessageOnPort(this.port)) this.receive(received.message as RequestMessage);
  }

  /** Puts a disposed sandbox's engine back in the warm pool if it fits there; false when it is dropped. */
  private recycle(sandbox: WorkerSandbox): boolean {
    const engine = sandbox.engine;
    // Only what the pool hands out (WorkerHost.sandbox takes from it for release builds at the default limit).
    if (
      engine.variant === "release" &&
      engine.memoryLimitBytes === Math.floor(DEFAULT_LIMITS.memoryBytes / 65536) * 65536 &&
      engine.memory.buffer.byteLength <= RECYCLE_MAX_MEMORY_BYTES &&
      this.pool.offer(sandbox)
    ) {
      // Its spare realm (if any) was never used: it goes back as it is.
      sandbox.prepareSpareSoon();
      return true;
    }
    return false;
  }

  /** A request as the embedder posts it: an envelope, or a plugin call's short form (host/protocol.ts). */
  receive(message: RequestMessage): void {
    const { id, request } = readRequestMessage(message);
    this.handle(id, request);
  }

  /**
   * Every request from the embedder comes in here. Runs and loads wait their turn in
   * `queued` (see pump); everything else is answered at once, in arrival order.
   */
  handle(id: number, request: WorkerRequest): void {
    if (request.op === "run" || request.op === "load") {
      this.queued.push({ id, request });
      void this.pump();
    } else {
      void this.answer(id, request);
    }
  }

  /**
   * Starts the queued runs and loads one after another, one per turn of the event loop:
   * the sync part of a start (a realm, the script's first evaluation) takes a millisecond
   * or more, and a hundred of them back to back would hold up the timers and replies of
   * the runs already started. A sandbox's first run gets its engine before it starts (a
   * new engine takes a few ms, partly asynchronous): starts are never piled up behind
   * engine builds.
   */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let next = this.queued.shift(); next; next = this.queued.shift()) {
        // An empty warm pool: free the disposed sandboxes first (cheap), their engines may serve this run.
        if (this.pool.length === 0) this.freeDisposed();
        await this.materialize(next.request.sandboxId)?.catch(() => undefined);
        void this.answer(next.id, next.request);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.pumping = false;
    }
    this.scheduleIdle();
  }

  private async answer(id: number, request: WorkerRequest): Promise<void> {
    try {
      const value = await this.perform(request);
      this.post((request.op === "call" && callAnswerMessage(id, value as ActivationOutcome | null)) || { type: "reply", id, ok: true, value });
      if (request.op === "call") this.awaitNextCall(request.replyPolled === true);
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
   * for a moment instead of going to sleep: a sleeping worker takes ~50-250 µs to wake on
   * this kind of machine, more than the call itself. Only when the embedder polls for this
   * reply (`replyPolled`): a sleeping embedder takes as long to wake and call again, past
   * the window. The poll backs off when it does not pay (host/adaptive-poll.ts): on a
   * loaded machine it would hold the core the embedder needs to send that next call.
   */
  private awaitNextCall(replyPolled: boolean): void {
    const now = performance.now();
    const streak = now - this.lastCallAnswered < 1;
    this.lastCallAnswered = now;
    if (!streak || !replyPolled) return;
    let message: RequestMessage | undefined;
    this.nextCall.poll(
      () => {
        message = receiveMessageOnPort(this.port)?.message as typeof message;
        return message !== undefined;
      },
      () => message === undefined,
    );
    if (message) this.receive(message);
  }

  private sandbox(sandboxId: number): Promise<WorkerSandbox> {
    const sandbox = this.sandboxes.get(sandboxId) ?? this.materialize(sandboxId);
    if (sandbox) return sandbox;
    const reason = this.tombstones.get(sandboxId) ?? "it is not in this worker";
    throw Object.assign(new Error(reason), { name: "SandboxDisposedError" });
  }

  /** Binds an engine to a sandbox created earlier (at its first activation); null if unknown. */
  private materialize(sandboxId: number): Promise<WorkerSandbox> | null {
    const config = this.declared.get(sandboxId);
    if (!config) return null;
    this.declared.delete(sandboxId);
    const created = this.create(sandboxId, config).then(
      (sandbox) => {
        // Disposed while its engine was being built: "dispose" found the promise and frees it.
        if (this.sandboxes.get(sandboxId) === created) this.ready.set(sandboxId, sandbox);
        return sandbox;
      },
      (error: Error) => {
        const reason = `it could not be created: ${error.message}`;
        if (this.sandboxes.get(sandboxId) === created) {
          this.sandboxes.delete(sandboxId);
          this.tombstones.set(sandboxId, reason);
        }
        throw Object.assign(new Error(reason), { name: "SandboxDisposedError" });
      },
    );
    this.sandboxes.set(sandboxId, created);
    return created;
  }

  private async create(sandboxId: number, settings: SandboxConfig): Promise<WorkerSandbox> {
    const pooled =
      // This one is not in `sandboxes` yet.
      settings.variant === "release" && settings.limits.memoryBytes === DEFAULT_LIMITS.memoryBytes ? this.pool.take(this.sandboxes.size + 1) : undefined;
    const sandbox = pooled ?? (await this.newSandbox(settings.variant, settings.limits.memoryBytes));
    sandbox.configure(sandboxId, settings);
    if (pooled) this.refiller.request();
    return sandbox;
  }

  private async perform(request: WorkerRequest): Promise<unknown> {
    switch (request.op) {
      case "create":
        // Recorded only: the engine is bound at the first run (see materialize).
        this.declared.set(request.sandboxId, request.config);
        // A sandbox that may fetch: load the HTTP client before its first fetch needs it.
        if (request.config.allow.length > 0 && !this.undiciRequested) {
          this.undiciRequested = true;
          this.whenIdle(() => void loadUndici());
        }
        return true;
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
        const sandbox = this.sandboxes.get(request.sandboxId);
        this.declared.delete(request.sandboxId);
        this.sandboxes.delete(request.sandboxId);
        this.ready.delete(request.sandboxId);
        this.tombstones.delete(request.sandboxId);
        if (!sandbox) return true;
        // Gone for every later request now. Its realms are freed in the next turn, off this
        // answer (or ahead of a run that finds the warm pool empty: see pump), or before
        // answering when the embedder waits for it (a dedicated worker it may terminate).
        if (request.freeNow) {
          const created = await sandbox.catch(() => null);
          if (created) this.free(created);
        } else {
          sandbox.then(
            (created) => {
              this.disposed.push(created);
              setImmediate(() => this.freeDisposed());
            },
            () => undefined,
          );
        }
        return true;
      }
    }
  }

  /** Frees a disposed sandbox's realms; a healthy engine goes back to the warm pool (unless `recycle` is false). */
  private free(sandbox: WorkerSandbox, recycle = true): void {
    const memoryBytes = sandbox.engine.memory.buffer.byteLength;
    if (sandbox.dispose() && recycle && this.recycle(sandbox)) return;
    // Dropped: a spare-realm build it still had scheduled must not touch its memory now.
    sandbox.retire();
    noteDroppedEngine(memoryBytes);
  }

  private freeDisposed(): void {
    for (const sandbox of this.disposed.splice(0)) this.free(sandbox);
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
      const outcome = await work(this.ready.get(request.sandboxId) ?? (await this.sandbox(request.sandboxId)), control);
      // Answered from here on: a run that finished is not withdrawn to run again.
      control.noteDone();
      return outcome;
    } finally {
      this.aborters.delete(slot);
    }
  }
}
