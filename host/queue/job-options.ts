// The options a job may carry: checked on the submitting side (a mistake is an error at
// submit, not a failed job later), and applied on the worker within the worker's own
// configuration, which always has the last word.
import { resolveLimits, type Limits } from "../limits.js";
import { checkFilename, resolveSandboxConfig } from "../options.js";
import type { SandboxOptions, SecretOption } from "../types.js";
import { narrowAllowList } from "./allow-narrowing.js";
import type { ScriptJobData } from "./job-data.js";

export interface ScriptJobOptions {
  /** Passed to the script's default-exported function (JSON-like data, Dates, bytes). */
  input?: unknown;
  /** The name stacks show; a .ts name makes a source string TypeScript. */
  filename?: string;
  /** Asked-for limits; each is clamped to the worker's own (a job cannot raise one). */
  limits?: Partial<Limits>;
  /** Env values, added to (and overriding) the worker's own. */
  env?: Record<string, string>;
  /** Network allow-list, intersected with the worker's: a job can narrow it, never widen it. */
  net?: { allow?: string[] };
  /** Names of secrets; each worker resolves them from its own configuration. */
  secrets?: string[];
  /** Runs in all, counting the first (default 1: a script that fails is not run again). */
  attempts?: number;
  /** Delay before the first retry, doubled each time (default 1000). */
  backoffMs?: number;
  /** 1 (highest) to 2,097,152; jobs without a priority go first. */
  priority?: number;
  /** Milliseconds to wait before the job may run. */
  delay?: number;
  /** Your own id: a second submit with the same id is the same job (an idempotency key). */
  jobId?: string;
}

const KNOWN = new Set(["input", "filename", "limits", "env", "net", "secrets", "attempts", "backoffMs", "priority", "delay", "jobId"]);
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function integer(value: unknown, what: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw new RangeError(`${what} must be an integer from ${min} to ${max}, got ${String(value)}`);
  return value;
}

export interface CheckedJobOptions {
  data: Omit<ScriptJobData, "format" | "script" | "input">;
  queueOptions: { attempts?: number; backoff?: { type: "exponential"; delay: number }; priority?: number; delay?: number; jobId?: string };
}

export function checkJobOptions(options: ScriptJobOptions): CheckedJobOptions {
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new TypeError("job options must be an object");
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) throw new TypeError(`unknown job option "${key}" (known: ${[...KNOWN].join(", ")})`);
  const data: CheckedJobOptions["data"] = {};
  if (options.filename !== undefined) checkFilename(options.filename);
  // A misspelt key must not leave the job with the worker's whole list when it meant to narrow it.
  if (typeof options.net === "object" && options.net !== null) {
    for (const key of Object.keys(options.net)) if (key !== "allow") throw new TypeError(`unknown net option "${key}" (a job's net has only allow)`);
  }
  // env and net.allow with the sandbox's own rules (an env key "__proto__", a value that is
  // not a string, an invalid entry): what a worker would refuse is an error here.
  resolveSandboxConfig({ ...(options.env !== undefined ? { env: options.env } : {}), ...(options.net !== undefined ? { net: options.net } : {}) });
  if (options.limits !== undefined) {
    resolveLimits(options.limits); // names and ranges, with the sandbox's own messages
    data.limits = Object.fromEntries(Object.entries(options.limits).filter(([, v]) => v !== undefined));
  }
  if (options.env !== undefined) data.env = { ...options.env };
  if (options.net?.allow !== undefined) data.allow = [...options.net.allow];
  if (options.secrets !== undefined) {
    if (!Array.isArray(options.secrets) || !options.secrets.every((name) => typeof name === "string" && SECRET_NAME.test(name))) {
      throw new TypeError("secrets must be an array of secret names (letters, digits, _): the values stay with the workers");
    }
    data.secrets = [...new Set(options.secrets)];
  }
  const attempts = integer(options.attempts, "attempts", 1, 100);
  const backoffMs = integer(options.backoffMs, "backoffMs", 0, 24 * 3600_000);
  const priority = integer(options.priority, "priority", 1, 2_097_152);
  const delay = integer(options.delay, "delay", 0, 365 * 24 * 3600_000);
  if (options.jobId !== undefined && (typeof options.jobId !== "string" || options.jobId === "" || /^\d+$/.test(options.jobId) || options.jobId.includes(":"))) {
    // bullmq reserves integer ids for its own counter, and ":" separates its key parts.
    throw new TypeError("jobId must be a non-empty string that is not an integer and has no ':'");
  }
  return {
    data,
    queueOptions: {
      ...(attempts !== undefined ? { attempts, backoff: { type: "exponential" as const, delay: backoffMs ?? 1_000 } } : {}),
      ...(priority !== undefined ? { priority } : {}),
      ...(delay !== undefined ? { delay } : {}),
      ...(options.jobId !== undefined ? { jobId: options.jobId } : {}),
    },
  };
}

export class MissingSecretError extends Error {
  constructor(names: string[], known: string[]) {
    super(`the job names secrets this worker does not have: ${names.join(", ")} (the worker has: ${known.join(", ") || "none"})`);
    this.name = "MissingSecretError";
  }
}

/**
 * The sandbox options for one job on this worker: the worker's limits are maximums, its
 * allow-list the outer bound, its secrets the only source of secret values.
 */
export function sandboxOptionsForJob(data: ScriptJobData, worker: SandboxOptions): SandboxOptions {
  const maximums = resolveLimits(worker.limits);
  const limits: Partial<Limits> = { ...worker.limits };
  for (const [key, asked] of Object.entries(data.limits ?? {}) as [keyof Limits, number][]) {
    limits[key] = Math.min(asked, maximums[key]);
  }
  const workerAllow = worker.net?.allow ?? [];
  const allow = data.allow === undefined ? [...workerAllow] : narrowAllowList(data.allow, workerAllow);

  const workerSecrets = worker.secrets ?? {};
  // The worker's cloud client is part of its configuration: its token travels with it.
  const names = new Set([...(data.secrets ?? []), ...(worker.cloud?.token ? [worker.cloud.token.secret] : []), ...(worker.cloud?.session ? [worker.cloud.session.secret] : [])]);
  const unknown = [...names].filter((name) => !Object.hasOwn(workerSecrets, name));
  if (unknown.length > 0) throw new MissingSecretError(unknown, Object.keys(workerSecrets));
  const secrets: Record<string, SecretOption> = {};
  for (const name of names) secrets[name] = workerSecrets[name]!;

  const { onLog: _onLog, ...rest } = worker;
  return { ...rest, limits, net: { allow }, env: { ...worker.env, ...data.env }, secrets };
}
