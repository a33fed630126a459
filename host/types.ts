// Public types of the library API (re-exported by src/index.ts).
import type { Limits } from "./limits.js";

export type { Limits };

export type ErrorKind = "syntax" | "script" | "timeout" | "cpu" | "memory" | "limit" | "network-policy";

export interface SandboxError {
  kind: ErrorKind;
  name: string;
  message: string;
  /** The guest stack, mapped to the script's own files, lines and columns. */
  stack: string;
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
}

export type RunResult<T = unknown> =
  | { ok: true; value: T; logs: LogEntry[]; stats: RunStats }
  | { ok: false; error: SandboxError; logs: LogEntry[]; stats: RunStats };

export interface SecretOption {
  value: string;
  /** Origins (scheme://host[:port]) the secret may be sent to, in request headers only. */
  origins: string[];
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
   * then takes down only this sandbox. Costs a thread (~10 MB) per sandbox.
   */
  isolate?: boolean;
}

export interface RunOptions {
  /** Shown in stack traces; a `.ts`/`.mts`/`.cts`/`.tsx` name makes the source TypeScript. */
  filename?: string;
  /** Passed to the script's default-exported function. JSON-like data, Dates and bytes. */
  input?: unknown;
  /**
   * A folder the source is treated as living in: its relative imports (confined to this
   * folder) and npm packages (from the node_modules folders visible from it) are bundled
   * with it, as for `runFile`. Without it a source script imports only builtin and named modules.
   */
  resolveDir?: string;
  /** Source modules the script imports by bare name: `{ lib: { source: "export const x = 1" } }` (TypeScript when `filename` ends in .ts). */
  modules?: Record<string, { source: string; filename?: string }>;
}

export interface LoadOptions {
  filename?: string;
  /** As for RunOptions. */
  resolveDir?: string;
  /** As for RunOptions. */
  modules?: Record<string, { source: string; filename?: string }>;
}
