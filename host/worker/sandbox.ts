// A sandbox as the worker sees it: one engine instance (its own capped wasm memory), the
// sandbox's configuration and fetch transport, a spare realm prepared ahead of the next
// run, and the realms of loaded plugins.
import type { EngineInstance } from "../engine/instance.js";
import type { RejectionTracking } from "../engine/rejection-tracker.js";
import { SandboxFetchTransport } from "../fetch/transport.js";
import { canAllocate } from "../engine/headroom.js";
import type { ActivationOutcome, SandboxConfig } from "../protocol.js";
import type { LogEntry } from "../types.js";
import type { GuestBundle } from "./guest-bundle.js";
import type { WatchdogSlot } from "./guard.js";
import { ABORTED_MESSAGE } from "./activation.js";
import { Realm, RealmPreparationStopped, type RealmImage, type RealmServices } from "./realm.js";
import { imagesSupported } from "../engine/memory-image.js";
import { randomStateOffset, reseedRandomState } from "../engine/random-state.js";
import { ModuleUsage } from "./module-usage.js";
import { NO_CONTROL, type ActivationControl } from "../activation-slots.js";
import type { ActivationHostCalls } from "../host-modules/manifest.js";
import { attachHostModules, renewHostCallToken } from "./bridge/host-modules.js";
import { noteDroppedEngine } from "./engine-gc.js";

export interface SandboxHost {
  /** Modules recent runs in this worker loaded: spare realms load them ahead of time. */
  readonly moduleUsage: ModuleUsage;
  emitLog(sandboxId: number, entry: LogEntry): void;
  onPoisoned(sandbox: WorkerSandbox): void;
  /** A fresh engine instance (and its rejection tracking) of the same variant and size. */
  newEngine(variant: SandboxConfig["variant"], memoryBytes: number): Promise<{ engine: EngineInstance; tracking: RejectionTracking }>;
  /** Runs work nobody waits for once no run is queued in the worker (WorkerHost.whenIdle). */
  whenIdle(task: () => void): void;
}

interface PluginSlot {
  realm: Realm;
  /** Calls on one plugin run one after another. */
  queue: Promise<unknown>;
  /** Calls started and not yet finished. */
  busy: number;
}

const STOPPING_KINDS = new Set(["cpu", "timeout", "memory", "limit", "aborted"]);
/** Memory a new realm needs (context, guest core, first allocations), with margin. */
const REALM_RESERVE_BYTES = 1024 * 1024;
/**
 * Runs a sandbox starts before its spare realm is captured as a memory image: a sandbox run
 * once (most of them) holds no image (~225 KiB for a worker's first, ~7-19 KiB for each
 * further one whose pages it shares: host/engine/memory-image.ts).
 */
const IMAGE_AFTER_RUNS = 2;

function failedOutcome(message: string, sandboxDisposed?: string): ActivationOutcome {
  return {
    ok: false,
    error: { kind: "script", name: "Error", message, stack: "" },
    logs: [],
    stats: { cpuTimeMs: 0, wallTimeMs: 0, memoryBytes: 0, fetches: 0 },
    ...(sandboxDisposed ? { sandboxDisposed } : {}),
  };
}

export class WorkerSandbox implements RealmServices {
  private id = 0;
  /**
   * Realms QuickJS cannot free safely (stopped by an interrupt, or with jobs still queued:
   * see Realm.freeable), or that ran the heap out of memory (Realm.exhaustedHeap). Draining them would run guest code, and freeing them can abort
   * the whole instance, so they are left untouched until the engine instance is replaced.
   */
  private readonly parked: Realm[] = [];
  private configuration: SandboxConfig | null = null;
  private fetchTransport: SandboxFetchTransport | null = null;
  private spare: Realm | null = null;
  private readonly plugins = new Map<number, PluginSlot>();
  private readonly running = new Set<Realm>();
  /**
   * Realms acquired for a run, load or plugin and not ended yet (a superset of `running`
   * and the plugins' realms: it includes a realm between its acquisition and its run's
   * start). While any is here, the image is not restored: it would overwrite their heap.
   */
  private readonly handedOut = new Set<Realm>();
  /**
   * The engine's memory with a fresh realm in it (Realm.captureImage): while the engine
   * holds no other live realm, a run's realm is this image restored (a few µs) instead of a
   * realm built (~0.3 ms) and freed (~0.1 ms). docs/architecture.md, "Realms from a memory image".
   */
  private image: RealmImage | null = null;
  /** The engine replacement in flight (acquireRealm), if any. */
  private replacing: Promise<void> | null = null;
  /** Runs started since the sandbox was configured (see IMAGE_AFTER_RUNS). */
  private runsStarted = 0;
  disposedReason: string | null = null;

  constructor(
    public engine: EngineInstance,
    public tracking: RejectionTracking,
    readonly bundle: GuestBundle,
    readonly watchdog: WatchdogSlot,
    private readonly host: SandboxHost,
  ) {}

  get sandboxId(): number {
    return this.id;
  }
  config(): SandboxConfig {
    if (!this.configuration) throw new Error("sandbox is not configured");
    return this.configuration;
  }
  transport(): SandboxFetchTransport {
    if (!this.fetchTransport) throw new Error("sandbox is not configured");
    return this.fetchTransport;
  }
  emitLog(entry: LogEntry): void {
    this.host.emitLog(this.id, entry);
  }
  poisoned(reason: string): void {
    if (this.disposedReason !== null) return;
    this.disposedReason = reason;
    // The instance cannot be called into again: drop every realm without disposing it.
    this.spare = null;
    this.dropImage();
    this.plugins.clear();
    this.running.clear();
    this.handedOut.clear();
    this.host.onPoisoned(this);
  }

  get alive(): boolean {
    return this.disposedReason === null;
  }

  /** Bytes of the sandbox's memory image (0: none; its runs build their realms). */
  get imageBytes(): number {
    return this.image?.memory.byteLength ?? 0;
  }

  /**
   * Builds the spare realm now (off the request path) if there is none and no image. A
   * sandbox that runs again and again gets its spare captured as a memory image, when the
   * engine holds nothing else (no plugin, run or parked realm: the image is the whole heap).
   */
  prepareSpare(): void {
    if (!this.alive || this.spare !== null) return;
    const popular = this.host.moduleUsage.popular();
    if (this.image !== null) {
      // The modules runs in this worker use have changed since the capture: a new image with
      // them, once no other realm is in the engine (else later: realmFromImage asks again).
      if (this.image.preloaded === ModuleUsage.key(popular) || !this.holdsNoOtherRealm()) return;
      this.freeImage();
      if (!this.alive) return; // freeing it failed the engine
    }
    const capture = this.runsStarted >= IMAGE_AFTER_RUNS && this.holdsNoOtherRealm() && this.toFree.size === 0 && imagesSupported(this.engine);
    // Found (once per thread and build) before the realm is built: it makes and frees a context.
    const randomOffset = capture ? randomStateOffset(this.engine) : null;
    const realm = new Realm(this);
    if (!realm.preload(popular)) {
      // Stopped part-way (a machine stalled past its deadline, a module that failed): no
      // spare rather than one with a module half loaded; the next run builds its realm.
      this.disposeRealm(realm);
      return;
    }
    this.spare = realm;
    if (randomOffset !== null) this.image = realm.captureImage(randomOffset, ModuleUsage.key(popular));
  }

  /** Whether no realm but the spare lives in the engine (the ended ones aside: see toFree). */
  private holdsNoOtherRealm(): boolean {
    return this.handedOut.size === 0 && this.plugins.size === 0 && this.running.size === 0 && this.parked.length === 0;
  }

  configure(id: number, config: SandboxConfig): void {
    this.id = id;
    this.configuration = config;
    const { limits } = config;
    this.fetchTransport = new SandboxFetchTransport({
      allow: config.allow,
      limits: {
        maxFetches: limits.maxFetches,
        maxConcurrentFetches: limits.maxConcurrentFetches,
        maxRequestBytes: limits.maxRequestBytes,
        maxResponseBytes: limits.maxResponseBytes,
        requestTimeoutMs: limits.fetchTimeoutMs,
        maxRequestHeaders: limits.maxRequestHeaders,
        maxRequestHeaderBytes: limits.maxRequestHeaderBytes,
      },
      secrets: config.secrets,
    });
  }

  /** Forgets the configuration so the engine can serve another sandbox (see WorkerHost.recycle). */
  reset(): void {
    this.id = 0;
    this.runsStarted = 0;
    this.configuration = null;
    this.fetchTransport?.abortAll();
    this.fetchTransport = null;
  }

  private spareScheduled = false;
  /** Realms whose run has ended, freed once the answer has gone out. */
  private readonly toFree = new Set<Realm>();

  private flushFrees(): void {
    for (const realm of this.toFree) this.disposeRealm(realm);
    this.toFree.clear();
  }

  /**
   * Builds the spare realm after the current request has been answered, once no run is
   * queued. A run that has ended by then has its realm freed first: the spare then reuses
   * that memory instead of touching more of the instance's (resident memory per idle sandbox).
   */
  prepareSpareSoon(): void {
    if (this.spareScheduled || this.spare !== null || !this.alive) return;
    this.spareScheduled = true;
    this.host.whenIdle(() => {
      this.spareScheduled = false;
      this.flushFrees();
      try {
        this.prepareSpare();
      } catch {
        // Out of memory for a spare, or stopped by its deadline: the next run builds its
        // realm itself and reports what happens then. (Poisoning the sandbox on a trap
        // here was tried: after a run that filled the heap, test/tenancy/guest-memory's
        // "lazy modules near the cap" then lost sandboxes whose next run works.)
      }
    });
  }

  private handOut(realm: Realm): Realm {
    this.handedOut.add(realm);
    return realm;
  }

  private takeRealm(): Realm {
    const realm = this.spare ?? new Realm(this);
    this.spare = null;
    this.prepareSpareSoon();
    return realm;
  }

  /** A realm for a new run or plugin, or the outcome that explains why there is none. */
  private async acquireRealm(): Promise<Realm | ActivationOutcome> {
    if (!this.alive) return failedOutcome(`the sandbox was disposed: ${this.disposedReason}`, this.disposedReason!);
    // Before the heap checks below: the image brings back a heap with room for its realm.
    if (this.spare === null && this.image !== null) {
      try {
        const realm = this.realmFromImage();
        if (realm !== null) return this.handOut(realm);
      } catch (error) {
        return this.realmFailure(error);
      }
    }
    // A realm whose run just ended may not be freed yet: free it now if memory is short.
    if (this.spare === null && !canAllocate(this.engine, REALM_RESERVE_BYTES, REALM_RESERVE_BYTES)) this.flushFrees();
    // (After the flush: a realm it could not free is parked, and its heap goes with the engine.)
    // One replacement at a time, and every acquisition waits for one in flight: two at once
    // would leave the first one's realm built in an engine the sandbox no longer uses (its
    // later engine calls would go to the other engine's heap).
    if (this.parked.length > 0 && this.plugins.size === 0 && this.running.size === 0 && this.handedOut.size === 0) {
      this.replacing ??= this.replaceEngine().finally(() => (this.replacing = null));
    }
    if (this.replacing !== null) await this.replacing;
    // Disposed while the new engine was being made.
    if (!this.alive) return failedOutcome(`the sandbox was disposed: ${this.disposedReason}`, this.disposedReason!);
    if (this.spare === null && !canAllocate(this.engine, REALM_RESERVE_BYTES, REALM_RESERVE_BYTES)) {
      // Building a realm at the cap would fault inside the engine: say so instead.
      return {
        ...failedOutcome("no memory left to prepare a realm"),
        error: {
          kind: "memory",
          name: "LimitError",
          message: `memoryBytes limit reached: no room to prepare a realm${this.parked.length ? ` (${this.parked.length} realms stopped by limits are held until the sandbox's plugins are unloaded)` : ""}`,
          stack: "",
        },
      };
    }
    try {
      return this.handOut(this.takeRealm());
    } catch (error) {
      return this.realmFailure(error);
    }
  }

  /**
   * Runs one request's work so that whatever goes wrong becomes an outcome, never a raw
   * error (a RuntimeError from an engine trap would otherwise reach the embedder as a
   * rejected run): an engine failure disposes the sandbox in this same turn.
   */
  private async outcomeOf(work: () => Promise<ActivationOutcome>): Promise<ActivationOutcome> {
    try {
      return await work();
    } catch (error) {
      const message = `the sandbox's engine failed (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}); the sandbox was disposed`;
      this.poisoned(message);
      return { ...failedOutcome(message, message), error: { kind: error instanceof WebAssembly.RuntimeError ? "memory" : "script", name: "InternalError", message, stack: "" } };
    }
  }

  run(code: string, filename: string, input: unknown, control: ActivationControl = NO_CONTROL, hostCalls?: ActivationHostCalls): Promise<ActivationOutcome> {
    return this.outcomeOf(() => this.runInRealm(code, filename, input, control, hostCalls));
  }

  private async runInRealm(code: string, filename: string, input: unknown, control: ActivationControl, hostCalls: ActivationHostCalls | undefined): Promise<ActivationOutcome> {
    this.runsStarted++;
    const realm = await this.acquireRealm();
    if (!(realm instanceof Realm)) return realm;
    attachHostModules(realm, this.configuration?.hostModules, hostCalls);
    this.running.add(realm);
    try {
      return await realm.run(code, filename, input, control);
    } finally {
      if (realm.alive && realm.freeable) this.host.moduleUsage.record(realm.usedModules());
      this.running.delete(realm);
      this.handedOut.delete(realm);
      // Freed after the answer has gone out: freeing is not on the caller's clock.
      this.toFree.add(realm);
      setImmediate(() => this.flushFrees());
    }
  }

  load(pluginId: number, code: string, filename: string, control: ActivationControl = NO_CONTROL, hostCalls?: ActivationHostCalls): Promise<ActivationOutcome> {
    return this.outcomeOf(async () => {
      const realm = await this.acquireRealm();
      if (!(realm instanceof Realm)) return realm;
      attachHostModules(realm, this.configuration?.hostModules, hostCalls);
      const outcome = await realm.load(code, filename, control);
      if (outcome.ok && realm.alive) this.plugins.set(pluginId, { realm, queue: Promise.resolve(), busy: 0 });
      else this.disposeRealm(realm);
      return outcome;
    });
  }

  call(pluginId: number, name: string, args: unknown[], control: ActivationControl = NO_CONTROL, hostCalls?: ActivationHostCalls): Promise<ActivationOutcome> {
    const slot = this.plugins.get(pluginId);
    if (!this.alive) return Promise.resolve(failedOutcome(`the sandbox was disposed: ${this.disposedReason}`, this.disposedReason!));
    if (!slot) return Promise.resolve(failedOutcome("the plugin is not loaded (it was unloaded, or stopped by a limit)"));
    const callNow = () => this.outcomeOf(async () => {
      renewHostCallToken(slot.realm, hostCalls);
      const outcome = await slot.realm.call(name, args, control);
      // A limit stopped the plugin mid-flight: its state and job queue are torn, so it is
      // unloaded rather than called again in an unknown state. A call aborted before any of
      // its code ran (it waited behind another call on the plugin) tore nothing.
      const tornMidFlight = slot.realm.enteredGuest || outcome.error?.kind !== "aborted";
      if (!outcome.ok && outcome.error && STOPPING_KINDS.has(outcome.error.kind) && tornMidFlight && this.plugins.get(pluginId) === slot) {
        this.unload(pluginId);
        return { ...outcome, error: { ...outcome.error, message: `${outcome.error.message}; the plugin was unloaded` } };
      }
      return outcome;
    });
    // Calls on one plugin run one after another; when none is in flight, at once.
    const result = slot.busy ? slot.queue.then(callNow) : callNow();
    slot.busy++;
    slot.queue = result.then(
      () => void slot.busy--,
      () => void slot.busy--,
    );
    return result;
  }

  unload(pluginId: number): void {
    const slot = this.plugins.get(pluginId);
    if (!slot) return;
    this.plugins.delete(pluginId);
    this.disposeRealm(slot.realm);
  }

  get pluginCount(): number {
    return this.plugins.size;
  }

  /** Drops the current engine instance (never calling into it again) for a fresh one. */
  private async replaceEngine(): Promise<void> {
    const config = this.config();
    const { engine, tracking } = await this.host.newEngine(config.variant, config.limits.memoryBytes);
    noteDroppedEngine(this.engine.memory.buffer.byteLength);
    this.dropImage();
    this.engine = engine;
    this.tracking = tracking;
    this.parked.length = 0;
    this.spare = null;
  }

  /** Whether the engine instance can serve another sandbox after this one is disposed. */
  get recyclable(): boolean {
    return this.alive && this.parked.length === 0;
  }

  /**
   * A realm made from the image, or null when the engine holds a realm that must stay (a
   * plugin's, a run's) or that could not be ended cleanly (parked). The realms whose runs
   * have ended are dropped first: their handles freed, their runtimes left to the restore.
   */
  private realmFromImage(): Realm | null {
    const image = this.image;
    if (image === null || !this.holdsNoOtherRealm()) return null;
    for (const realm of this.toFree) this.disposeRealm(realm);
    this.toFree.clear();
    // A realm that could not be ended cleanly was parked just now: its handles are alive,
    // and a late free of one would land in the restored heap. The engine is replaced instead.
    if (this.parked.length > 0) return null;
    image.memory.restore(this.engine);
    reseedRandomState(this.engine, image.contextPointer, image.randomStateOffset);
    const realm = new Realm(this, image);
    if (image.preloaded !== ModuleUsage.key(this.host.moduleUsage.popular())) this.prepareSpareSoon();
    return realm;
  }

  /** Forgets the image (no engine calls: the engine may be gone or failed). */
  private dropImage(): void {
    this.image?.memory.release();
    this.image = null;
  }

  /**
   * Drops the image and leaves the heap without its realms: the image restored and its
   * realm freed (before the engine goes back to the warm pool, or before a new capture), so
   * no leftover runtime of an ended run stays in the engine. Only while no other realm is in it.
   */
  private freeImage(): void {
    const image = this.image;
    if (image === null) return;
    // The spare, if still there, is the realm the image was captured from: ended here (its
    // rejection listener, its handles), its runtime freed below with the image's.
    this.spare?.disposeForRestore();
    this.spare = null;
    for (const realm of this.toFree) this.disposeRealm(realm);
    this.toFree.clear();
    try {
      if (this.alive && this.parked.length === 0) {
        image.memory.restore(this.engine);
        new Realm(this, image).dispose();
      }
    } catch (error) {
      this.poisoned(`the sandbox's engine failed while freeing its image realm (${(error as Error).message})`);
    } finally {
      this.dropImage();
    }
  }

  private disposeRealm(realm: Realm): void {
    this.handedOut.delete(realm);
    if (!this.alive || !realm.alive) return;
    // A realm that ran the heap out of memory is not freed into an instance we keep using
    // (Realm.exhaustedHeap): parked, the instance is replaced before the next run. With
    // plugins loaded the instance must stay, and the realm is freed as any other.
    if (!realm.freeable || (realm.exhaustedHeap && this.plugins.size === 0)) {
      realm.abandon();
      this.parked.push(realm);
      return;
    }
    // Its runtime stays in the heap until the next restore puts the image back over it,
    // which happens only when no other realm is in the engine: with one there, it is freed
    // now (else what it kept would count against the memory of the runs beside it).
    if (realm.fromImage && this.image !== null && this.holdsNoOtherRealm()) {
      realm.disposeForRestore();
      return;
    }
    try {
      realm.dispose();
    } catch (error) {
      // JS_FreeRuntime asserts when something is still referenced: the instance is unusable.
      this.poisoned(`the sandbox's engine failed while freeing a realm (${(error as Error).message})`);
    }
  }

  private realmFailure(error: unknown): ActivationOutcome {
    if (error instanceof RealmPreparationStopped) {
      if (error.reason === "aborted") {
        return { ...failedOutcome(ABORTED_MESSAGE), error: { kind: "aborted", name: "AbortError", message: ABORTED_MESSAGE, stack: "" } };
      }
      const message = `wallTimeMs limit (${this.config().limits.wallTimeMs} ms) exceeded while preparing a realm for the script`;
      return { ...failedOutcome(message), error: { kind: "timeout", name: "LimitError", message, stack: "" } };
    }
    const message = `could not prepare a realm: ${(error as Error).message}`;
    if (error instanceof WebAssembly.RuntimeError) {
      this.poisoned(message);
      return failedOutcome(message, message);
    }
    return {
      ...failedOutcome(message),
      error: { kind: "memory", name: "LimitError", message: `memoryBytes limit reached: ${message}`, stack: "" },
    };
  }

  /**
   * The engine is dropped (not kept in the warm pool): nothing is built in it any more (a
   * spare realm scheduled as idle work would otherwise fault in fresh pages of an instance
   * about to be collected).
   */
  retire(): void {
    this.disposedReason ??= "its engine was dropped";
    this.spare = null;
    this.dropImage();
  }

  /** Frees every realm. Returns true if the engine is healthy enough to be reused. */
  dispose(): boolean {
    if (!this.alive) return false;
    for (const slot of this.plugins.values()) this.disposeRealm(slot.realm);
    this.plugins.clear();
    for (const realm of this.running) this.disposeRealm(realm);
    this.running.clear();
    // A realm acquired and not started yet (or a plugin's, still loading).
    for (const realm of [...this.handedOut]) this.disposeRealm(realm);
    this.flushFrees();
    this.freeImage();
    this.reset();
    return this.recyclable;
  }
}
