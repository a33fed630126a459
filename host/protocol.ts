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
  | {
      op: "call";
      sandboxId: number;
      slot: number;
      pluginId: number;
      name: string;
      args: unknown[];
      hostCalls?: ActivationHostCalls;
      /** The embedder polls for this call's reply: the worker may poll for the next call after answering (host/adaptive-poll.ts). */
      replyPolled?: boolean;
    };

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

/** What the embedder posts for a request: an envelope, or a plain plugin call in its short form. */
export type RequestMessage = { id: number; request: WorkerRequest } | CallMessage;

/**
 * The short forms of the hot path: a plugin call without host calls, and the answer of a call
 * that returned with no logs. Flat arrays, because postMessage's structured clone costs
 * per object and per property: the envelopes ({ id, request: { op, … } } and { type, id,
 * ok, value: { ok, value, logs, stats: { … } } }) cost ~5 µs more per round trip than these
 * between two polling threads, and on a loaded machine plugin.call's p50 went from 48-57 to
 * 30-34 µs with them (docs/performance.md, "plugin.call").
 */
export type CallMessage = [id: number, sandboxId: number, slot: number, pluginId: number, name: string, args: unknown[], replyPolled: 0 | 1];
export type CallAnswerMessage = [id: number, value: unknown, cpuTimeMs: number, wallTimeMs: number, memoryBytes: number, fetches: number];

/** `replyPolled`: a call's flag (see its request type), set here so that the hot path copies no request. */
export function requestMessage(id: number, request: WorkerRequest, replyPolled = false): RequestMessage {
  if (request.op !== "call") return { id, request };
  if (request.hostCalls === undefined) return [id, request.sandboxId, request.slot, request.pluginId, request.name, request.args, replyPolled ? 1 : 0];
  return { id, request: { ...request, replyPolled } };
}

export function readRequestMessage(message: RequestMessage): { id: number; request: WorkerRequest } {
  if (!Array.isArray(message)) return message;
  const [id, sandboxId, slot, pluginId, name, args, replyPolled] = message;
  return { id, request: { op: "call", sandboxId, slot, pluginId, name, args, replyPolled: replyPolled === 1 } };
}

/** The short answer of a call's outcome, or null when it needs the envelope (a failure, logs, a disposal). */
export function callAnswerMessage(id: number, outcome: ActivationOutcome | null): CallAnswerMessage | null {
  if (outcome === null || !outcome.ok || outcome.logs.length > 0 || outcome.sandboxDisposed !== undefined || outcome.exports !== undefined || outcome.error !== undefined) return null;
  const { stats } = outcome;
  return [id, outcome.value, stats.cpuTimeMs, stats.wallTimeMs, stats.memoryBytes, stats.fetches];
}

export function readCallAnswerMessage([id, value, cpuTimeMs, wallTimeMs, memoryBytes, fetches]: CallAnswerMessage): WorkerReply {
  const outcome: ActivationOutcome = { ok: true, value, logs: [], stats: { cpuTimeMs, wallTimeMs, memoryBytes, fetches } };
  return { type: "reply", id, ok: true, value: outcome };
}

export type WorkerMessage =
  | WorkerReply
  | CallAnswerMessage
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
