// Outcomes the embedder's side writes itself, for activations that ended outside the
// script's control: stopped by the embedder (signal, dispose(), queue timeout), lost with
// a worker that another sandbox's runaway took down, or stopped by the hard stop.
// docs/limits.md ("Tenancy") lists these kinds; host/types.ts's ErrorKind documents them.
import type { ActivationOutcome } from "./protocol.js";
import type { ErrorKind } from "./types.js";

/** How the embedder can end an activation from outside. */
export type Interruption = "aborted" | "disposed" | "queue-timeout";

const NO_STATS = { cpuTimeMs: 0, wallTimeMs: 0, memoryBytes: 0, fetches: 0 };

function outcome(kind: ErrorKind, name: string, message: string, extra: Partial<ActivationOutcome> = {}): ActivationOutcome {
  return { ok: false, error: { kind, name, message, stack: "" }, logs: [], stats: { ...NO_STATS }, ...extra };
}

export function interruptionMessage(kind: Interruption, queueTimeoutMs: number | null): string {
  switch (kind) {
    case "aborted":
      return "the run was aborted (its signal fired)";
    case "disposed":
      return "the sandbox was disposed while the script was running";
    case "queue-timeout":
      return `queueTimeoutMs (${queueTimeoutMs} ms) passed before the run could start`;
  }
}

const INTERRUPTION_NAMES: Record<Interruption, string> = { aborted: "AbortError", disposed: "Error", "queue-timeout": "TimeoutError" };

/** The outcome of an activation the embedder ended; the worker's own one when it came in time. */
export function interruptedOutcome(kind: Interruption, queueTimeoutMs: number | null, fromWorker: ActivationOutcome | null): ActivationOutcome {
  const message = interruptionMessage(kind, queueTimeoutMs);
  // The worker's outcome keeps the logs and stats; an activation that finished before the
  // stop took effect keeps its own result.
  if (fromWorker && (fromWorker.ok || (fromWorker.error && fromWorker.error.kind !== "aborted" && fromWorker.error.kind !== "disposed"))) return fromWorker;
  if (fromWorker) return { ...fromWorker, error: { ...fromWorker.error!, kind, name: INTERRUPTION_NAMES[kind], message } };
  return outcome(kind, INTERRUPTION_NAMES[kind], message);
}

/**
 * A bystander not re-run after its worker was lost: it had had effects outside the sandbox,
 * or (`lostWorkers` given) it lost one worker after another, beyond the retries a bystander
 * gets. A plugin call's realm goes with its worker whatever it did.
 */
export function evictedOutcome(what: "run" | "load" | "call", cause: string, lostWorkers: number | null = null): ActivationOutcome {
  const message =
    what === "call"
      ? `the plugin's worker was lost (${cause}); the plugin's state went with it: load it again`
      : lostWorkers === null
        ? `the ${what}'s worker was lost (${cause}) after the ${what} had effects outside the sandbox (a fetch or host call), so it was not re-run; it is safe to retry`
        : `the ${what}'s worker was lost (${cause}), the ${lostWorkers}th worker it lost before it could end, so it was not re-run again; it is safe to retry`;
  return outcome("evicted", "EvictedError", message);
}

/**
 * The embedder's own sandbox was the runaway: its worker was terminated and it is disposed.
 * `used`: its CPU and wall time as the watchdog saw them (the worker, which would have
 * reported them, is gone).
 */
export function hardStoppedOutcome(kind: "cpu" | "timeout", limit: string, used: { cpuTimeMs: number; wallTimeMs: number } | null = null): ActivationOutcome {
  const reason = `${limit} exceeded inside a native call that ignored the interrupt; the sandbox's worker was terminated`;
  const stats = used === null ? { ...NO_STATS } : { ...NO_STATS, ...used };
  return outcome(kind, "LimitError", `${reason} and the sandbox disposed`, { sandboxDisposed: reason, stats });
}

/** The sandbox could not go on (it could not be created, or its engine failed). */
export function disposedOutcome(reason: string): ActivationOutcome {
  return outcome("disposed", "Error", `the sandbox was disposed: ${reason}`, { sandboxDisposed: reason });
}
