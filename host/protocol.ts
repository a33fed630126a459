// Messages between the embedder's thread (host/sandbox.ts, host/pool.ts) and a worker
// (host/worker/). Values inside are structured-cloned by postMessage; guest values never
// appear here, only host copies of them.
import type { Limits } from "./limits.js";
import type { LogEntry, SandboxError, RunStats, SecretOption, CloudOption } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";
import type { ActivationHostCalls, HostCallsOpenMessage, HostModulesManifest } from "./host-modules/manifest.js";

export interface SandboxConfig {
  limits: Limits;
  allow: string[];
  env: Record<string, string>;
  secrets: Record<string, SecretOption>;
  cloud: CloudOption | null;
  location: string | null;
  streamLogs: boolean;
  variant: EngineVariantName;
  /** The sandbox's host modules (their shape and values; the functions stay with the embedder). */
  hostModules?: HostModulesManifest | null;
}

export type WorkerRequest =
  | { op: "create"; sandboxId: number; config: SandboxConfig }
  | ActivationRequest
  | { op: "unload"; sandboxId: number; pluginId: number }
  /**
   * The worker forgets the sandbox at once and frees its engine as idle work, or before
   * answering with `freeNow` (a dedicated worker, which the embedder may terminate next).
   */
  | { op: "dispose"; sandboxId: number; freeNow?: boolean }
  /** Ends the activation of that slot if it is waiting (on timers or fetches); see activation-slots.ts. */
  | { op: "abort"; slot: number };

/** Requests that enter guest code. `slot` is the activation's shared slot (host/activation-slots.ts). */
export type ActivationRequest =
  | { op: "run"; sandboxId: number; slot: number; code: string; filename: string; input: unknown; hostCalls?: ActivationHostCalls }
  | { op: "load"; sandboxId: number; slot: number; pluginId: number; code: string; filename: string; hostCalls?: ActivationHostCalls }
  | { op: "call"; sandboxId: number; slot: number; pluginId: number; name: string; args: unknown[]; hostCalls?: ActivationHostCalls };

/** What a run, a load or a call produced, before source mapping. */
export interface ActivationOutcome {
  ok: boolean;
  value?: unknown;
  error?: SandboxError;
  logs: LogEntry[];
  /** queuedMs is the embedder's to measure (host/sandbox.ts). */
  stats: Omit<RunStats, "queuedMs">;
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
  | { type: "ready" }
  /** Sent first: the worker thread's kernel id, so the watchdog can read its CPU time (null off Linux). */
  | { type: "thread"; threadId: number | null }
  | HostCallsOpenMessage;

export interface WorkerInit {
  /** The channel both ways (a MessagePort, so the embedder can take replies synchronously). */
  port: import("node:worker_threads").MessagePort;
  /** Shared with the embedder's watchdog: [deadline (epoch ms, 0 = not in guest code), sandboxId]. */
  watchdog: SharedArrayBuffer;
  /** Shared per-activation slots (host/activation-slots.ts). */
  activationSlots: SharedArrayBuffer;
  /**
   * The worker's warm pool (host/worker/warm-pool.ts): `size` engines kept built, and up to
   * `burstExtraMax` more of disposed sandboxes while a burst uses them.
   */
  warmPool: { size: number; burstExtraMax: number };
  /** A demoted worker: the thread lowers its own OS scheduling priority to the lowest at start. */
  lowPriority: boolean;
}

/**
 * Plugin calls briefly poll for their reply instead of sleeping until it arrives (host/pool.ts),
 * and the worker for the next call after answering one (host/worker/worker-host.ts). Waking
 * an idle thread costs ~30-200 µs on this kind of machine, more than a call; polling for a
 * reply that comes within microseconds makes the round trip ~10 µs. Each poll is bounded (at
 * most this long) and backs off while it does not pay, as on a loaded machine
 * (host/adaptive-poll.ts).
 */
export const CALL_POLL_MS = 0.2;

/**
 * The first message on the port: the compiled engine module(s). Sent after the thread was
 * started rather than in its workerData, so that compiling the module on the embedder's
 * thread (the first time) overlaps the worker thread's own start-up.
 */
export interface WorkerModules {
  wasmModules: Partial<Record<EngineVariantName, WebAssembly.Module>>;
}
