// A realm: one QuickJS runtime and context, with the guest core installed and the bridge
// wired in. A sandbox uses a fresh realm for every run (so nothing a script does survives
// into the next run, and a run stopped by a limit leaves no half-finished job queue
// behind), and one long-lived realm per loaded plugin.
//
// The realm also runs activations (a run, a plugin load, a plugin call): it enters guest
// code under the execution guard, drains the job queue, reacts to timers and fetches, and
// decides when the activation is over: when its main promise has settled and nothing it
// started is still pending, or when something failed.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import { performance } from "node:perf_hooks";
import type { EngineInstance } from "../engine/instance.js";
import { canAllocate, canCompile, canMoveBytes, canMoveString } from "../engine/headroom.js";
import { contextPointer, dupValueAt, handleValuePointer, hostRefState, ownedHandle, runtimePointer, runtimeAt, setHostRefState, type HostRefState } from "../engine/internals.js";
import { MemoryImage } from "../engine/memory-image.js";
import { readOwnProps } from "../engine/own-props.js";
import { executePendingJobs, newDeferredPromise } from "../engine/fresh-views.js";
import { installLeanCalls } from "../engine/lean-calls.js";
import { canLoadLibraryCode, evalLibraryCode } from "../engine/bytecode.js";
import type { RejectionTracking } from "../engine/rejection-tracker.js";
import { decodeFromGuest, encodeForGuest } from "../marshal/crossing-values.js";
import type { ActivationOutcome, SandboxConfig } from "../protocol.js";
import type { LogEntry, SandboxError } from "../types.js";
import { ABORTED_MESSAGE, Activation, type ActivationKind } from "./activation.js";
import { bridgeFunctions, createBridge, type BridgeEntries } from "./bridge/index.js";
import { hostModuleSource } from "./bridge/host-modules.js";
import type { GuestBundle } from "./guest-bundle.js";
import { ExecutionGuard, type Budget, type StopReason, type WatchdogSlot } from "./guard.js";
import { DEFAULT_LIMITS, type Limits } from "../limits.js";
import { NO_CONTROL, type ActivationControl } from "../activation-slots.js";

import { SandboxFetchTransport } from "../fetch/transport.js";

/**
 * A realm's preparation was stopped (Realm's constructor), by its wall limit (ownBudget:
 * the run reports kind "timeout") or by a stop request ("aborted"); the realm was freed.
 */
export class RealmPreparationStopped extends Error {
  constructor(readonly reason: StopReason) {
    super(`preparing a realm was stopped (${reason})`);
    this.name = "RealmPreparationStopped";
  }
}

/** What a realm needs from the sandbox that owns it. */
export interface RealmServices {
  readonly engine: EngineInstance;
  readonly tracking: RejectionTracking;
  readonly bundle: GuestBundle;
  readonly watchdog: WatchdogSlot;
  readonly sandboxId: number;
  config(): SandboxConfig;
  transport(): SandboxFetchTransport;
  emitLog(entry: LogEntry): void;
  /** The engine instance failed in a way that makes any further call into it unsafe. */
  poisoned(reason: string): void;
}

/**
 * A realm's memory image (host/engine/memory-image.ts) and what a realm made from it needs
 * besides the bytes: where its runtime, context and hooks are in the engine's memory, and
 * the host references its guest functions call, by bridge function name.
 */
export interface RealmImage {
  readonly memory: MemoryImage;
  readonly runtimePointer: number;
  readonly contextPointer: number;
  /** In HOOK_NAMES order. */
  readonly hookPointers: readonly number[];
  /**
   * The runtime's host references, each as the bridge function name it was made for (null:
   * not a bridge function). Names, not the functions: those would keep the realm the image
   * was captured from alive as long as the image.
   */
  readonly hostRefs: HostRefState<string | null>;
  /** Where Math.random's state is in the context (host/engine/random-state.ts): reseeded after each restore. */
  readonly randomStateOffset: number;
  /** The guest modules loaded in it before the capture (preload), as ModuleUsage.key gives them. */
  readonly preloaded: string;
}

/** The guest core's hooks the host calls (guest-lib/core/index.ts). */
const HOOK_NAMES = ["dispatchTimer", "serialize", "deserialize", "describeError", "makeError", "stringify", "exportNames", "preload", "usedModules"] as const;
type Hooks = Record<(typeof HOOK_NAMES)[number], QuickJSHandle>;

/** A run's value as the host holds it: read directly (primitives) or encoded by the guest. */
type Captured = { direct: unknown } | { json: string; buffers: Uint8Array[] };

type Continuation = (value: QuickJSHandle) => void;

/** Free memory below which an uncaught `null` is taken for QuickJS's out-of-memory (see failWithGuestError). */
const OOM_PROBE_BYTES = 64 * 1024;

/** Error messages made for the guest keep at most this much of what they echo. */
const MAX_ERROR_MESSAGE_CHARS = 1024;

/**
 * The least wall time preloading a spare's modules gets (idle work, our own code only):
 * loading the web and http modules takes ~10-70 ms here, and a sandbox's own small
 * wallTimeMs would otherwise stop every preload, and so drop every spare and image of it.
 */
const PRELOAD_MIN_WALL_MS = 1000;

/** Jobs run between two checks of the deadline while draining the job queue (see pumpJobs). */
const JOB_BATCH = 64;

/** Thrown inside the realm when the engine instance has failed (wasm trap, host bug). */
class EnginePoisoned extends Error {}

/**
 * Thrown by newGuestString/newGuestBytes when the guest heap has no room for a host value:
 * the activation has already been stopped with kind `memory` (see Realm.stopForMemory);
 * callers only unwind, allocating nothing more in the engine.
 */
export class GuestMemoryError extends Error {}

/** Thrown by a bridge function to throw a guest value as is (the bridge passes it on unchanged). */
export class GuestThrow extends Error {
  constructor(readonly value: QuickJSHandle) {
    super("guest exception");
  }
}

export class Realm {
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  readonly guard: ExecutionGuard;
  private readonly hooks: Hooks;
  private readonly stopTracking: () => void;
  private readonly unhandled = new Map<bigint, { promise: QuickJSHandle; reason: QuickJSHandle }>();
  private readonly toRelease: QuickJSHandle[] = [];
  /** Handles the realm owns until it is disposed (plugin namespace, pending fetch deferreds, …). */
  private readonly owned = new Set<{ dispose(): void; alive: boolean }>();
  activation: Activation | null = null;
  /** The engine's failed memory growths when the current activation began (see failWithGuestError). */
  #failedGrowthsAtStart = 0;
  private main: { promise: QuickJSHandle; bits: bigint; then: Continuation } | null = null;
  private mainDone = false;
  private result: Captured | undefined;
  private finish: ((outcome: ActivationOutcome) => void) | null = null;
  private wallTimer: NodeJS.Timeout | null = null;
  private draining = false;
  /** An interrupt while the job queue was pumped can leave QuickJS unable to free the realm. */
  private interruptedInJobs = false;
  /**
   * Whether the current (or last) activation ran any guest code: a plugin call aborted
   * before its first entry (it waited behind another call) left the plugin as it was.
   */
  enteredGuest = false;
  /** An activation here ended with kind memory (see exhaustedHeap). */
  private hitMemoryLimit = false;
  private stackBytes = -1;
  private dead: string | null = null;
  /** A loaded plugin's module namespace. */
  private namespace: QuickJSHandle | null = null;
  /** This realm's bridge functions (what a memory image of it maps its host references to). */
  private readonly bridge: BridgeEntries;
  /**
   * Made from a memory image (or the realm an image was captured from): once its activation
   * has ended, its sandbox restores the image rather than freeing it (WorkerSandbox).
   */
  fromImage = false;

  /**
   * A new realm: built (runtime, context, bridge, the guest core), or, given `image`, made
   * around the runtime and context of a memory image its sandbox has just restored.
   */
  constructor(
    readonly services: RealmServices,
    image?: RealmImage,
  ) {
    const { engine, tracking, bundle } = services;
    const coreSource = bundle.source("core")!;
    // Staging the core's bytecode (or source) does not check malloc: at the memory cap it
    // would write through a null pointer. Fail the realm instead (acquireRealm reports it).
    if (image === undefined && !canLoadLibraryCode(engine, coreSource, "scriptbox:core")) throw new RangeError("no memory left to load the guest core");
    // From an image, nothing runs in the engine below but the library's and our bookkeeping
    // writes: the interrupt handler, module loader and rejection tracker fields, rewritten
    // with the values the image already has (and the tracker's new id).
    this.runtime = image === undefined ? engine.module.newRuntime() : runtimeAt(engine.module, image.runtimePointer);
    this.guard = new ExecutionGuard(services.watchdog, () => services.sandboxId);
    this.runtime.setInterruptHandler(this.guard.shouldInterrupt);
    this.runtime.setModuleLoader(
      (name) => this.loadModuleSource(name),
      (base, requested) => this.normalizeModuleName(base, requested),
    );
    this.stopTracking = tracking.attach(this.runtime, (_ctx, promiseBits, reasonBits, handled) =>
      this.onRejection(promiseBits, reasonBits, handled),
    );
    if (image !== undefined) {
      this.fromImage = true;
      this.context = this.runtime.newContext({ contextPointer: image.contextPointer as never });
      installLeanCalls(this.context, engine);
      this.bridge = bridgeFunctions(this);
      const byName = new Map(this.bridge);
      // The guest's bridge functions carry the image realm's host reference ids: the same
      // ids, this realm's functions. (Anything else the image held a reference to, such as
      // the core's `require`, is unreachable from guest code once the core has run.)
      setHostRefState(this.runtime, image.hostRefs, (name) => (name !== null && byName.get(name)) || (() => undefined));
      const hooks: Partial<Hooks> = {};
      HOOK_NAMES.forEach((name, i) => (hooks[name] = ownedHandle(this.context, image.hookPointers[i]!)));
      this.hooks = hooks as Hooks;
      return;
    }
    let bridge: QuickJSHandle;
    this.bridge = [];
    try {
      this.context = this.runtime.newContext();
      installLeanCalls(this.context, services.engine);
      this.bridge = bridgeFunctions(this);
      bridge = createBridge(this, this.bridge);
    } catch (error) {
      this.freeUnprepared(error);
    }
    const ctx = this.context;
    // Realm preparation is an entry into guest code like any other: under a deadline and
    // the watchdog (it runs only our own code, but on the worker every other sandbox shares).
    // No script has run in the realm yet, so wall time alone bounds it (Budget.wallOnly).
    const budget = this.ownBudget(true);
    let prepared: { factory: QuickJSHandle; require: QuickJSHandle; exports: QuickJSHandle };
    try {
      prepared = this.guard.enter(budget, () => {
        const factory = ctx.unwrapResult(evalLibraryCode(ctx, engine, coreSource, "scriptbox:core"));
        const require = ctx.newFunction("require", (name) =>
          ctx.getString(name) === "scriptbox:bridge" ? bridge.dup() : { error: ctx.newError("the core may only require the bridge") },
        );
        const made = ctx.callFunction(factory, ctx.undefined, require);
        if (made.error) {
          factory.dispose();
          require.dispose();
        }
        // unwrapResult frees a failure's error value (unwrap() would throw the handle itself).
        return { factory, require, exports: ctx.unwrapResult(made) };
      });
    } catch (error) {
      const stoppedBy = this.guard.interruptedBy;
      if (stoppedBy === null) {
        // The engine failed (a trap): nothing more is done in it; the sandbox is poisoned.
        if (error instanceof WebAssembly.RuntimeError) throw error;
        // Our own core failed to evaluate (its heap at the cap): free the realm like one
        // whose bridge could not be made.
        bridge.dispose();
        this.freeUnprepared(error);
      }
      // Interrupted in plain code, with no job queued: QuickJS frees such a runtime
      // cleanly (see freeable), and nothing of it is left behind in the engine.
      bridge.dispose();
      this.stopTracking();
      this.context.dispose();
      this.runtime.dispose();
      throw new RealmPreparationStopped(stoppedBy);
    }
    const { factory, require, exports } = prepared;
    this.guard.reset();
    let hooks: Hooks;
    try {
      // Read with fixed keys written into the engine once (host/engine/own-props.ts): the
      // library's getProp made each key anew, ten per realm.
      const { hooks: hooksObject } = readOwnProps(ctx, engine, exports, ["hooks"]);
      try {
        hooks = readOwnProps(ctx, engine, hooksObject, HOOK_NAMES);
      } finally {
        hooksObject.dispose();
      }
    } catch (error) {
      // No room to read them (the heap at its cap): free the realm like a failed core.
      for (const handle of [exports, require, factory, bridge]) handle.dispose();
      this.freeUnprepared(error);
    }
    this.hooks = hooks;
    for (const handle of [exports, require, factory, bridge]) handle.dispose();
  }

  get alive(): boolean {
    return this.dead === null;
  }

  /**
   * A realm whose context or bridge could not be made (the heap at its cap): frees what was
   * made, so nothing of it stays in the engine, and throws `error`. If freeing fails too
   * (QuickJS aborts freeing a runtime that still holds an object, which a failure halfway
   * through making a function can leave), the engine is unusable: a RuntimeError that
   * keeps the first failure's message. A run's realm then poisons the sandbox with that
   * message; a spare realm's failure is dropped (best effort, WorkerSandbox.prepareSpareSoon)
   * and the next realm the sandbox asks for fails on the aborted engine and poisons it.
   */
  private freeUnprepared(error: unknown): never {
    try {
      this.stopTracking();
      (this.context as QuickJSContext | undefined)?.dispose();
      this.runtime.dispose();
    } catch (cleanup) {
      const first = error instanceof Error ? error.message : String(error);
      throw new WebAssembly.RuntimeError(`${first}; then freeing the unprepared realm failed: ${(cleanup as Error).message}`);
    }
    throw error;
  }

  /**
   * Whether QuickJS can free this realm. After an interrupt inside the job queue (a promise
   * chain stopped by a limit), or with jobs still queued, JS_FreeRuntime can abort on
   * objects QuickJS itself still references (reproduced with bare quickjs-emscripten),
   * which would kill the whole engine instance; such realms are parked instead (see
   * WorkerSandbox). An interrupt in plain code (a busy loop) frees normally.
   */
  get freeable(): boolean {
    return this.alive && !this.interruptedInJobs && !this.runtime.hasPendingJob();
  }

  /**
   * Whether an activation in this realm ran the heap out of memory. QuickJS's paths at the
   * cap are its least tried: after such a run, freeing the realm and running the next one
   * in the same engine instance trapped in malloc in about half of our attempts (an
   * import() at the cap after a run that had failed at the cap), while a fresh instance
   * never did (test/tenancy/guest-memory.test.ts). So WorkerSandbox drops the instance.
   */
  get exhaustedHeap(): boolean {
    return this.hitMemoryLimit;
  }

  /**
   * A memory image of the engine with this realm in it, or null (see MemoryImage.capture).
   * Only for a realm no activation has entered, in an engine that holds no other realm:
   * the image is the whole heap, and every realm made from it starts as this one is now.
   */
  captureImage(randomStateOffset: number, preloaded: string): RealmImage | null {
    if (!this.alive || this.activation !== null || this.enteredGuest) return null;
    const memory = MemoryImage.capture(this.services.engine);
    if (memory === null) return null;
    const bridgeNames = new Map<object, string>();
    for (const [name, fn] of this.bridge) bridgeNames.set(fn, name);
    const refs = hostRefState(this.runtime);
    this.fromImage = true;
    return {
      memory,
      runtimePointer: runtimePointer(this.runtime),
      contextPointer: contextPointer(this.context),
      hookPointers: HOOK_NAMES.map((name) => handleValuePointer(this.hooks[name])),
      hostRefs: { ...refs, entries: refs.entries.map(([id, value]) => [id, bridgeNames.get(value) ?? null]) },
      randomStateOffset,
      preloaded,
    };
  }

  // ---- modules --------------------------------------------------------------------------

  /**
   * Names stay as written: builtins are bare names, and a script given as source has no
   * files, so a relative name is only ever refused (files run by path arrive bundled).
   */
  private normalizeModuleName(_base: string, requested: string): string {
    return requested;
  }

  private loadModuleSource(name: string): string | { error: Error } {
    const source = this.services.bundle.publicModuleSource(name) ?? hostModuleSource(this, name);
    if (source !== undefined) {
      if (!canCompile(this.services.engine, source.length)) {
        try {
          this.stopForMemory(`no room to load the ${name} module`);
        } catch {
          // The activation is already ending with kind memory. Making an Error in the guest
          // would allocate in a heap that has no room (quickjs-emscripten's newError stages
          // its message unchecked): throw the guest's null instead, which allocates
          // nothing (the library throws a handle it is given as is).
          return { error: this.context.null as unknown as Error };
        }
      }
      return source;
    }
    const builtins = this.services.bundle.availablePublicModules.join(", ");
    if (name.startsWith("/") || name.startsWith(".")) {
      return {
        error: new Error(
          `Cannot import "${name}": a script run from source has no files to import (give run() a resolveDir, or run the file: scriptbox run <file> bundles a script's relative imports); builtin modules: ${builtins}`,
        ),
      };
    }
    return { error: new Error(`Cannot find module "${name}": scripts can import the builtin modules ${builtins}; packages are bundled for script files (scriptbox run, runFile) and for run() with a resolveDir`) };
  }

  /** Bridge function: evaluates guest module `name` in this context and returns its factory. */
  loadGuestModule(name: string): QuickJSHandle {
    const source = this.services.bundle.source(name);
    if (source === undefined || name === "core") throw new TypeError(`no guest module named ${name}`);
    // Checked for the whole evaluation, not only for staging the bytecode (or source): the
    // first load of a lazy module near the cap must stop the run with kind memory, never
    // trap the engine or spin in its compiler (canCompile: the heap the module takes once
    // loaded and run, measured per source character, whichever form is loaded).
    const filename = `scriptbox:${name}`;
    const engine = this.services.engine;
    if (!canLoadLibraryCode(engine, source, filename) || !canCompile(engine, source.length)) this.stopForMemory(`no room to load the ${name} module`);
    const evaluated = evalLibraryCode(this.context, engine, source, filename);
    if (evaluated.error === undefined) return evaluated.value;
    // Our own module sources are valid: a failure to evaluate one is the interrupt (pass it
    // on: the activation ends with its kind), the stack limit (a guest error the script may
    // catch, as for its own code), or the heap (QuickJS then throws null or reports bogus
    // syntax errors): kind memory.
    if (this.guard.interruptedBy !== null || this.isStackOverflow(evaluated.error)) throw new GuestThrow(evaluated.error);
    evaluated.error.dispose();
    this.stopForMemory(`no room to load the ${name} module`);
  }

  /** Whether a guest error is QuickJS's "stack overflow" (read from the host: no guest code runs). */
  private isStackOverflow(error: QuickJSHandle): boolean {
    if (this.context.typeof(error) !== "object" || this.context.sameValue(error, this.context.null)) return false;
    const message = this.context.getProp(error, "message");
    const text = this.context.typeof(message) === "string" ? this.context.getString(message) : "";
    message.dispose();
    return text === "stack overflow";
  }

  /**
   * The budget for our own code run outside any activation (the post-run module-usage hook):
   * the sandbox's own CPU and wall limits, so a script that broke something these hooks use
   * is stopped exactly like the script itself would be. `wallOnly` (realm preparation, and
   * preloading with `atLeastMs`, before any script): the wall limit (or `atLeastMs`, if more) alone, without
   * reading the thread's CPU clock (Budget.wallOnly). Not the CPU limit as wall time: no
   * script can make a fresh realm's preparation slow, but a busy machine can stretch its
   * ~0.3 ms of CPU past a small cpuTimeMs in wall time, and every run of such a sandbox
   * then failed before its script started (a CLI test under CI load did, at 50 ms).
   */
  private ownBudget(wallOnly = false, atLeastMs = 0): Budget {
    let limits: Pick<Limits, "cpuTimeMs" | "wallTimeMs"> = DEFAULT_LIMITS;
    try {
      limits = this.services.config().limits;
    } catch {
      // Not configured yet (a warm pool's spare realm): the default limits.
    }
    const now = performance.now();
    if (wallOnly) return { wallOnly, wallDeadline: now + Math.max(limits.wallTimeMs, atLeastMs), cpuRemainingMs: () => limits.cpuTimeMs, chargeCpu: () => undefined };
    return { wallDeadline: now + limits.wallTimeMs, cpuRemainingMs: () => limits.cpuTimeMs, chargeCpu: () => undefined };
  }

  /** Runs our own guest code outside any activation, guarded by ownBudget(); undefined on any failure. */
  /** `wallOnlyAtLeastMs`: a wall-only budget (ownBudget) of at least this many ms; the sandbox's own limits when absent. */
  private ownCode<T>(fn: () => { value?: QuickJSHandle; error?: QuickJSHandle }, use: (value: QuickJSHandle) => T, wallOnlyAtLeastMs?: number): T | undefined {
    if (this.activation || !this.alive) return undefined;
    try {
      let result: { value?: QuickJSHandle; error?: QuickJSHandle };
      try {
        result = this.guard.enter(this.ownBudget(wallOnlyAtLeastMs !== undefined, wallOnlyAtLeastMs), fn);
      } catch (error) {
        // A trap in our own hook (the heap at its cap) disposes the sandbox now, in this
        // turn; it never escapes as a raw RuntimeError.
        this.poison(error);
        return undefined;
      }
      if (result.error) {
        result.error.dispose();
        return undefined;
      }
      try {
        return this.guard.interruptedBy === null ? use(result.value!) : undefined;
      } finally {
        result.value!.dispose();
      }
    } finally {
      this.guard.reset();
    }
  }

  /**
   * Loads guest modules ahead of use, in a realm no script has run in yet; false when one
   * of them did not load completely (its budget ran out, or it failed): such a realm may
   * hold a module half loaded (QuickJS's interrupt skips `finally`, so the core's loader can
   * keep it marked as loading) and must not serve a run. Under a wall deadline alone, as the
   * realm's preparation (Budget.wallOnly), of at least PRELOAD_MIN_WALL_MS: no script can
   * make it slow, and loading the web and http modules (~12-20 ms of CPU here) is not the
   * script's work, so a sandbox's small cpuTimeMs or wallTimeMs must not make every spare fail.
   */
  preload(names: string[]): boolean {
    // Nothing to load: no guest call (the core requires no module while it is built, so
    // there is no use to forget either). Most spare realms are built so, once per run.
    if (names.length === 0) return true;
    let complete = true;
    for (const name of names) {
      const nameHandle = this.context.newString(name);
      complete = this.ownCode(() => this.context.callFunction(this.hooks.preload, this.context.undefined, nameHandle), () => true, PRELOAD_MIN_WALL_MS) === true && complete;
      nameHandle.dispose();
      if (!complete) break;
    }
    this.usedModules(); // preloading is not use
    return complete;
  }

  /** The guest modules required since the last call (names without the "scriptbox:" prefix). */
  usedModules(): string[] {
    const names = this.ownCode(
      () => this.context.callFunction(this.hooks.usedModules, this.context.undefined),
      (value) => {
        // Usage statistics: nothing in them is worth failing the engine over.
        try {
          const parsed: unknown = JSON.parse(this.context.getString(value));
          return Array.isArray(parsed) ? parsed.filter((name): name is string => typeof name === "string") : [];
        } catch {
          return [];
        }
      },
    );
    return (names ?? []).map((name) => name.replace(/^scriptbox:/, ""));
  }

  // ---- activations ----------------------------------------------------------------------

  /** Evaluates a script module; calls its default export with `input`; awaits everything. */
  run(code: string, filename: string, input: unknown, control: ActivationControl = NO_CONTROL): Promise<ActivationOutcome> {
    return this.activate("run", control, () => {
      if (!this.hasRoomForSource(code)) return;
      const evaluated = this.enterGuest(() => this.context.evalCode(code, filename, { type: "module" }), filename);
      if (evaluated === null) return;
      this.await(evaluated, (namespace) => {
        const fn = this.context.getProp(namespace, "default");
        namespace.dispose();
        const isNull = this.context.sameValue(fn, this.context.null);
        const type = isNull ? "null" : this.context.typeof(fn);
        if (type !== "function") {
          fn.dispose();
          // A default export that is not a function is not called; say so rather than
          // finish silently, and fail when there was an input it could not be given.
          if (type !== "undefined") {
            const what = `the module's default export is ${type === "null" ? "null" : type === "object" ? "an object" : `a ${type}`}, not a function`;
            if (input !== undefined) return this.activation!.fail("script", "TypeError", `${what}: the input has nothing to be passed to (export default a function that takes it)`);
            this.activation!.log("warn", `[scriptbox] ${what}, so it was not called (export default a function to return a result)`);
          }
          return this.complete(undefined);
        }
        const argument = this.toGuest(input, "input");
        if (argument === null) return fn.dispose();
        const returned = this.enterGuest(() => this.context.callFunction(fn, this.context.undefined, argument));
        fn.dispose();
        argument.dispose();
        if (returned !== null) this.await(returned, (value) => this.complete(value));
      });
    });
  }

  /** Evaluates a plugin module and keeps its namespace for later calls. */
  load(code: string, filename: string, control: ActivationControl = NO_CONTROL): Promise<ActivationOutcome> {
    let exports: string[] = [];
    return this.activate("load", control, () => {
      if (!this.hasRoomForSource(code)) return;
      const evaluated = this.enterGuest(() => this.context.evalCode(code, filename, { type: "module" }), filename);
      if (evaluated === null) return;
      this.await(evaluated, (namespace) => {
        this.namespace = namespace;
        // Listed inside the activation: the listing is guest code under the load's limits.
        const names = this.exportNames();
        if (names === null) return;
        exports = names;
        this.complete(undefined);
      });
    }).then((outcome) => (outcome.ok ? { ...outcome, exports } : outcome));
  }

  /** Whether the script's source fits in the guest heap (evalCode stages it unchecked); records kind memory if not. */
  private hasRoomForSource(code: string): boolean {
    // Compiling takes heap beyond the staged text (a realm shares its engine's heap with
    // plugins' realms, which may have filled it): the slack keeps the compiler off the cap
    // (see canCompile), at a lower factor than our minified modules need, since scripts are
    // rarely minified and a large one is not refused for room it would not use.
    if (canAllocate(this.services.engine, code.length * 3, code.length * 4)) return true;
    this.activation!.failLimit("memory", `${this.activation!.memoryLimitMessage()}: no room for the script's source (${code.length} characters)`);
    return false;
  }

  /** Calls a plugin export with arguments; awaits its result and everything it started. */
  call(name: string, args: unknown[], control: ActivationControl = NO_CONTROL): Promise<ActivationOutcome> {
    return this.activate("call", control, () => {
      const namespace = this.namespace!;
      const fn = this.context.getProp(namespace, name);
      if (this.context.typeof(fn) !== "function") {
        fn.dispose();
        const exports = this.exportNames();
        if (exports === null) return;
        this.activation!.fail(
          "script",
          "TypeError",
          `the plugin has no exported function "${name}" (its exports: ${exports.length ? exports.join(", ") : "none"})`,
        );
        return;
      }
      const handles: QuickJSHandle[] = [];
      for (let i = 0; i < args.length; i++) {
        const handle = this.toGuest(args[i], `args[${i}]`);
        if (handle === null) {
          for (const made of [fn, ...handles]) made.dispose();
          return;
        }
        handles.push(handle);
      }
      const returned = this.enterGuest(() => this.context.callFunction(fn, this.context.undefined, handles));
      for (const handle of [fn, ...handles]) handle.dispose();
      if (returned !== null) this.await(returned, (value) => this.complete(value));
    });
  }

  /** The plugin's export names, listed by the guest under the current activation's limits; null after a failure. */
  private exportNames(): string[] | null {
    const namespace = this.namespace!;
    // The guest lists them (getOwnPropertyNames can read a stale view; see fresh-views.ts).
    const listed = this.enterGuest(() => this.context.callFunction(this.hooks.exportNames, this.context.undefined, namespace));
    if (listed === null) return null;
    const names = JSON.parse(this.context.getString(listed)) as string[];
    listed.dispose();
    return names.sort();
  }

  /** A promise the host settles later (see fresh-views.ts for why not context.newPromise). */
  newDeferred() {
    return newDeferredPromise(this.services.engine, this.context);
  }

  private activate(kind: ActivationKind, control: ActivationControl, start: () => void): Promise<ActivationOutcome> {
    if (!this.alive) return Promise.resolve(this.deadOutcome(kind));
    if (this.activation) throw new Error(`realm is busy with a ${this.activation.kind}`);
    const config = this.services.config();
    const activation = new Activation(kind, config.limits, config.streamLogs ? (entry) => this.services.emitLog(entry) : null, control);
    this.activation = activation;
    this.#failedGrowthsAtStart = this.services.engine.failedGrowths();
    // An abort that arrives while the activation waits (timers, fetches) ends it at once;
    // one that arrives while guest code runs is seen by the interrupt handler instead.
    control.setAborter(() => {
      if (this.activation !== activation || activation.finished) return;
      activation.fail("aborted", "AbortError", ABORTED_MESSAGE);
      this.guestTask(() => undefined);
    });
    this.guard.reset();
    this.enteredGuest = false;
    if (this.stackBytes !== config.limits.stackBytes) {
      this.stackBytes = config.limits.stackBytes;
      this.runtime.setMaxStackSize(this.stackBytes);
    }
    this.mainDone = false;
    this.main = null;
    this.result = undefined;
    return new Promise<ActivationOutcome>((resolve) => {
      this.finish = resolve;
      this.guestTask(start);
      // Most calls finish synchronously; only one that goes on waiting needs a wall timer
      // (the interrupt handler enforces the same deadline while guest code runs).
      if (!activation.finished) this.armWallTimer(activation);
    });
  }

  /** Ends the activation at its wall deadline (re-armed if Node's timer fires early). */
  private armWallTimer(activation: Activation): void {
    this.wallTimer = setTimeout(() => {
      if (performance.now() < activation.wallDeadline) return this.armWallTimer(activation);
      activation.failLimit("timeout", activation.wallLimitMessage());
      this.end();
    }, Math.max(1, Math.ceil(activation.wallDeadline - performance.now())));
  }

  /** Makes `value` the activation's main result: waits for it if it is a promise. */
  private await(value: QuickJSHandle, then: Continuation): void {
    const state = this.context.getPromiseState(value);
    if (state.type === "fulfilled" && state.notAPromise) return then(value);
    if (state.type === "pending") {
      this.main = { promise: value, bits: this.valueBits(value), then };
      return;
    }
    value.dispose();
    if (state.type === "fulfilled") then(state.value);
    else this.failWithGuestError(state.error, null);
  }

  /** The main value is final: snapshot it for the host (the awaited value, as returned). */
  private complete(value: QuickJSHandle | undefined): void {
    this.mainDone = true;
    if (value === undefined) {
      this.result = { direct: undefined };
      return;
    }
    const ctx = this.context;
    // Primitives are read directly; strings go through JSON (getString stops at a NUL).
    switch (ctx.typeof(value)) {
      case "undefined":
        value.dispose();
        this.result = { direct: undefined };
        return;
      case "number":
        this.result = { direct: ctx.getNumber(value) };
        value.dispose();
        return;
      case "boolean":
        this.result = { direct: ctx.dump(value) as boolean };
        value.dispose();
        return;
      case "string": {
        const json = this.enterGuest(() => ctx.callFunction(this.hooks.stringify, ctx.undefined, value));
        value.dispose();
        if (json !== null) {
          this.result = { direct: JSON.parse(this.jsonText(json)) as string };
          json.dispose();
        }
        return;
      }
      case "object":
        if (ctx.sameValue(value, ctx.null)) {
          value.dispose();
          this.result = { direct: null };
          return;
        }
    }
    const name = this.context.newString("result");
    const encoded = this.enterGuest(() => this.context.callFunction(this.hooks.serialize, this.context.undefined, value, name));
    name.dispose();
    value.dispose();
    if (encoded === null) return;
    const json = this.context.getProp(encoded, 0);
    const buffers = this.context.getProp(encoded, 1);
    // (Not getLength: in quickjs-emscripten 0.32 it can read a stale view; see fresh-views.ts.)
    const lengthHandle = this.context.getProp(buffers, "length");
    const count = this.context.getNumber(lengthHandle);
    lengthHandle.dispose();
    const bytes: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      const buffer = this.context.getProp(buffers, i);
      // getArrayBuffer's view dies when the wasm heap grows: copy at once.
      bytes.push(this.context.getArrayBuffer(buffer).consume((view) => view.value.slice()));
      buffer.dispose();
    }
    this.result = { json: this.jsonText(json), buffers: bytes };
    for (const handle of [json, buffers, encoded]) handle.dispose();
  }

  /**
   * JSON text the guest's marshal module wrote: one string, or a list of parts joined here
   * (guest-lib/marshal/values.ts serialize: in the guest, the join of a large result was one
   * native call the interrupt does not reach).
   */
  private jsonText(handle: QuickJSHandle): string {
    const ctx = this.context;
    if (ctx.typeof(handle) === "string") return ctx.getString(handle);
    const lengthHandle = ctx.getProp(handle, "length");
    const count = ctx.getNumber(lengthHandle);
    lengthHandle.dispose();
    const parts: string[] = [];
    for (let i = 0; i < count; i++) {
      const part = ctx.getProp(handle, i);
      parts.push(ctx.getString(part));
      part.dispose();
    }
    return parts.join("");
  }

  /** Copies a host value into the guest (through the core's deserialize hook). */
  toGuest(value: unknown, what: string): QuickJSHandle | null {
    const ctx = this.context;
    if (value === undefined) return ctx.undefined;
    if (value === null) return ctx.null;
    if (typeof value === "boolean") return value ? ctx.true : ctx.false;
    if (typeof value === "number") return ctx.newNumber(value);
    // newString goes through a C string: safe for text without NULs or lone surrogates.
    if (typeof value === "string" && value.length < 4096 && !/[\0\ud800-\udfff]/.test(value)) return ctx.newString(value);
    const { json, buffers } = encodeForGuest(value);
    const total = buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
    if (!canMoveString(this.services.engine, json.length) || !canMoveBytes(this.services.engine, total)) {
      this.activation!.failLimit("memory", `${this.activation!.memoryLimitMessage()}: no room for the ${what} (${json.length + total} bytes)`);
      return null;
    }
    const jsonHandle = ctx.newString(json);
    const array = ctx.newArray();
    buffers.forEach((buffer, i) => {
      const handle = ctx.newArrayBuffer(buffer);
      // Defined, not set: setting an index would call a setter a script put on Array.prototype.
      ctx.defineProp(array, i, { value: handle, enumerable: true });
      handle.dispose();
    });
    // Plain JSON (no marker, no bytes: most inputs) is only parsed in the guest; the walk that
    // puts markers back cost ~10 µs of interpreter time per object (10,000 records: ~100 ms).
    const plain = buffers.length === 0 && !json.includes('"$sbx"') ? ctx.true : ctx.false;
    const decoded = this.enterGuest(() => ctx.callFunction(this.hooks.deserialize, ctx.undefined, jsonHandle, array, plain));
    jsonHandle.dispose();
    array.dispose();
    return decoded;
  }

  /**
   * Host text into the guest heap (bridge results, error messages): headroom is checked
   * first, since quickjs-emscripten's staging malloc is unchecked and a failure at the cap
   * corrupts the engine. No room: the activation stops with kind `memory` and this throws
   * GuestMemoryError. Every host-to-guest string goes through here (host modules too).
   */
  newGuestString(text: string, what = "a string"): QuickJSHandle {
    if (!canMoveString(this.services.engine, text.length)) this.stopForMemory(`no room for ${what} (${text.length} characters)`);
    return this.context.newString(text);
  }

  /** Host bytes into the guest heap, as newGuestString. */
  newGuestBytes(buffer: ArrayBuffer, what = "bytes"): QuickJSHandle {
    if (!canMoveBytes(this.services.engine, buffer.byteLength)) this.stopForMemory(`no room for ${what} (${buffer.byteLength} bytes)`);
    return this.context.newArrayBuffer(buffer);
  }

  /** Ends the activation with kind `memory` (uncatchable: the engine stops at its next check). */
  stopForMemory(detail: string): never {
    const activation = this.activation;
    activation?.failLimit("memory", `${activation.memoryLimitMessage()}: ${detail}`);
    this.guard.stopNow("limit");
    throw new GuestMemoryError(detail);
  }

  // ---- entering the guest and the event loop ----------------------------------------------

  /**
   * Runs `fn` (a call into the engine) under the activation's budgets. Returns the value,
   * or null after recording the failure (guest exception, limit, or a poisoned engine).
   */
  enterGuest(fn: () => { value?: QuickJSHandle; error?: QuickJSHandle }, evaluatingModule: string | null = null): QuickJSHandle | null {
    const activation = this.activation!;
    if (this.stoppedBeforeEntry(activation)) return null;
    this.enteredGuest = true;
    let result: { value?: QuickJSHandle; error?: QuickJSHandle };
    try {
      result = this.guard.enter(activation, fn);
    } catch (error) {
      throw this.poison(error);
    }
    if (result.error !== undefined) {
      this.failWithGuestError(result.error, evaluatingModule);
      return null;
    }
    if (this.guard.interruptedBy !== null) {
      result.value?.dispose();
      this.failInterrupted("");
      return null;
    }
    return result.value!;
  }

  /**
   * An activation told to stop (abort, dispose, or withdrawn to run again elsewhere) ends
   * before its next guest entry. The interrupt handler would stop it too, but QuickJS asks
   * the handler only every few thousand operations: a guest calling a slow native function
   * (a search through a 16 MB string) in a short loop would run that call to its end first.
   */
  private stoppedBeforeEntry(activation: Activation): boolean {
    if (!activation.stopRequested()) return false;
    activation.fail("aborted", "AbortError", ABORTED_MESSAGE);
    return true;
  }

  /** Runs a unit of host-triggered guest work (timer, fetch completion) and then the loop. */
  guestTask(work: () => void): void {
    const activation = this.activation;
    if (!activation || activation.finished || !this.alive) return;
    try {
      if (activation.failure === null) work();
      this.drain();
    } catch (error) {
      // GuestMemoryError: the activation already failed with kind memory; nothing is broken.
      if (!(error instanceof EnginePoisoned) && !(error instanceof GuestMemoryError)) this.poison(error);
    }
    this.settleIfDone();
  }

  /** Drains the job queue, then reacts: unhandled rejections, the main promise settling. */
  private drain(): void {
    const activation = this.activation!;
    if (this.draining) return;
    this.draining = true;
    try {
      while (activation.failure === null) {
        if (this.runtime.hasPendingJob()) {
          if (this.stoppedBeforeEntry(activation)) continue;
          this.enteredGuest = true;
          let jobs;
          try {
            jobs = this.guard.enter(activation, () => this.pumpJobs());
          } catch (error) {
            throw this.poison(error);
          }
          if (this.guard.interruptedBy !== null) this.interruptedInJobs = true;
          if (jobs.error) {
            const error = jobs.error;
            this.failWithGuestError(error, null);
            continue;
          }
          if (this.guard.interruptedBy !== null) this.failInterrupted("");
          continue;
        }
        this.releaseHandled();
        if (this.reportUnhandledRejection()) continue;
        if (this.main !== null) {
          const state = this.context.getPromiseState(this.main.promise);
          if (state.type !== "pending") {
            const { promise, then } = this.main;
            this.main = null;
            this.forgetUnhandled(this.valueBits(promise));
            promise.dispose();
            if (state.type === "fulfilled") then(state.value);
            else this.failWithGuestError(state.error, null);
            continue;
          }
          // Nothing can settle the main promise any more (no job, timer, fetch or host call
          // pending) and the heap is full: QuickJS dropped a job it could not allocate (an
          // import() at the cap leaves its promise pending forever). Waiting for wallTimeMs
          // would only hide the cause.
          if (!activation.hasPendingWork && !canAllocate(this.services.engine, OOM_PROBE_BYTES, OOM_PROBE_BYTES)) {
            activation.failLimit("memory", `${activation.memoryLimitMessage()}: out of memory (the script awaits a promise the engine could not settle)`);
            continue;
          }
        }
        break;
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * Runs queued jobs in batches, asking the interrupt handler between batches: a job that
   * only queues more jobs (`f = () => { P.then(f); P.then(f) }`) has no loop in which
   * QuickJS would call the handler itself, so without this a promise flood would run until
   * the watchdog killed the worker.
   */
  private pumpJobs(): ReturnType<typeof executePendingJobs> {
    let executed = 0;
    for (;;) {
      const step = executePendingJobs(this.services.engine, this.runtime, this.context, JOB_BATCH);
      if (step.error) return step;
      executed += step.executed;
      if (step.executed < JOB_BATCH || !this.runtime.hasPendingJob() || this.guard.shouldInterrupt()) return { executed };
    }
  }

  private settleIfDone(): void {
    const activation = this.activation;
    if (!activation || activation.finished) return;
    if (activation.failure !== null || (this.mainDone && !activation.hasPendingWork)) this.end();
  }

  /** Ends the current activation: cancels what is pending, reports the outcome. */
  private end(): void {
    const activation = this.activation;
    if (!activation || activation.finished) return;
    activation.finished = true;
    if (this.wallTimer) clearTimeout(this.wallTimer);
    this.wallTimer = null;
    activation.cancelPending();
    if (this.main !== null && this.alive) this.main.promise.dispose();
    this.main = null;
    let value: unknown;
    let failure: SandboxError | null = activation.failure;
    if (failure?.kind === "memory") this.hitMemoryLimit = true;
    if (failure === null && this.result !== undefined) {
      try {
        value = "direct" in this.result ? this.result.direct : decodeFromGuest(this.result.json, this.result.buffers);
      } catch (error) {
        failure = { kind: "script", name: "TypeError", message: `result: ${(error as Error).message}`, stack: "" };
      }
    }
    if (failure === null && this.result === undefined) {
      failure = { kind: "script", name: "Error", message: "the script finished without a result", stack: "" };
    }
    const outcome: ActivationOutcome = {
      ok: failure === null,
      ...(failure === null ? { value } : { error: failure }),
      logs: activation.logs,
      stats: {
        cpuTimeMs: Math.round(activation.cpuUsedMs * 1000) / 1000,
        wallTimeMs: Math.round(activation.wallTimeMs * 1000) / 1000,
        memoryBytes: this.services.engine.memory.buffer.byteLength,
        fetches: activation.fetchCounter.fetches,
      },
      ...(this.dead !== null ? { sandboxDisposed: this.dead } : {}),
    };
    this.activation = null;
    this.result = undefined;
    const finish = this.finish;
    this.finish = null;
    finish?.(outcome);
  }

  // ---- failures ---------------------------------------------------------------------------

  private failInterrupted(stack: string): void {
    const activation = this.activation!;
    const reason = this.guard.interruptedBy;
    if (reason === "aborted") activation.fail("aborted", "AbortError", ABORTED_MESSAGE, stack);
    else if (reason === "timeout") activation.failLimit("timeout", activation.wallLimitMessage(), stack);
    else if (reason === "cpu") activation.failLimit("cpu", activation.cpuLimitMessage(), stack);
    // "limit": the bridge function that stopped the engine has recorded the failure.
    else activation.failLimit("limit", "a limit stopped the script", stack);
  }

  /** Records a guest exception as the activation's failure, classifying limits. */
  private failWithGuestError(error: QuickJSHandle, evaluatingModule: string | null, origin?: "unhandled-rejection"): void {
    const activation = this.activation!;
    if (this.guard.interruptedBy !== null) {
      const stack = this.readStack(error);
      error.dispose();
      return this.failInterrupted(stack);
    }
    // At the memory cap QuickJS cannot even allocate its "out of memory" error and throws
    // null instead: an uncaught null is the memory limit, not `Uncaught null`, when the
    // engine failed to get memory during this activation or has no room left. (The room alone
    // was not enough: by now the unwound frames have freed what filled the heap, and
    // `for (;;) a.push({})` ended as a script error, "Uncaught null".)
    if (
      this.context.sameValue(error, this.context.null) &&
      (this.services.engine.failedGrowths() !== this.#failedGrowthsAtStart || !canAllocate(this.services.engine, OOM_PROBE_BYTES, OOM_PROBE_BYTES))
    ) {
      error.dispose();
      return activation.failLimit("memory", `${activation.memoryLimitMessage()}: out of memory`);
    }
    const described = this.describe(error);
    error.dispose();
    // Describing it ran guest code (getters on the thrown value) that a limit stopped.
    if (this.guard.interruptedBy !== null) return this.failInterrupted(described.stack);
    const { name, message, stack } = described;
    if (name === "InternalError" && message === "out of memory") {
      return activation.failLimit("memory", `${activation.memoryLimitMessage()}: out of memory`, stack);
    }
    // QuickJS reports deep nesting in JSON.parse and in the parser as SyntaxError "stack
    // overflow", and recursion as InternalError: all of them hit stackBytes (docs/limits.md).
    if ((name === "InternalError" || name === "SyntaxError") && message === "stack overflow") {
      return activation.failLimit("limit", `stackBytes limit (${activation.limits.stackBytes} bytes) exceeded: stack overflow`, stack);
    }
    // A parse error of the module has one frame, without a function, in the module's own
    // file: "    at job.js:3:7" (JSON.parse's errors say "<input>:1:2").
    const parseLocation = /^\s*at ([^\s()]+):(\d+:\d+)\s*$/.exec(stack.split("\n")[0] ?? "");
    if (evaluatingModule !== null && name === "SyntaxError" && parseLocation && parseLocation[1] === evaluatingModule) {
      return activation.fail("syntax", name, `${parseLocation[1]}:${parseLocation[2]}: ${message}`, stack);
    }
    // Refusals by the host say what they are in their message's first words (the fetch
    // transport's contract): uncaught, they classify the run.
    if (message.startsWith("network policy: ")) return activation.fail("network-policy", name, message, stack, origin);
    if (message.startsWith("limit: ")) return activation.fail("limit", name, message, stack, origin);
    activation.fail("script", name, message, stack, origin);
  }

  private describe(error: QuickJSHandle): { name: string; message: string; stack: string } {
    try {
      const described = this.guard.enter(this.activation!, () =>
        this.context.callFunction(this.hooks.describeError, this.context.undefined, error),
      );
      if (!described.error) {
        const json = this.context.getString(described.value);
        described.value.dispose();
        return JSON.parse(json) as { name: string; message: string; stack: string };
      }
      described.error.dispose();
    } catch (cause) {
      if (cause instanceof EnginePoisoned) throw cause;
    }
    // The guest library itself could not run (a script broke what it needs, such as
    // Object.defineProperty): read the error's own properties from the host instead.
    return this.describeFromHost(error);
  }

  private describeFromHost(error: QuickJSHandle): { name: string; message: string; stack: string } {
    const ctx = this.context;
    if (ctx.typeof(error) !== "object") {
      const type = ctx.typeof(error);
      const shown = type === "string" ? `'${ctx.getString(error)}'` : type === "number" ? String(ctx.getNumber(error)) : type;
      return { name: "Error", message: `Uncaught ${shown}`, stack: "" };
    }
    const read = (key: string): string => {
      try {
        const value = this.guard.enter(this.activation!, () => ({ value: ctx.getProp(error, key) })).value;
        const text = ctx.typeof(value) === "string" ? ctx.getString(value) : "";
        value.dispose();
        return text;
      } catch (cause) {
        if (cause instanceof EnginePoisoned) throw cause;
        return "";
      }
    };
    return { name: read("name") || "Error", message: read("message") || "an exception that could not be described", stack: read("stack") };
  }

  /** Reads an error's stack without running guest code (used when the engine is interrupted). */
  private readStack(error: QuickJSHandle): string {
    if (this.context.typeof(error) !== "object") return "";
    // A getter on "stack" is guest code: entered under the guard, which is already stopping
    // the engine (interruptedBy is set), so it cannot run past its first check.
    let stack: QuickJSHandle;
    try {
      stack = this.guard.enter(this.activation!, () => this.context.getProp(error, "stack"));
    } catch {
      return "";
    }
    const text = this.context.typeof(stack) === "string" ? this.context.getString(stack) : "";
    stack.dispose();
    return text;
  }

  /** Makes a real guest error (instanceof TypeError works) for a bridge function to throw. */
  guestError(name: "TypeError" | "RangeError" | "Error", message: string): QuickJSHandle {
    const ctx = this.context;
    // Messages may echo guest input (a secret's name, a URL): a bounded echo, and headroom
    // checked like any host value (newGuestString throws GuestMemoryError when full).
    const shown = message.length > MAX_ERROR_MESSAGE_CHARS ? `${message.slice(0, MAX_ERROR_MESSAGE_CHARS)}… (${message.length} characters)` : message;
    const nameHandle = this.newGuestString(name);
    let messageHandle: QuickJSHandle;
    try {
      messageHandle = this.newGuestString(shown, "an error message");
    } catch (error) {
      nameHandle.dispose();
      throw error;
    }
    const made = ctx.callFunction(this.hooks.makeError, ctx.undefined, nameHandle, messageHandle);
    nameHandle.dispose();
    messageHandle.dispose();
    if (made.error) return made.error;
    return made.value;
  }

  /** A limit was hit inside a bridge call: record it and stop the engine at its next check. */
  stopForLimit(message: string): void {
    this.activation?.failLimit("limit", message);
    this.guard.stopNow("limit");
  }

  private poison(error: unknown): EnginePoisoned {
    const reason = `the sandbox's engine failed (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}); the sandbox was disposed`;
    if (this.dead === null) {
      this.dead = reason;
      this.activation?.fail(error instanceof WebAssembly.RuntimeError ? "memory" : "script", "InternalError", reason);
      this.services.poisoned(reason);
    }
    return new EnginePoisoned(reason);
  }

  private deadOutcome(kind: ActivationKind): ActivationOutcome {
    return {
      ok: false,
      error: { kind: "script", name: "Error", message: `cannot ${kind}: ${this.dead}`, stack: "" },
      logs: [],
      stats: { cpuTimeMs: 0, wallTimeMs: 0, memoryBytes: 0, fetches: 0 },
      sandboxDisposed: this.dead ?? "disposed",
    };
  }

  // ---- unhandled rejections ------------------------------------------------------------------

  private onRejection(promiseBits: bigint, reasonBits: bigint, handled: boolean): void {
    if (!handled) {
      if (this.unhandled.has(promiseBits)) return;
      const tracking = this.services.tracking;
      const promise = dupValueAt(this.context, tracking.stage(promiseBits));
      const reason = dupValueAt(this.context, tracking.stage(reasonBits));
      this.unhandled.set(promiseBits, { promise, reason });
    } else {
      this.forgetUnhandled(promiseBits);
    }
  }

  private forgetUnhandled(bits: bigint): void {
    const entry = this.unhandled.get(bits);
    if (!entry) return;
    this.unhandled.delete(bits);
    // Released after the job queue drains, never from inside the engine's callback.
    this.toRelease.push(entry.promise, entry.reason);
  }

  private releaseHandled(): void {
    for (const handle of this.toRelease.splice(0)) handle.dispose();
  }

  /** Fails the activation with the first rejection nobody handled; true if it did. */
  private reportUnhandledRejection(): boolean {
    for (const [bits, entry] of this.unhandled) {
      if (this.main !== null && bits === this.main.bits) continue;
      this.unhandled.delete(bits);
      const reason = entry.reason;
      entry.promise.dispose();
      this.failWithGuestError(reason, null, "unhandled-rejection");
      return true;
    }
    return false;
  }

  private valueBits(handle: QuickJSHandle): bigint {
    return new DataView(this.services.engine.memory.buffer).getBigInt64(handleValuePointer(handle), true);
  }

  // ---- ownership -------------------------------------------------------------------------------

  /** Keeps `handle` until the realm is disposed (unless it is disposed earlier). */
  own<T extends { dispose(): void; alive: boolean }>(handle: T): T {
    this.owned.add(handle);
    return handle;
  }

  disown(handle: { dispose(): void; alive: boolean }): void {
    this.owned.delete(handle);
  }

  /**
   * Stops using the realm without freeing it (see `freeable`): ends any activation, cancels
   * host timers, stops rejection tracking.
   */
  abandon(): void {
    if (this.activation && !this.activation.finished) {
      this.activation.fail("disposed", "Error", "the sandbox was disposed while the script was running");
      this.end();
    }
    if (this.wallTimer) clearTimeout(this.wallTimer);
    this.stopTracking();
    this.dead ??= "abandoned";
  }

  /** Frees everything; after a poisoning only host-side state is dropped (no engine calls). */
  dispose(): void {
    if (this.releaseHandles()) {
      this.context.dispose();
      this.runtime.dispose();
    }
  }

  /**
   * Ends the realm for a memory image restore: its handles are freed (so nothing that still
   * holds one frees it later, into the restored heap), and its runtime and context are left
   * as they are (JS_FreeRuntime's ~0.1 ms): the restore puts back the heap they live in.
   * The sandbox restores the image before any other use of the engine (WorkerSandbox.realmFromImage, freeImage).
   */
  disposeForRestore(): void {
    this.releaseHandles();
  }

  /** Ends any activation and frees every handle the realm holds; false if it was dead already. */
  private releaseHandles(): boolean {
    if (this.activation && !this.activation.finished) {
      this.activation.fail("disposed", "Error", "the sandbox was disposed while the script was running");
      this.end();
    }
    if (this.wallTimer) clearTimeout(this.wallTimer);
    const wasAlive = this.dead === null;
    this.dead ??= "disposed";
    if (!wasAlive) return false;
    this.stopTracking();
    for (const handle of this.owned) if (handle.alive) handle.dispose();
    this.owned.clear();
    this.namespace?.dispose();
    this.namespace = null;
    this.releaseHandled();
    for (const { promise, reason } of this.unhandled.values()) {
      promise.dispose();
      reason.dispose();
    }
    this.unhandled.clear();
    for (const handle of Object.values(this.hooks)) handle.dispose();
    return true;
  }

  /** Timer callback from the host event loop. */
  fireTimer(id: number, repeat: boolean): void {
    const activation = this.activation;
    if (!activation) return;
    if (!repeat) {
      const entry = activation.timers.get(id);
      if (entry) {
        activation.timers.delete(id);
        if (entry.ref) activation.refTimers--;
      }
    }
    this.guestTask(() => {
      const idHandle = this.context.newNumber(id);
      const done = this.enterGuest(() => this.context.callFunction(this.hooks.dispatchTimer, this.context.undefined, idHandle));
      idHandle.dispose();
      done?.dispose();
    });
  }
}
