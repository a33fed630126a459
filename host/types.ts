// Public types of the library API (re-exported by src/index.ts).
import type { Limits } from "./limits.js";
import type { HostModules } from "./host-modules/types.js";

export type { Limits };

/**
 * Why a run failed. Besides the script's own outcomes, four kinds come from outside the
 * script (docs/limits.md, "Tenancy"): "aborted" (the run's `signal` fired), "disposed"
 * (`dispose()` was called while it ran), "queue-timeout" (it waited longer than
 * `queueTimeoutMs` before it started), "evicted" (its worker was lost to another sandbox's
 * runaway after it had effects outside the sandbox, so it was not re-run: safe to retry).
 */
export type ErrorKind =
  | "syntax"
  | "script"
  | "timeout"
  | "cpu"
  | "memory"
  | "limit"
  | "network-policy"
  | "aborted"
  | "disposed"
  | "queue-timeout"
  | "evicted";

export interface SandboxError {
  kind: ErrorKind;
  name: string;
  message: string;
  /** The guest stack, mapped to the script's own files, lines and columns. */
  stack: string;
  /** Set when the error was a promise rejection nobody handled (rather than a thrown exception). */
  origin?: "unhandled-rejection";
}

export type LogLevel = "log" | "info" | "warn" | "error" | "debug" | "trace";

export interface LogEntry {
  level: LogLevel;
  message: string;
  /** Milliseconds since the Unix epoch. */
  time: number;
}

export interface RunStats {
  /** Guest execution time used. */
  cpuTimeMs: number;
  wallTimeMs: number;
  /** Size of the sandbox's wasm memory after the run (its high-water mark: wasm memory never shrinks). */
  memoryBytes: number;
  fetches: number;
  /**
   * Time between the call and the start of the run in its worker: queued behind other
   * runs, waiting for an isolated worker, or re-run after a lost worker. Not part of
   * wallTimeMs (which the script's own wallTimeMs limit measures).
   */
  queuedMs: number;
}

export type RunResult<T = unknown> =
  | { ok: true; value: T; logs: LogEntry[]; stats: RunStats }
  | { ok: false; error: SandboxError; logs: LogEntry[]; stats: RunStats };

export interface SecretOption {
  value: string;
  /** Origins (scheme://host[:port]) the secret may be sent to, in request headers only. */
  origins: string[];
  /**
   * Accept a short or low-entropy value (fewer than 16 characters or under ~64 bits): such a
   * value is otherwise refused, because a script can confirm guesses of it through an origin
   * that echoes what it is sent. See docs/network.md "Threat model".
   */
  weak?: boolean;
}

export interface CloudOption {
  baseUrl: string;
  /** The PAT (or OAuth access token) the preconfigured `cloud` client sends, by secret name. */
  token?: { secret: string };
  /** The dashboard session cookie for the PAT GraphQL calls, by secret name. */
  session?: { secret: string };
}

export interface SandboxOptions {
  limits?: Partial<Limits>;
  /** Network allow-list; without it the sandbox has no network at all. */
  net?: { allow?: string[] };
  /** Plain values the script reads with `import { env } from "runtime"`. */
  env?: Record<string, string>;
  secrets?: Record<string, SecretOption>;
  cloud?: CloudOption;
  /** Base URL for relative URLs in fetch/Request (like Deno's --location). */
  location?: string;
  /** Called with every console entry as it happens. */
  onLog?: (entry: LogEntry) => void;
  /**
   * Give this sandbox a worker thread of its own. Sandboxes normally share a small pool
   * of workers; a runaway native call that must be stopped by terminating the worker
   * then takes down only this sandbox. Costs a thread (~25 MiB RSS measured) per live
   * sandbox; at most `maxIsolatedWorkers` (configurePool) at once, later ones wait.
   */
  isolate?: boolean;
  /**
   * Host modules scripts and plugins import by name (`import { notify } from "app"`):
   * functions (async, or synchronous with hostSync), nested plain objects and copied
   * values. See docs/host-modules.md.
   */
  modules?: HostModules;
  /**
   * Who the sandbox's code belongs to (1-256 characters), for demotion: once one of its
   * runs holds its worker for long (50 ms of CPU in one go, 25 ms while others wait for
   * that worker) or is hard-stopped, the tenant's sandboxes created for `demotionMs` after
   * go to the demoted workers, at the lowest OS priority, apart from everyone else's
   * (sandboxes already made stay where their state lives). Without it a createSandbox
   * sandbox is never demoted (docs/architecture.md, "Tenancy").
   */
  tenant?: string;
}

/** The part of AbortSignal that scriptbox uses. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * AbortSignal as the embedder's type libraries declare it (Node's or the DOM's), so that a
 * context's signal can be handed to fetch or a database driver; the part scriptbox uses
 * where neither library is present.
 */
export type AbortSignalType = typeof globalThis extends { AbortSignal: { prototype: infer S } } ? S : AbortSignalLike;

/** Options of one call into a sandbox (every run, load and call takes them). Unknown keys are errors. */
export interface CallOptions {
  /**
   * Ends the activation within milliseconds with kind "aborted" (a busy loop too). Must be
   * a real AbortSignal; typed by shape so that these types compile without Node's or the
   * DOM's type libraries.
   */
  signal?: AbortSignalLike;
  /**
   * Longest wait before the activation starts (behind other runs in its worker, or for an
   * isolated worker); past it, the activation ends with kind "queue-timeout" without
   * running. Once started, only its own limits apply.
   */
  queueTimeoutMs?: number;
}

export interface RunOptions extends CallOptions {
  /** Shown in stack traces; a `.ts`/`.mts`/`.cts`/`.tsx` name makes the source TypeScript. */
  filename?: string;
  /** Passed to the script's default-exported function. JSON-like data, Dates and bytes. */
  input?: unknown;
  /** Host modules added for this run only (a module of the same name replaces the sandbox's). */
  modules?: HostModules;
  /**
   * A folder the source is treated as living in: its relative imports (confined to this
   * folder) and npm packages (from the node_modules folders visible from it) are bundled
   * with it, as for `runFile`. Without it a source script imports only builtin, host and source modules.
   */
  resolveDir?: string;
  /**
   * Source modules the script imports by bare name: `{ lib: { source: "export const x = 1" } }`
   * (TypeScript when `filename` ends in .ts). Not host modules: those are `modules`.
   */
  sourceModules?: Record<string, { source: string; filename?: string }>;
}

/**
 * runScript's options: the sandbox's and the run's in one object. Its `tenant`: a one-shot
 * script that holds its worker for long demotes every script of its tenant for a while, not
 * only its own text (docs/architecture.md, "Tenancy"); without it a script is known by its text.
 */
export type RunScriptOptions = SandboxOptions & RunOptions;

export interface LoadOptions extends CallOptions {
  filename?: string;
  /** As for RunOptions. */
  resolveDir?: string;
  /** As for RunOptions. */
  sourceModules?: Record<string, { source: string; filename?: string }>;
}
