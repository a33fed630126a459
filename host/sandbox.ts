// The embedder's handle on a sandbox (it holds no engine: the sandbox lives in a worker).
//
// The run contract (README, docs/architecture.md "Tenancy"): run, load, call and
// runScript settle with a result for everything a script, or another sandbox's script,
// can cause; they throw only for the embedder's own mistakes (bad arguments or options,
// use after dispose()). A run whose worker is lost through no fault of its own is a
// bystander: it moves with its sandbox to a fresh worker and, if it had no effect outside
// the sandbox yet, runs again there; otherwise it ends with kind "evicted".
import { performance } from "node:perf_hooks";
import { toCrossable } from "./marshal/crossing-values.js";
import { checkFilename, own, resolveRunOptions, resolveSandboxConfig, RUN_OPTION_KEYS, type ResolvedRunOptions } from "./options.js";
import { sharedPool, WorkerLostError, type WorkerConnection, type WorkerPool } from "./pool.js";
import type { ActivationOutcome, ActivationRequest, SandboxConfig } from "./protocol.js";
import { checkPreparedMap, StackMapper } from "./source-map.js";
import { prepareSource, ScriptImportError, ScriptSyntaxError, type PreparedSource } from "./transpile.js";
import { bundleEntryFile, bundleSource, type NamedModules } from "./bundle/bundle.js";
import { SandboxDisposedError, ScriptError } from "./errors.js";
import type { CallOptions, ErrorKind, LoadOptions, LogEntry, RunOptions, RunResult, RunScriptOptions, SandboxOptions } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";
import { formatBytes } from "./limits.js";
import { disposedOutcome, evictedOutcome, hardStoppedOutcome, interruptedOutcome, type Interruption } from "./tenancy-outcomes.js";
import { SandboxHostModules, type ActivationCalls } from "./host-modules/sandbox-modules.js";
import type { DeclaredModules } from "./host-modules/declaration.js";
import type { Admission, RunAdmission } from "./run-admission.js";
import { HELD_WORKER_CPU_MS, RunDemotion } from "./run-demotion.js";

let nextSandboxId = 1;
let nextPluginId = 1;

const EMPTY_STATS = { cpuTimeMs: 0, wallTimeMs: 0, memoryBytes: 0, fetches: 0, queuedMs: 0 };
/**
 * How often a bystander without effects is re-run on a fresh worker before it ends
 * "evicted": each loss is another runaway stopped, so this only bounds a flood of them.
 * Only losses that cost the run something count (see #lossCounts): a run still queued on
 * a worker the watchdog stopped for another sandbox lost only its place.
 */
const MAX_BYSTANDER_RETRIES = 5;
/**
 * All losses, counted or not: a flood of stuck guests each hard-stopping the worker a run
 * waits on (~0.4 s each here) ends it `evicted` after this many, so no run is re-sent
 * for as long as hogs keep coming (found by review: a re-sent bystander goes behind newer
 * runs, new hogs among them, and queueTimeoutMs is unset by default).
 */
const MAX_LOST_WORKERS = 25;
/** Outcomes of a run that never ran the script through (so it tells nothing of what the script does: host/run-probation.ts). */
const DID_NOT_RUN: ReadonlySet<ErrorKind> = new Set<ErrorKind>(["aborted", "disposed", "queue-timeout", "evicted"]);
/** How often one run may move off a stuck worker while queued (see #movableWhileQueued). */
const MAX_MOVES = 3;
/** A run withdrawn to re-run needs this much of its queueTimeoutMs left to wait in the demoted line for a start. */
const QUEUE_DEADLINE_MARGIN_MS = 100;
/**
 * After an abort, how long to wait for the worker's own outcome (it keeps the logs and
 * stats; a loop sees the stop at its next interrupt check, a waiting run at once) before
 * answering without it (a native call that ignores the interrupt).
 */
const ABORT_ANSWER_WAIT_MS = 50;

/** A script that could not be prepared: a syntax error (kind "syntax") or an import the bundler refused (kind "script", name "ImportError"). */
function preparationResult(error: ScriptSyntaxError | ScriptImportError): RunResult & { ok: false } {
  const kind = error instanceof ScriptSyntaxError ? "syntax" : "script";
  return {
    ok: false,
    error: { kind, name: error.name, message: error.message, stack: `${error.name}: ${error.message}\n    at ${error.location}` },
    logs: [],
    stats: { ...EMPTY_STATS },
  };
}

function isPreparationError(error: unknown): error is ScriptSyntaxError | ScriptImportError {
  return error instanceof ScriptSyntaxError || error instanceof ScriptImportError;
}

function checkSourceModules(modules: unknown): NamedModules | undefined {
  if (modules === undefined) return undefined;
  if (typeof modules !== "object" || modules === null) throw new TypeError("sourceModules must be an object of { source } by module name");
  for (const [name, module] of Object.entries(modules)) {
    if (name === "" || /[\0\n\r]/.test(name) || name.startsWith(".") || name.startsWith("/")) throw new TypeError(`sourceModules: "${name}" is not a bare module name`);
    const m = module as { source?: unknown; filename?: unknown };
    if (typeof m?.source !== "string") throw new TypeError(`sourceModules.${name}.source must be a string`);
    if (m.filename !== undefined) checkFilename(m.filename);
  }
  return modules as NamedModules;
}

/**
 * Source to one module: transpiled as is, or bundled when it may import files, packages
 * or source modules. `hostModules` (the names of the run's host modules) stay imports.
 */
function prepare(source: string, filename: string, options: ResolvedRunOptions, hostModules: readonly string[]): Promise<PreparedSource> {
  const sourceModules = checkSourceModules(options.sourceModules);
  if (options.resolveDir === undefined && sourceModules === undefined) return prepareSource(source, filename);
  if (typeof options.resolveDir !== "string" && options.resolveDir !== undefined) throw new TypeError("resolveDir must be a string");
  return bundleSource(source, { filename, resolveDir: options.resolveDir, modules: sourceModules, hostModules });
}

/** Frames inside the guest library ("at encode (scriptbox:marshal:2:905)") are noise to script authors. */
function withoutLibraryFrames(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => !/^\s+at .*\(?scriptbox:[a-z-]+:\d+:\d+\)?$/.test(line))
    .join("\n");
}


/** The worker a sandbox lives in, and its creation there (pipelined: not awaited before the first run). */
interface Home {
  connection: WorkerConnection;
  created: Promise<unknown>;
  /** Set once the worker confirmed the creation: later requests need not wait for it. */
  confirmed: boolean;
}

/** An activation in flight, as dispose() sees it. */
interface InFlight {
  interrupt(kind: Interruption): void;
}

/** A run, load or call as the sandbox sends it (the connection adds the slot, the sandbox its id). */
type ActivationBody = ActivationRequest extends infer R ? (R extends ActivationRequest ? Omit<R, "slot" | "sandboxId"> : never) : never;

export class Sandbox {
  readonly #pool: WorkerPool;
  readonly #id: number;
  readonly #config: SandboxConfig;
  readonly #isolate: boolean;
  readonly #onLog: ((entry: LogEntry) => void) | null;
  readonly #limits: { cpuTimeMs: number; wallTimeMs: number; memoryBytes: number };
  /** The current home, once it has a worker; a new one is found after a worker is lost. */
  #home: Home | null = null;
  #homeReady: Promise<Home> | null = null;
  /** An isolated sandbox waiting for a dedicated worker (see WorkerPool.acquireIsolated), or a one-shot one for room on a shared worker. */
  #homeWait: { cancel(): void } | null = null;
  /** runScript's sandbox: its run waits for room on a shared worker before it is placed (host/run-admission.ts). */
  readonly #oneShot: boolean;
  /** Its place in that line once admitted; given back when the run is sent (or never will be). */
  #admission: Admission | null = null;
  /**
   * Its run was withdrawn from the worker it was placed on (moved off a stuck worker, or
   * withdrawn to re-run): it waits in line again, ahead of the runs that came after it.
   * Placed at once instead, a moved run went to the least queued worker even when none
   * had room, often the stuck one it had just left, and moved again at the next tick.
   */
  #returning = false;
  /**
   * runScript's sandbox: its script's key in the pool's record of demoted scripts. A
   * demoted script's run goes to a demoted worker (not through the line; an isolated one
   * to a dedicated demoted worker).
   */
  readonly #demotionKey: string | null;
  /** When this sandbox's run first waited in the probation line (PROBATION_MAX_WAIT_MS counts from then). */
  #probationSince: number | null = null;
  /** It waited PROBATION_MAX_WAIT_MS there: it is an ordinary run from then on. */
  #probationWaived = false;
  /** The watchdog saw a guest entry of this sandbox hold its worker (its script was demoted then): see #runPrepared. */
  #heldItsWorker = false;
  /** Re-runs the current one-shot run elsewhere when the watchdog sees it hold its worker (#rerunWhenHeld). */
  #rerunHeld: ((entryCpuMs: number, cpuLeftMs: number | null) => void) | null = null;
  readonly #plugins = new Set<Plugin>();
  /** Plugins whose realm went with a lost worker: calls on them end "evicted". */
  readonly #lostPlugins = new WeakSet<Plugin>();
  readonly #inFlight = new Set<InFlight>();
  #disposed: string | null = null;
  readonly #hostModules: SandboxHostModules;

  private constructor(
    pool: WorkerPool,
    id: number,
    config: SandboxConfig,
    isolate: boolean,
    onLog: ((entry: LogEntry) => void) | null,
    hostModules: SandboxHostModules,
    oneShot: boolean,
    demotionKey: string | null,
  ) {
    this.#hostModules = hostModules;
    this.#oneShot = oneShot;
    this.#demotionKey = demotionKey;
    this.#pool = pool;
    this.#id = id;
    this.#config = config;
    this.#isolate = isolate;
    this.#onLog = onLog;
    this.#limits = config.limits;
  }

  /**
   * See createSandbox; `oneShot` (runScript): the sandbox's one run waits in the pool's line
   * of one-shot runs, or goes to a demoted worker if the script recorded under
   * `demotionKey` is demoted (WorkerPool.acquireDemoted).
   */
  static async create(options: SandboxOptions = {}, pool: WorkerPool = sharedPool(), oneShot = false, demotionKey: string | null = null): Promise<Sandbox> {
    const config = resolveSandboxConfig(options as SandboxOptions & { engineVariant?: EngineVariantName });
    const id = nextSandboxId++;
    const hostModules = SandboxHostModules.declare(own(options as Record<string, unknown>, "modules"), id, config.limits.maxHostCallBytes);
    if (hostModules.manifest) config.hostModules = hostModules.manifest;
    const sandbox = new Sandbox(pool, id, config, options.isolate === true, options.onLog ?? null, hostModules, oneShot, demotionKey);
    // Not awaited: the worker handles messages in order, so the first run is pipelined
    // behind the creation instead of waiting a round trip for it. An isolated sandbox may
    // wait here for a dedicated worker: that wait counts as its first run's queued time.
    // A one-shot sandbox finds its home at its run, once the script is prepared: it joins
    // the line of one-shot runs ready to be sent (a run still being transpiled or bundled
    // would hold a place that ready runs behind it could use).
    // (An isolated one-shot sandbox waits in no line: its dedicated worker is sought at once.)
    if (!oneShot || sandbox.#isolate) {
      sandbox.#homeReady = sandbox.#findHome();
      sandbox.#homeReady.catch(() => undefined);
    }
    return sandbox;
  }

  async #findHome(): Promise<Home> {
    if (this.#disposed !== null) throw new SandboxDisposedError(this.#disposed);
    let connection: WorkerConnection;
    if (this.#isolate) {
      // A demoted script's isolated run gets a dedicated worker at the lowest priority.
      let demoted = this.#isDemoted();
      for (;;) {
        const wait = this.#pool.acquireIsolated(demoted);
        this.#homeWait = wait;
        connection = await wait.connection;
        this.#homeWait = null;
        if (this.#disposed !== null) {
          // Disposed in the moment between getting the worker and using it: hand it back.
          this.#pool.release(connection);
          throw new SandboxDisposedError(this.#disposed);
        }
        // Its script was demoted while it waited (an earlier run of it was seen holding its
        // worker): the isolated worker goes to the next in line, and this run to a demoted one.
        if (demoted || !this.#isDemoted()) break;
        this.#pool.release(connection);
        demoted = true;
      }
    } else {
      let standing = this.#standing();
      // Once, and again after a withdrawal (#returning); a run re-sent after losing its
      // worker keeps its admission (bystanders go to the fresh worker at once).
      while (this.#oneShot && this.#admission === null) {
        // A run leaves its line when its script's standing changes while it waits: demoted
        // (an earlier run of it was seen holding its worker), no longer demoted (demotion
        // was turned off: its line would never move again), or, waiting as a new script's,
        // known (an earlier run of it ended here: host/run-probation.ts), and joins the
        // line it belongs in now.
        const line = standing === "demoted" ? this.#pool.demotedRunAdmission : standing === "new" ? this.#pool.probationLine() : this.#pool.runAdmission;
        // A run in the ordinary line leaves it only if demoted: its script falling out of
        // the 4,096 known ones while it waits does not send it to the back of the probation
        // line (found by review).
        const belongsElsewhere = () => (standing === "ordinary" ? this.#isDemoted() : this.#standing() !== standing);
        // The probation line finds a new script's runs by its key once it is known (RunAdmission.releaseKey).
        if (standing === "new") this.#probationSince ??= performance.now();
        const admission = await this.#waitInLine(line, belongsElsewhere, this.#returning, standing === "new" ? this.#demotionKey! : undefined, this.#probationSince ?? undefined);
        if (admission.waitedTooLong) {
          // PROBATION_MAX_WAIT_MS in the probation line: it goes to the ordinary one, where
          // it would be had it waited there from the start (#probationSince), not ahead
          // of every known run (host/run-admission.ts, admit).
          this.#probationWaived = true;
          standing = this.#standing();
          continue;
        }
        if (!belongsElsewhere()) {
          this.#admission = admission;
          this.#returning = false;
        } else {
          admission.placed();
          standing = this.#standing();
        }
      }
      connection = standing === "demoted" ? this.#pool.acquireDemoted() : standing === "new" ? this.#pool.acquireProbation() : this.#pool.acquireShared(this.#oneShot);
    }
    connection.onLog(this.#id, this.#onLog);
    // A createSandbox sandbox keeps state (plugins) in its worker: see WorkerConnection.statefulSandboxes.
    if (!this.#oneShot) connection.statefulSandboxIds.add(this.#id);
    connection.onDisposed(this.#id, (reason) => this.#markDisposed(reason));
    // Later runs of a script that holds its worker for long go apart, even those already waiting.
    const demotionKey = this.#demotionKey;
    if (demotionKey !== null) {
      connection.onHeld(this.#id, {
        held: () => {
          this.#heldItsWorker = true;
          this.#pool.noteHeld(demotionKey);
        },
        // Checked at every tick while held: runs sent a moment later wait behind it too.
        stillHeld: (entryCpuMs, cpuLeftMs) => this.#rerunHeld?.(entryCpuMs, cpuLeftMs),
      });
    }
    const created = connection.request({ op: "create", sandboxId: this.#id, config: this.#config });
    created.catch(() => undefined);
    const home: Home = { connection, created, confirmed: false };
    this.#home = home;
    return home;
  }

  /** Waits in one of the pool's lines of one-shot runs (host/run-admission.ts); dispose, signal and queueTimeoutMs reach it there. */
  async #waitInLine(line: RunAdmission, leaves?: () => boolean, ahead = false, key?: string, since?: number): Promise<Admission> {
    const wait = line.admit(leaves, ahead, key, since);
    this.#homeWait = wait;
    const admission = await wait.admission;
    this.#homeWait = null;
    if (this.#disposed !== null) {
      admission.placed();
      throw new SandboxDisposedError(this.#disposed);
    }
    return admission;
  }

  #isDemoted(): boolean {
    return this.#demotionKey !== null && this.#pool.isDemoted(this.#demotionKey);
  }

  /**
   * Which line a one-shot run of this sandbox's script waits in, or which workers a
   * createSandbox sandbox of a tenant goes to: the demoted, the probation (a one-shot script
   * new to the pool; never a createSandbox sandbox) or the ordinary ones.
   */
  #standing(): "demoted" | "new" | "ordinary" {
    const key = this.#demotionKey;
    if (key === null) return "ordinary";
    if (this.#pool.isDemoted(key)) return "demoted";
    return this.#oneShot && !this.#probationWaived && this.#pool.isNewScript(key) ? "new" : "ordinary";
  }

  /** Leaves a home whose worker is gone (or at disposal); its plugins are lost with it. The worker is released once `releaseAfter` settles, if given. */
  #leave(home: Home, releaseAfter: Promise<unknown> | null = null): void {
    if (this.#home !== home) return;
    this.#home = null;
    this.#homeReady = null;
    this.#detach(home.connection);
    if (releaseAfter === null) this.#pool.release(home.connection);
    else void releaseAfter.finally(() => this.#pool.release(home.connection));
    for (const plugin of this.#plugins) this.#lostPlugins.add(plugin);
    this.#plugins.clear();
  }

  /** Undoes what #findHome registered on a worker the sandbox leaves. */
  #detach(connection: WorkerConnection): void {
    connection.onLog(this.#id, null);
    connection.onDisposed(this.#id, null);
    connection.onHeld(this.#id, null);
    if (!this.#oneShot) connection.statefulSandboxIds.delete(this.#id);
  }

  #currentHome(): Promise<Home> {
    this.#homeReady ??= this.#findHome();
    return this.#homeReady;
  }

  /** Unique in this process; host functions see it as `this.sandboxId`. */
  get id(): number {
    return this.#id;
  }

  get disposed(): boolean {
    return this.#disposed !== null;
  }

  #assertUsable(): void {
    if (this.#disposed !== null) throw new SandboxDisposedError(this.#disposed);
  }

  /** Runs a script (an ES module; TypeScript when filename ends in .ts) in a fresh realm. */
  async run<T = unknown>(source: string, options: RunOptions | null = {}): Promise<RunResult<T>> {
    this.#assertUsable();
    this.#hostModules.syncState.assertNotBlocked("sandbox.run");
    if (typeof source !== "string") throw new TypeError("source must be a string");
    const runOptions = resolveRunOptions(options);
    const filename = checkFilename(runOptions.filename);
    const input = toCrossable(runOptions.input, "input");
    const runModules = this.#hostModules.forRun(runOptions.modules);
    let prepared: PreparedSource;
    try {
      prepared = await prepare(source, filename, runOptions, this.#hostModules.names(runModules));
    } catch (error) {
      if (isPreparationError(error)) return preparationResult(error) as RunResult<T>;
      throw error;
    }
    return this.#runPrepared(prepared, input, runOptions, runModules) as Promise<RunResult<T>>;
  }

  /**
   * Runs a script file with its relative imports (confined to the file's folder) and the
   * npm packages it imports, bundled by esbuild on this thread and cached by content.
   * The only file access scriptbox offers; the guest itself has none.
   */
  async runFile<T = unknown>(path: string, options: Omit<RunOptions, "filename"> | null = {}): Promise<RunResult<T>> {
    this.#assertUsable();
    this.#hostModules.syncState.assertNotBlocked("sandbox.runFile");
    if (typeof path !== "string") throw new TypeError("path must be a string");
    const runOptions = resolveRunOptions(options, "run options", RUN_OPTION_KEYS.filter((key) => key !== "filename"));
    const input = toCrossable(runOptions.input, "input");
    const runModules = this.#hostModules.forRun(runOptions.modules);
    let prepared: PreparedSource;
    try {
      prepared = await bundleEntryFile(path, this.#hostModules.names(runModules));
    } catch (error) {
      if (isPreparationError(error)) return preparationResult(error) as RunResult<T>;
      throw error;
    }
    return this.#runPrepared(prepared, input, runOptions, runModules) as Promise<RunResult<T>>;
  }

  /**
   * Runs a script prepared elsewhere (by prepareSource or bundleEntryFile on another
   * machine: the script queue's jobs), its source map mapping stacks back to the author's
   * files. The code is run as it is, never transpiled again.
   */
  async runPrepared<T = unknown>(prepared: PreparedSource, options: Omit<RunOptions, "filename"> | null = {}): Promise<RunResult<T>> {
    this.#assertUsable();
    if (typeof prepared !== "object" || prepared === null || typeof prepared.code !== "string") throw new TypeError("prepared.code must be a string");
    if (prepared.map !== null && typeof prepared.map !== "string") throw new TypeError("prepared.map must be a string or null");
    if (prepared.map !== null) checkPreparedMap(prepared.map);
    const filename = checkFilename(prepared.filename);
    const runOptions = resolveRunOptions(options, "run options", RUN_OPTION_KEYS.filter((key) => key !== "filename"));
    const input = toCrossable(runOptions.input, "input");
    const runModules = this.#hostModules.forRun(runOptions.modules);
    return this.#runPrepared({ code: prepared.code, filename, map: prepared.map }, input, runOptions, runModules) as Promise<RunResult<T>>;
  }

  async #runPrepared(prepared: PreparedSource, input: unknown, options: ResolvedRunOptions, runModules: DeclaredModules | null): Promise<RunResult> {
    const started = performance.now();
    const outcome = await this.#activate({ op: "run", code: prepared.code, filename: prepared.filename, input }, options, runModules);
    // The script ran here (whatever its result), did not hold its worker, and is not
    // demoted: its next runs are known ones. (A run that held its worker and outlived its
    // own demotion, a short demotionMs, would otherwise make its script known: review.)
    if (this.#demotionKey !== null && !this.#heldItsWorker && (outcome.ok || !DID_NOT_RUN.has(outcome.error!.kind))) this.#pool.noteScriptRan(this.#demotionKey);
    return this.#toResult(outcome, prepared, started);
  }

  /**
   * Loads a plugin module into a realm of its own that stays alive for calls. A failure
   * (the module threw, a limit, or any kind of RunResult error) rejects with a ScriptError
   * that carries the kind.
   */
  async load(source: string, options: LoadOptions | null = {}): Promise<Plugin> {
    this.#assertUsable();
    this.#hostModules.syncState.assertNotBlocked("sandbox.load");
    if (typeof source !== "string") throw new TypeError("source must be a string");
    const loadOptions = resolveRunOptions(options, "load options", RUN_OPTION_KEYS.filter((key) => key !== "input" && key !== "modules"));
    const filename = checkFilename(loadOptions.filename ?? "plugin.js");
    let prepared: PreparedSource;
    try {
      prepared = await prepare(source, filename, loadOptions, this.#hostModules.names(null));
    } catch (error) {
      if (isPreparationError(error)) throw new ScriptError(preparationResult(error).error);
      throw error;
    }
    const pluginId = nextPluginId++;
    const started = performance.now();
    const outcome = await this.#activate({ op: "load", pluginId, code: prepared.code, filename: prepared.filename }, loadOptions);
    const result = this.#toResult(outcome, prepared, started);
    if (!result.ok) throw new ScriptError(result.error);
    const plugin = new Plugin(this, pluginId, outcome.exports ?? [], prepared);
    this.#plugins.add(plugin);
    return plugin;
  }

  /** @internal used by Plugin */
  async callPlugin(plugin: Plugin, pluginId: number, name: string, args: unknown[], prepared: PreparedSource, options: ResolvedRunOptions): Promise<RunResult> {
    this.#assertUsable();
    this.#hostModules.syncState.assertNotBlocked("plugin.call");
    const started = performance.now();
    if (this.#lostPlugins.has(plugin)) return this.#toResult(evictedOutcome("call", "another sandbox's runaway script made it stop"), prepared, started);
    const outcome = await this.#activate({ op: "call", pluginId, name, args }, { ...options, filename: prepared.filename });
    if (outcome.error?.message.endsWith("the plugin was unloaded")) this.#plugins.delete(plugin);
    return this.#toResult(outcome, prepared, started);
  }

  /** @internal used by Plugin */
  async unloadPlugin(plugin: Plugin, pluginId: number): Promise<void> {
    if (!this.#plugins.delete(plugin) || this.#disposed !== null || this.#home === null) return;
    await this.#home.connection.request({ op: "unload", sandboxId: this.#id, pluginId }).catch(() => undefined);
  }

  /**
   * Frees the sandbox and its plugins. Safe to call more than once, and with work pending:
   * runs in flight end at once with kind "disposed".
   */
  async dispose(): Promise<void> {
    if (this.#disposed !== null) return;
    this.#disposed = "dispose() was called";
    this.#admission?.placed();
    for (const activation of [...this.#inFlight]) activation.interrupt("disposed");
    this.#plugins.clear();
    this.#homeWait?.cancel();
    const home = this.#home;
    if (home === null) return;
    this.#home = null;
    this.#detach(home.connection);
    if (!home.connection.dedicated) {
      // Not awaited: a shared worker forgets the sandbox as soon as the message arrives
      // (every later request to it finds it gone) and frees its engine when no run is
      // queued, so neither this caller nor the next sandbox's run waits for the free.
      if (!home.connection.lost) home.connection.request({ op: "dispose", sandboxId: this.#id }).catch(() => undefined);
      this.#pool.release(home.connection);
      return;
    }
    try {
      // A dedicated worker may be terminated once released: free the engine first.
      if (!home.connection.lost) await home.connection.request({ op: "dispose", sandboxId: this.#id, freeNow: true });
    } catch {
      // The worker is gone: nothing left to free.
    } finally {
      this.#pool.release(home.connection);
    }
  }

  /**
   * Sends one run, load or call to the sandbox's worker and settles it with an outcome in
   * every case: the embedder stopping it (signal, dispose(), queue timeout), the worker
   * being lost (the sandbox moves to a fresh one; see the file's header), the sandbox
   * failing on its own.
   */
  async #activate(body: ActivationBody, options: ResolvedRunOptions, runModules: DeclaredModules | null = null): Promise<ActivationOutcome> {
    let interrupted: Interruption | null = null;
    let current: { connection: WorkerConnection; slot: number } | null = null;
    let wake!: () => void;
    const interruption = new Promise<"interrupted">((resolve) => (wake = () => resolve("interrupted")));
    const inFlight: InFlight = {
      interrupt: (kind) => {
        if (interrupted !== null) return;
        if (kind === "queue-timeout") {
          // Only a run whose attempt has not started yet: once started, its own limits
          // apply (a run withdrawn to re-run waits for its next attempt: see armQueueTimer).
          if (current !== null && !current.connection.withdrawIfQueued(current.slot)) return;
        } else if (current !== null) {
          current.connection.stop(current.slot);
        }
        interrupted = kind;
        wake();
      },
    };
    const onAbort = () => inFlight.interrupt("aborted");
    const { signal, queueTimeoutMs } = options;
    signal?.addEventListener("abort", onAbort, { once: true });
    // queueTimeoutMs bounds the wait for the attempt that counts: a deadline, re-armed when
    // a run is withdrawn and waits again (its first attempt may have outlived the timer).
    const queueDeadline = queueTimeoutMs === null ? null : performance.now() + queueTimeoutMs;
    let queueTimer: NodeJS.Timeout | null = null;
    const armQueueTimer = () => {
      if (queueDeadline === null) return;
      if (queueTimer !== null) clearTimeout(queueTimer);
      queueTimer = setTimeout(() => inFlight.interrupt("queue-timeout"), Math.max(0, queueDeadline - performance.now()));
    };
    armQueueTimer();
    this.#inFlight.add(inFlight);
    if (signal?.aborted) onAbort();
    const filename = body.op === "call" ? options.filename ?? "plugin.js" : body.filename;
    let hostCalls: ActivationCalls | null = null;
    let moves = 0;
    try {
      let countedLosses = 0;
      let lostWorkers = 0;
      for (;;) {
        if (interrupted !== null) return interruptedOutcome(interrupted, queueTimeoutMs, null);
        const home = await Promise.race([this.#currentHome(), interruption]).catch(() => "interrupted" as const);
        if (home === "interrupted") return interruptedOutcome(interrupted ?? "disposed", queueTimeoutMs, null);
        // Stopped while its home was being found (the race above takes the home when both
        // are ready): it must not be sent, with no slot yet to tell the worker to skip it.
        if (interrupted !== null) return interruptedOutcome(interrupted, queueTimeoutMs, null);
        // A worker found lost before sending: the activation never left, so it had no effects.
        const neverSent = home.connection.lost !== null;
        // Host modules: the activation's host-call scope lives on the worker it is sent to,
        // and closes (aborting its calls' signals, dropping late answers) when it ends there.
        hostCalls?.end();
        hostCalls = this.#hostModules.begin(home.connection.hostCalls, filename, runModules);
        const request = { ...body, sandboxId: this.#id, slot: -1, ...(hostCalls.hostCalls ? { hostCalls: hostCalls.hostCalls } : {}) } as ActivationRequest;
        const { slot, reply } = home.connection.activate<ActivationOutcome | null>(request, this.#admission !== null);
        // Now in the worker's queue, where the line of one-shot runs counts it.
        this.#admission?.placed();
        current = { connection: home.connection, slot };
        const settled = Promise.allSettled([home.confirmed ? true : home.created, reply]);
        const moved = this.#movableWhileQueued(home, slot, body.op, moves < MAX_MOVES);
        const rerun = this.#rerunWhenHeld(home, slot, body.op, moves < MAX_MOVES, queueDeadline, settled);
        const first = await Promise.race([settled, interruption, moved.promise, rerun.promise]).finally(() => {
          moved.cancel();
          rerun.cancel();
        });
        if (first === "moved" || first === "rerun") {
          // Withdrawn unstarted from a worker stuck in another guest, or withdrawn without
          // effects from a worker it held: run it elsewhere (not a bystander retry: not
          // a counted loss). Until it is sent again, a queue timeout or an abort has
          // no slot to withdraw or stop: it ends the wait at once.
          current = null;
          // It waits in line again, at the front (#returning). A re-run waits in the demoted
          // workers' line like any other demoted run: sent straight there, a stream of them
          // once piled up on one demoted worker (review).
          if (this.#oneShot) {
            this.#admission = null;
            this.#returning = true;
          }
          armQueueTimer();
          moves++;
          continue;
        }
        if (first === "interrupted") {
          // A queue timeout or dispose() answers at once; an abort waits a moment for the
          // worker's own account of the stopped run (logs, stats).
          if (interrupted === "aborted") {
            const late = await Promise.race([settled, new Promise<null>((resolve) => setTimeout(resolve, ABORT_ANSWER_WAIT_MS, null))]);
            const fromWorker = late !== null && late[1].status === "fulfilled" ? late[1].value : null;
            return interruptedOutcome("aborted", queueTimeoutMs, fromWorker);
          }
          return interruptedOutcome(interrupted!, queueTimeoutMs, null);
        }
        const [created, replied] = first;
        if (created.status === "fulfilled") home.confirmed = true;
        if (replied.status === "fulfilled" && replied.value !== null) return replied.value;
        const error = (replied.status === "rejected" ? replied.reason : new Error("the worker skipped the activation")) as Error;
        if (error instanceof WorkerLostError) {
          lostWorkers++;
          if (this.#lossCounts(error, neverSent || !home.connection.slots.wasStarted(slot))) countedLosses++;
          const retry = this.#afterWorkerLost(home, error, body.op, !neverSent && home.connection.slots.hadEffects(slot), countedLosses, lostWorkers);
          if (retry !== "retry") return retry;
          // It waits again for an attempt: queueTimeoutMs bounds that wait as it bounds a
          // withdrawn run's (the timer may have fired, without effect, while it ran).
          current = null;
          armQueueTimer();
          continue;
        }
        if (created.status === "rejected") {
          this.#markDisposed(`it could not be created: ${(created.reason as Error).message}`);
          return disposedOutcome(this.#disposed!);
        }
        if (error.name === "SandboxDisposedError") {
          // The worker disposed the sandbox on its own (its engine failed).
          this.#markDisposed(error.message);
          return disposedOutcome(this.#disposed!);
        }
        throw error;
      }
    } finally {
      hostCalls?.end();
      signal?.removeEventListener("abort", onAbort);
      if (queueTimer !== null) clearTimeout(queueTimer);
      this.#inFlight.delete(inFlight);
    }
  }

  /**
   * Lets a queued run move off a worker whose current guest holds everything up (see
   * MOVE_QUEUED_AFTER_MS in host/pool.ts). Only a run that is this sandbox's one activation,
   * with no plugins loaded, can move: nothing of the sandbox then lives in the worker but
   * its creation, which a "dispose" queued behind it frees. Resolves "moved" once withdrawn.
   */
  #movableWhileQueued(home: Home, slot: number, op: ActivationBody["op"], allowed: boolean): { promise: Promise<"moved">; cancel(): void } {
    const connection = home.connection;
    if (!allowed || op !== "run" || connection.dedicated || slot < 0) return { promise: new Promise<"moved">(() => undefined), cancel: () => undefined };
    let move!: (roomElsewhere: boolean, roomForOneShot: boolean) => void;
    const promise = new Promise<"moved">((resolve) => {
      move = (roomElsewhere, roomForOneShot) => {
        // A one-shot run goes back to its line, which sends it to an overflow worker only
        // while every shared worker is held by a guest nothing moves (WorkerPool.lineRoom).
        const room = this.#oneShot ? roomForOneShot : roomElsewhere;
        // A run of a script demoted since it was sent goes to a demoted worker (#findHome).
        if (!room && (home.connection.demoted || !this.#isDemoted())) return;
        if (this.#home !== home || this.#plugins.size > 0 || this.#inFlight.size !== 1) return;
        if (!connection.withdrawIfQueued(slot)) return;
        connection.movable.delete(move);
        this.#leave(home);
        connection.request({ op: "dispose", sandboxId: this.#id }).catch(() => undefined);
        resolve("moved");
      };
    });
    connection.movable.add(move);
    return { promise, cancel: () => connection.movable.delete(move) };
  }

  /**
   * Lets a one-shot run that holds a shared, probation or isolated worker while others wait
   * for it start again on a demoted worker. The watchdog saw it use HELD_WORKER_CPU_MS of CPU in one guest entry
   * (HELD_CONTENDED_WORKER_CPU_MS while others wait for the worker, as they do here)
   * (host/run-demotion.ts), so its script has just been demoted; until its limit ends it,
   * every run queued on the worker, and every run there waiting on a timer, would wait too.
   * Only a run that has had no effect outside the sandbox (withdrawIfEffectFree: no fetch
   * sent, no host function called) and whose sandbox streams no logs (onLog would see the
   * first attempt's lines twice) is re-run: to its caller it ran once, on the demoted worker,
   * where it waits in the demoted line first. Checked at every watchdog tick while the entry
   * holds the worker. The withdrawn attempt ends at the interrupt's next look; one in a
   * native call that ignores the interrupt may make the watchdog terminate the old worker
   * WITHDRAWN_ENTRY_GRACE_CPU_MS later, where that costs the others there only a re-run
   * (WorkerConnection.checkDeadline). The same for an isolated one-shot run holding its
   * dedicated worker while other isolated sandboxes wait for one (maxIsolatedWorkers all
   * taken): it starts again on a demoted dedicated worker, and its worker goes to the next
   * in line.
   */
  #rerunWhenHeld(home: Home, slot: number, op: ActivationBody["op"], allowed: boolean, queueDeadline: number | null, attemptSettled: Promise<unknown>): { promise: Promise<"rerun">; cancel(): void } {
    const connection = home.connection;
    if (!allowed || op !== "run" || !this.#oneShot || this.#onLog !== null || connection.demoted || slot < 0) {
      return { promise: new Promise<"rerun">(() => undefined), cancel: () => undefined };
    }
    let rerun!: (entryCpuMs: number, cpuLeftMs: number | null) => void;
    const promise = new Promise<"rerun">((resolve) => {
      rerun = (entryCpuMs, cpuLeftMs) => {
        if (this.#home !== home || this.#plugins.size > 0 || this.#inFlight.size !== 1) return;
        // Far into a large CPU budget it stays: started again from nothing, it would spend
        // that much again (at most 200 ms, or half its budget, is thrown away). The run's
        // CPU, its earlier entries included, where the watchdog knows the budget left.
        const runCpuMs = cpuLeftMs === null ? entryCpuMs : this.#limits.cpuTimeMs - cpuLeftMs;
        if (runCpuMs > Math.max(this.#limits.cpuTimeMs / 2, 4 * HELD_WORKER_CPU_MS)) return;
        // Near its queueTimeoutMs deadline it stays: it started in time, and would end
        // queue-timeout waiting to start again, a failure of the pool's making.
        if (queueDeadline !== null && performance.now() > queueDeadline - QUEUE_DEADLINE_MARGIN_MS) return;
        // Nobody waits for this worker: the run may as well finish here.
        if (!this.#isDemoted() || !this.#pool.othersWaitOn(connection, slot)) return;
        if (!connection.withdrawIfEffectFree(slot, this.#id)) return;
        this.#rerunHeld = null;
        // An isolated worker goes to the next in line only once the withdrawn attempt has
        // ended there (a native call may run on until the watchdog terminates the worker,
        // whose place then goes to the next in line as a fresh worker): handed over at once,
        // the next one's run waited behind it and was lost with it (found by review).
        this.#leave(home, connection.dedicated ? attemptSettled : null);
        connection.request({ op: "dispose", sandboxId: this.#id }).catch(() => undefined);
        resolve("rerun");
      };
    });
    this.#rerunHeld = rerun;
    return {
      promise,
      cancel: () => {
        if (this.#rerunHeld === rerun) this.#rerunHeld = null;
      },
    };
  }

  /**
   * Whether losing a worker counts toward MAX_BYSTANDER_RETRIES. Not when the run had not
   * started there (still queued, or never sent) and the watchdog terminated the worker to
   * end another guest stuck in a native call: the run lost only its place, and a newcomer
   * queued behind several native hogs on a probation worker lost it once per hog (it ended
   * "evicted" in an attack run). Such losses are still bounded: by its queueTimeoutMs
   * (re-armed at each retry) and by MAX_LOST_WORKERS in all. A run that had started there,
   * or a worker lost for any other reason (a thread that cannot start would otherwise be
   * retried until that bound), counts.
   */
  #lossCounts(error: WorkerLostError, notStartedThere: boolean): boolean {
    return !(error.byWatchdog && error.stoppedSandboxId !== this.#id && notStartedThere);
  }

  /** What becomes of an activation whose worker was lost: an outcome, or "retry" on a fresh one. */
  #afterWorkerLost(home: Home, error: WorkerLostError, op: ActivationBody["op"], hadEffects: boolean, countedLosses: number, lostWorkers: number): ActivationOutcome | "retry" {
    if (error.stoppedSandboxId === this.#id) {
      // This sandbox's own guest was the runaway the watchdog stopped.
      const kind = error.stopReason ?? "cpu";
      const limit = kind === "timeout" ? `wallTimeMs limit (${this.#limits.wallTimeMs} ms)` : `cpuTimeMs limit (${this.#limits.cpuTimeMs} ms)`;
      // What it used, from the watchdog's view: its CPU time is its limit minus the budget
      // it had left (negative past the limit), and its wall time runs from when the
      // activation began, known from the deadline it ran under (the wall deadline; without
      // a per-thread clock the sooner of both limits as wall time, and the CPU time is not
      // known apart from it). Zeros before, and the run's time counted as queuedMs.
      const stopped = error.stopped;
      let stats: { cpuTimeMs: number; wallTimeMs: number } | null = null;
      if (stopped !== null && stopped.wallDeadlineEpochMs > 0) {
        const span = stopped.cpuLeftMs === null ? Math.min(this.#limits.cpuTimeMs, this.#limits.wallTimeMs) : this.#limits.wallTimeMs;
        const wallTimeMs = Math.max(0, performance.timeOrigin + performance.now() - (stopped.wallDeadlineEpochMs - span));
        // The guard sets a CPU deadline on the early side (from a clock reading up to a few ms
        // old), so the budget left reads a little low: never more CPU than wall time (one thread).
        const cpuTimeMs = stopped.cpuLeftMs === null ? wallTimeMs : Math.min(wallTimeMs, Math.max(0, this.#limits.cpuTimeMs - stopped.cpuLeftMs));
        stats = { cpuTimeMs: Math.round(cpuTimeMs * 1000) / 1000, wallTimeMs: Math.round(wallTimeMs * 1000) / 1000 };
      }
      const outcome = hardStoppedOutcome(kind, limit, stats);
      this.#markDisposed(outcome.sandboxDisposed!);
      // Held its worker past its limit: its script is demoted (host/run-demotion.ts).
      this.#heldItsWorker = true;
      if (this.#demotionKey !== null) this.#pool.noteHeld(this.#demotionKey);
      return outcome;
    }
    // A bystander: the sandbox moves to a fresh worker at its next request.
    this.#leave(home);
    if (this.#disposed !== null) return disposedOutcome(this.#disposed);
    const cause = error.stoppedSandboxId !== null ? "another sandbox's runaway script made the watchdog stop it" : error.message;
    if (op === "call") return evictedOutcome("call", cause);
    if (hadEffects) return evictedOutcome(op, cause);
    if (countedLosses > MAX_BYSTANDER_RETRIES || lostWorkers >= MAX_LOST_WORKERS) return evictedOutcome(op, cause, lostWorkers);
    return "retry";
  }

  #markDisposed(reason: string): void {
    if (this.#disposed !== null) return;
    this.#disposed = reason;
    this.#admission?.placed();
    this.#homeWait?.cancel();
    if (this.#home) this.#leave(this.#home);
    this.#plugins.clear();
  }

  #toResult(outcome: ActivationOutcome, prepared: PreparedSource, started: number): RunResult {
    if (outcome.sandboxDisposed) this.#markDisposed(outcome.sandboxDisposed);
    // Time between the call and the start of the activation in the worker (queued behind
    // other work, waiting for a worker or a retry): what is not the run's own wall time.
    const elapsed = performance.now() - started;
    const stats = { ...outcome.stats, queuedMs: Math.round(Math.max(0, elapsed - outcome.stats.wallTimeMs) * 1000) / 1000 };
    if (outcome.ok) return { ok: true, value: outcome.value, logs: outcome.logs, stats };
    const error = outcome.error!;
    // Node's convention: the stack starts with "Name: message".
    error.stack = withoutLibraryFrames(error.stack);
    if (!error.stack.startsWith(`${error.name}:`)) error.stack = `${error.name}: ${error.message}\n${error.stack}`.trimEnd();
    if (prepared.map !== null) {
      const mapper = new StackMapper(prepared.filename, prepared.map);
      error.stack = mapper.mapText(error.stack);
      error.message = mapper.mapText(error.message);
    }
    if (error.kind === "memory" && !error.message.includes("memoryBytes")) {
      error.message = `memoryBytes limit (${formatBytes(this.#limits.memoryBytes)}): ${error.message}`;
    }
    return { ok: false, error, logs: outcome.logs, stats };
  }
}

/** A loaded plugin: a module kept alive in its own realm; its exports are called by name. */
export class Plugin {
  readonly #sandbox: Sandbox;
  readonly #id: number;
  readonly #prepared: PreparedSource;
  /** The module's export names. */
  readonly exports: readonly string[];

  constructor(sandbox: Sandbox, id: number, exports: string[], prepared: PreparedSource) {
    this.#sandbox = sandbox;
    this.#id = id;
    this.#prepared = prepared;
    this.exports = Object.freeze([...exports]);
  }

  /** Calls an exported function; resolves with its (awaited) return value, or throws a ScriptError (with the kind). */
  async call<T = unknown>(name: string, ...args: unknown[]): Promise<T> {
    return this.with(null).call<T>(name, ...args);
  }

  /** Like call, but resolves with the whole result (value or error, logs, stats). */
  async invoke<T = unknown>(name: string, ...args: unknown[]): Promise<RunResult<T>> {
    return this.with(null).invoke<T>(name, ...args);
  }

  /**
   * The same calls with options: `plugin.with({ signal }).call("f", x)`. (call and invoke
   * take the export's arguments as the rest, so their options come this way.)
   */
  with(options: CallOptions | null): { call<T = unknown>(name: string, ...args: unknown[]): Promise<T>; invoke<T = unknown>(name: string, ...args: unknown[]): Promise<RunResult<T>> } {
    const callOptions = resolveRunOptions(options, "call options", ["signal", "queueTimeoutMs"]);
    const invoke = async <T>(name: string, ...args: unknown[]): Promise<RunResult<T>> => {
      if (typeof name !== "string") throw new TypeError("the export name must be a string");
      const crossable = args.map((arg, i) => toCrossable(arg, `args[${i}]`));
      return (await this.#sandbox.callPlugin(this, this.#id, name, crossable, this.#prepared, callOptions)) as RunResult<T>;
    };
    return {
      invoke,
      async call<T>(name: string, ...args: unknown[]): Promise<T> {
        const result = await invoke<T>(name, ...args);
        if (!result.ok) throw new ScriptError(result.error);
        return result.value;
      },
    };
  }

  async unload(): Promise<void> {
    await this.#sandbox.unloadPlugin(this, this.#id);
  }
}

/** Creates a sandbox: its worker, engine instance and limits. Options are validated here. */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  if (options === null || typeof options !== "object" || !Object.hasOwn(options, "tenant")) return Sandbox.create(options);
  const { tenant, ...sandboxOptions } = options;
  const name = checkTenant(tenant, "createSandbox");
  const pool = sharedPool();
  // The tenant's sandboxes go apart once one of them held its worker (host/run-demotion.ts).
  return Sandbox.create(sandboxOptions, pool, false, name !== undefined && pool.demotionOn ? RunDemotion.keyOf("", name) : null);
}

/** The `tenant` option: a name of 1-256 characters. */
function checkTenant(value: unknown, where: "runScript" | "createSandbox"): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0 || value.length > 256) throw new TypeError(`${where} option tenant must be a string of 1 to 256 characters`);
  return value;
}

/**
 * One-shot: create a sandbox, run the script, dispose the sandbox. Takes the sandbox's
 * options and the run's (RunOptions) in one object; resolves with a result for every
 * outcome, rejects only for bad arguments or options.
 */
export async function runScript<T = unknown>(source: string, options: RunScriptOptions | null = {}): Promise<RunResult<T>> {
  if (options !== null && (typeof options !== "object" || Array.isArray(options))) throw new TypeError("runScript options must be an object");
  const sandboxOptions: Record<string, unknown> = {};
  const runOptions: Record<string, unknown> = {};
  let tenant: string | undefined;
  for (const key of Object.keys(options ?? {})) {
    const value = (options as Record<string, unknown>)[key];
    if (key === "tenant") tenant = checkTenant(value, "runScript");
    // `modules` are the sandbox's: a one-shot sandbox has only the one run.
    else if (key !== "modules" && (RUN_OPTION_KEYS as readonly string[]).includes(key)) runOptions[key] = value;
    else sandboxOptions[key] = value;
  }
  const pool = sharedPool();
  // Scripts that held their worker for long last time run apart (host/run-demotion.ts):
  // isolated ones too, whose runs would otherwise hold isolated workers others wait for.
  const demotionKey = pool.demotionOn && typeof source === "string" ? RunDemotion.keyOf(source, tenant) : null;
  const sandbox = await Sandbox.create(sandboxOptions as SandboxOptions, pool, true, demotionKey);
  try {
    return await sandbox.run<T>(source, runOptions as RunOptions);
  } finally {
    await sandbox.dispose();
  }
}
