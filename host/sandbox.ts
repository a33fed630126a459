// The embedder's handle on a sandbox (it holds no engine: the sandbox lives in a worker).
import { toCrossable } from "./marshal/crossing-values.js";
import { resolveSandboxConfig } from "./options.js";
import { sharedPool, WorkerLostError, type WorkerConnection, type WorkerPool } from "./pool.js";
import type { ActivationOutcome } from "./protocol.js";
import { StackMapper } from "./source-map.js";
import { prepareSource, ScriptImportError, ScriptSyntaxError, type PreparedSource } from "./transpile.js";
import { bundleEntryFile, bundleSource, type NamedModules } from "./bundle/bundle.js";
import { SandboxDisposedError, ScriptError } from "./errors.js";
import type { LoadOptions, RunOptions, RunResult, SandboxOptions } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";
import { formatBytes } from "./limits.js";

let nextSandboxId = 1;
let nextPluginId = 1;

const EMPTY_STATS = { cpuTimeMs: 0, wallTimeMs: 0, memoryBytes: 0, fetches: 0 };

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

function checkModules(modules: unknown): NamedModules | undefined {
  if (modules === undefined) return undefined;
  if (typeof modules !== "object" || modules === null) throw new TypeError("modules must be an object of { source } by module name");
  for (const [name, module] of Object.entries(modules)) {
    if (name === "" || /[\0\n\r]/.test(name) || name.startsWith(".") || name.startsWith("/")) throw new TypeError(`modules: "${name}" is not a bare module name`);
    const m = module as { source?: unknown; filename?: unknown };
    if (typeof m?.source !== "string") throw new TypeError(`modules.${name}.source must be a string`);
    if (m.filename !== undefined) checkFilename(m.filename);
  }
  return modules as NamedModules;
}

/** Source to one module: transpiled as is, or bundled when it may import files, packages or named modules. */
function prepare(source: string, filename: string, options: { resolveDir?: string; modules?: unknown }): Promise<PreparedSource> {
  const modules = checkModules(options.modules);
  if (options.resolveDir === undefined && modules === undefined) return prepareSource(source, filename);
  if (options.resolveDir !== undefined && typeof options.resolveDir !== "string") throw new TypeError("resolveDir must be a string");
  return bundleSource(source, { filename, resolveDir: options.resolveDir, modules });
}

/** Frames inside the guest library ("at encode (scriptbox:marshal:2:905)") are noise to script authors. */
function withoutLibraryFrames(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => !/^\s+at .*\(?scriptbox:[a-z-]+:\d+:\d+\)?$/.test(line))
    .join("\n");
}

function checkFilename(filename: unknown): string {
  if (filename === undefined) return "script.js";
  if (typeof filename !== "string" || filename === "" || filename.length > 1024 || /[\0\n\r]/.test(filename)) {
    throw new TypeError("filename must be a non-empty single-line string");
  }
  return filename;
}

export class Sandbox {
  readonly #connection: WorkerConnection;
  readonly #pool: WorkerPool;
  readonly #id: number;
  readonly #created: Promise<unknown>;
  /** Set once the worker confirmed the creation: later requests need not wait for it. */
  #confirmed = false;
  readonly #limits: { cpuTimeMs: number; wallTimeMs: number; memoryBytes: number };
  readonly #plugins = new Set<Plugin>();
  #disposed: string | null = null;

  private constructor(pool: WorkerPool, connection: WorkerConnection, id: number, created: Promise<unknown>, limits: { cpuTimeMs: number; wallTimeMs: number; memoryBytes: number }) {
    this.#pool = pool;
    this.#connection = connection;
    this.#id = id;
    this.#created = created;
    this.#limits = limits;
  }

  /** See createSandbox. */
  static async create(options: SandboxOptions = {}, pool: WorkerPool = sharedPool()): Promise<Sandbox> {
    const config = resolveSandboxConfig(options as SandboxOptions & { engineVariant?: EngineVariantName });
    const connection = pool.acquire(options.isolate === true);
    const id = nextSandboxId++;
    connection.onLog(id, options.onLog ?? null);
    const sandboxRef: { sandbox?: Sandbox } = {};
    connection.onDisposed(id, (reason) => {
      if (sandboxRef.sandbox) sandboxRef.sandbox.#markDisposed(reason);
    });
    // Not awaited: the worker handles messages in order, so the first run is pipelined
    // behind the creation instead of waiting a round trip for it.
    const created = connection.request({ op: "create", sandboxId: id, config });
    created.catch(() => undefined);
    sandboxRef.sandbox = new Sandbox(pool, connection, id, created, config.limits);
    return sandboxRef.sandbox;
  }

  get disposed(): boolean {
    return this.#disposed !== null;
  }

  #assertUsable(): void {
    if (this.#disposed !== null) throw new SandboxDisposedError(this.#disposed);
  }

  /** Runs a script (an ES module; TypeScript when filename ends in .ts) in a fresh realm. */
  async run<T = unknown>(source: string, options: RunOptions = {}): Promise<RunResult<T>> {
    this.#assertUsable();
    if (typeof source !== "string") throw new TypeError("source must be a string");
    const filename = checkFilename(options.filename);
    const input = toCrossable(options.input, "input");
    let prepared: PreparedSource;
    try {
      prepared = await prepare(source, filename, options);
    } catch (error) {
      if (isPreparationError(error)) return preparationResult(error) as RunResult<T>;
      throw error;
    }
    return this.#runPrepared(prepared, input) as Promise<RunResult<T>>;
  }

  /**
   * Runs a script file with its relative imports (confined to the file's folder) and the
   * npm packages it imports, bundled by esbuild on this thread and cached by content.
   * The only file access scriptbox offers; the guest itself has none.
   */
  async runFile<T = unknown>(path: string, options: Omit<RunOptions, "filename"> = {}): Promise<RunResult<T>> {
    this.#assertUsable();
    if (typeof path !== "string") throw new TypeError("path must be a string");
    const input = toCrossable(options.input, "input");
    let prepared: PreparedSource;
    try {
      prepared = await bundleEntryFile(path);
    } catch (error) {
      if (isPreparationError(error)) return preparationResult(error) as RunResult<T>;
      throw error;
    }
    return this.#runPrepared(prepared, input) as Promise<RunResult<T>>;
  }

  async #runPrepared(prepared: PreparedSource, input: unknown): Promise<RunResult> {
    const outcome = await this.#request<ActivationOutcome>({ op: "run", sandboxId: this.#id, code: prepared.code, filename: prepared.filename, input });
    return this.#toResult(outcome, prepared);
  }

  /** Loads a plugin module into a realm of its own that stays alive for calls. */
  async load(source: string, options: LoadOptions = {}): Promise<Plugin> {
    this.#assertUsable();
    if (typeof source !== "string") throw new TypeError("source must be a string");
    const filename = checkFilename(options.filename ?? "plugin.js");
    let prepared: PreparedSource;
    try {
      prepared = await prepare(source, filename, options);
    } catch (error) {
      if (isPreparationError(error)) throw new ScriptError(preparationResult(error).error);
      throw error;
    }
    const pluginId = nextPluginId++;
    const outcome = await this.#request<ActivationOutcome>({ op: "load", sandboxId: this.#id, pluginId, code: prepared.code, filename: prepared.filename });
    const result = this.#toResult(outcome, prepared);
    if (!result.ok) throw new ScriptError(result.error);
    const plugin = new Plugin(this, pluginId, outcome.exports ?? [], prepared);
    this.#plugins.add(plugin);
    return plugin;
  }

  /** @internal used by Plugin */
  async callPlugin(plugin: Plugin, pluginId: number, name: string, args: unknown[], prepared: PreparedSource): Promise<RunResult> {
    this.#assertUsable();
    const outcome = await this.#request<ActivationOutcome>({ op: "call", sandboxId: this.#id, pluginId, name, args });
    if (outcome.error?.message.endsWith("the plugin was unloaded")) this.#plugins.delete(plugin);
    return this.#toResult(outcome, prepared);
  }

  /** @internal used by Plugin */
  async unloadPlugin(plugin: Plugin, pluginId: number): Promise<void> {
    if (!this.#plugins.delete(plugin) || this.#disposed !== null) return;
    await this.#request({ op: "unload", sandboxId: this.#id, pluginId }).catch(() => undefined);
  }

  /** Frees the sandbox and its plugins. Safe to call more than once, and with work pending. */
  async dispose(): Promise<void> {
    if (this.#disposed !== null) return;
    this.#disposed = "dispose() was called";
    this.#plugins.clear();
    this.#connection.onLog(this.#id, null);
    this.#connection.onDisposed(this.#id, null);
    try {
      if (!this.#connection.lost) await this.#connection.request({ op: "dispose", sandboxId: this.#id });
    } catch {
      // The worker is gone: nothing left to free.
    } finally {
      this.#pool.release(this.#connection);
    }
  }

  async #request<T>(request: Parameters<WorkerConnection["request"]>[0]): Promise<T> {
    try {
      if (this.#confirmed) return await this.#connection.request<T>(request);
      // The first requests are pipelined behind "create": wait for both.
      const [created, reply] = await Promise.allSettled([this.#created, this.#connection.request<T>(request)]);
      if (created.status === "fulfilled") this.#confirmed = true;
      if (reply.status === "fulfilled") return reply.value;
      if (created.status === "rejected" && !(reply.reason instanceof WorkerLostError)) {
        this.#markDisposed(`it could not be created: ${(created.reason as Error).message}`);
        throw new SandboxDisposedError(this.#disposed!);
      }
      throw reply.reason;
    } catch (error) {
      if (error instanceof SandboxDisposedError) throw error;
      if ((error as Error).name === "SandboxDisposedError") {
        // The worker disposed the sandbox on its own (its engine failed).
        this.#markDisposed((error as Error).message);
        throw new SandboxDisposedError(this.#disposed!);
      }
      if (!(error instanceof WorkerLostError)) throw error;
      if (error.stoppedSandboxId === this.#id && (request.op === "run" || request.op === "call" || request.op === "load")) {
        const limit = error.stopReason === "timeout" ? `wallTimeMs limit (${this.#limits.wallTimeMs} ms)` : `cpuTimeMs limit (${this.#limits.cpuTimeMs} ms)`;
        const reason = `${limit} exceeded inside a native call that ignored the interrupt; the sandbox's worker was terminated`;
        this.#markDisposed(reason);
        return {
          ok: false,
          error: { kind: error.stopReason ?? "cpu", name: "LimitError", message: `${reason} and the sandbox disposed`, stack: "" },
          logs: [],
          stats: { ...EMPTY_STATS },
          sandboxDisposed: reason,
        } satisfies ActivationOutcome as T;
      }
      this.#markDisposed(error.stoppedSandboxId !== null ? "its worker was terminated to stop a runaway script in another sandbox" : error.message);
      throw new SandboxDisposedError(this.#disposed!);
    }
  }

  #markDisposed(reason: string): void {
    if (this.#disposed !== null) return;
    this.#disposed = reason;
    this.#plugins.clear();
    this.#connection.onLog(this.#id, null);
    this.#connection.onDisposed(this.#id, null);
    this.#pool.release(this.#connection);
  }

  #toResult(outcome: ActivationOutcome, prepared: PreparedSource): RunResult {
    if (outcome.sandboxDisposed) this.#markDisposed(outcome.sandboxDisposed);
    if (outcome.ok) return { ok: true, value: outcome.value, logs: outcome.logs, stats: outcome.stats };
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
    return { ok: false, error, logs: outcome.logs, stats: outcome.stats };
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

  /** Calls an exported function; resolves with its (awaited) return value, or throws a ScriptError. */
  async call<T = unknown>(name: string, ...args: unknown[]): Promise<T> {
    const result = await this.invoke<T>(name, ...args);
    if (!result.ok) throw new ScriptError(result.error);
    return result.value;
  }

  /** Like call, but resolves with the whole result (value or error, logs, stats). */
  async invoke<T = unknown>(name: string, ...args: unknown[]): Promise<RunResult<T>> {
    if (typeof name !== "string") throw new TypeError("the export name must be a string");
    const crossable = args.map((arg, i) => toCrossable(arg, `args[${i}]`));
    return (await this.#sandbox.callPlugin(this, this.#id, name, crossable, this.#prepared)) as RunResult<T>;
  }

  async unload(): Promise<void> {
    await this.#sandbox.unloadPlugin(this, this.#id);
  }
}

/** Creates a sandbox: its worker, engine instance and limits. Options are validated here. */
export function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return Sandbox.create(options);
}

/** One-shot: create a sandbox, run the script, dispose the sandbox. */
export async function runScript<T = unknown>(source: string, options: SandboxOptions & RunOptions = {}): Promise<RunResult<T>> {
  const { filename, input, resolveDir, modules, ...sandboxOptions } = options;
  const sandbox = await createSandbox(sandboxOptions);
  try {
    return await sandbox.run<T>(source, { filename, input, resolveDir, modules });
  } finally {
    await sandbox.dispose();
  }
}
