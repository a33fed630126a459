// Messages between the embedder's thread (host/sandbox.ts, host/pool.ts) and a worker
// (host/worker/). Values inside are structured-cloned by postMessage; guest values never
// appear here, only host copies of them.
import type { Limits } from "./limits.js";
import type { LogEntry, SandboxError, RunStats, SecretOption, CloudOption } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";

export interface SandboxConfig {
  limits: Limits;
  allow: string[];
  env: Record<string, string>;
  secrets: Record<string, SecretOption>;
  cloud: CloudOption | null;
  location: string | null;
  streamLogs: boolean;
  variant: EngineVariantName;
}

export type WorkerRequest =
  | { op: "create"; sandboxId: number; config: SandboxConfig }
  | { op: "run"; sandboxId: number; code: string; filename: string; input: unknown }
  | { op: "load"; sandboxId: number; pluginId: number; code: string; filename: string }
  | { op: "call"; sandboxId: number; pluginId: number; name: string; args: unknown[] }
  | { op: "unload"; sandboxId: number; pluginId: number }
  | { op: "dispose"; sandboxId: number };

/** What a run, a load or a call produced, before source mapping. */
export interface ActivationOutcome {
  ok: boolean;
  value?: unknown;
  error?: SandboxError;
  logs: LogEntry[];
  stats: RunStats;
  /** Set when the failure disposed the sandbox (its engine instance could not go on). */
  sandboxDisposed?: string;
  /** For loads: the plugin's export names. */
  exports?: string[];
}

export type WorkerReply = { type: "reply"; id: number; ok: true; value: unknown } | { type: "reply"; id: number; ok: false; error: { name: string; message: string } };

export type WorkerMessage =
  | WorkerReply
  /** Streamed console entries of one sandbox, in order (batched: see WorkerHost.queueLog). */
  | { type: "log"; sandboxId: number; entries: LogEntry[] }
  /** A sandbox failed outside any request (its engine could not free a realm): it is gone. */
  | { type: "disposed"; sandboxId: number; reason: string }
  | { type: "ready" };

export interface WorkerInit {
  /** The channel both ways (a MessagePort, so the embedder can take replies synchronously). */
  port: import("node:worker_threads").MessagePort;
  wasmModules: Partial<Record<EngineVariantName, WebAssembly.Module>>;
  /** Shared with the embedder's watchdog: [deadline (epoch ms, 0 = not in guest code), sandboxId]. */
  watchdog: SharedArrayBuffer;
  warmPoolSize: number;
}
