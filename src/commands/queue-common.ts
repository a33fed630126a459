// What the queue commands share: loading the queue library (bullmq is optional), checking
// that Redis answers before doing anything (a one-line error, exit 2, not a retry loop),
// and the job options given as flags.
import type * as QueueModule from "../queue.js";
import type { ScriptJobOptions } from "../queue.js";
import { UsageError } from "../usage.js";
import type { Limits } from "../../host/types.js";
import { parseInput } from "./run.js";

/** A job's --cpu-time, --timeout, --memory (only those given); the worker clamps them to its own. */
function limitsFromFlags(flags: Pick<JobFlags, "cpuTime" | "timeout" | "memory">): Partial<Limits> {
  return {
    ...(flags.cpuTime !== undefined ? { cpuTimeMs: flags.cpuTime } : {}),
    ...(flags.timeout !== undefined ? { wallTimeMs: flags.timeout } : {}),
    ...(flags.memory !== undefined ? { memoryBytes: flags.memory } : {}),
  };
}

/** --env K=V entries of a job. */
function parsePairs(entries: string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new UsageError(`${flag} expects NAME=VALUE, got "${entry}"`);
    out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
}

export interface ConnectionFlags {
  redis: string;
  queue: string;
}

export interface JobFlags {
  input?: string;
  allowNet?: string[];
  cpuTime?: number;
  timeout?: number;
  memory?: number;
  env: string[];
  secret: string[];
  attempts?: number;
  priority?: number;
  delay?: number;
  jobId?: string;
}

/** The queue library with bullmq loaded, and Redis known to answer. */
export async function connectQueueLibrary(flags: ConnectionFlags): Promise<typeof QueueModule> {
  const library = await import("../queue.js");
  const { checkRedis, redisOptions } = await import("../../host/queue/connection.js");
  let options;
  try {
    options = redisOptions(flags.redis);
  } catch (error) {
    throw new UsageError(`--redis: ${(error as Error).message}`);
  }
  try {
    await checkRedis(options);
  } catch (error) {
    if (error instanceof library.QueueDependencyError || error instanceof library.RedisUnreachableError) throw new UsageError(error.message);
    throw error;
  }
  return library;
}

/** Runs `use` with a queue handle on a Redis known to answer, and closes the handle after. */
export async function withQueue<T>(flags: ConnectionFlags, use: (queue: QueueModule.ScriptQueue, library: typeof QueueModule) => Promise<T>): Promise<T> {
  const library = await connectQueueLibrary(flags);
  const queue = library.createScriptQueue({ connection: flags.redis, name: flags.queue });
  try {
    return await use(queue, library);
  } finally {
    await queue.close();
  }
}

/** Errors the queue raises for bad input (a flag value, a secret given with a value, …) as usage errors. */
export function asUsageError(error: unknown): never {
  if (error instanceof TypeError || error instanceof RangeError || (error as Error).name === "SyntaxError") throw new UsageError((error as Error).message);
  throw error;
}

export function jobOptionsFromFlags(flags: JobFlags): ScriptJobOptions {
  for (const name of flags.secret) {
    if (name.includes("=") || name.includes("@")) throw new UsageError(`--secret ${name}: a job names a secret (--secret API_TOKEN); its value and origins are configured on the workers`);
  }
  const limits = limitsFromFlags(flags);
  const env = parsePairs(flags.env, "--env");
  return {
    input: parseInput(flags.input),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
    ...(Object.keys(env).length > 0 ? { env } : {}),
    ...(flags.allowNet !== undefined ? { net: { allow: flags.allowNet } } : {}),
    ...(flags.secret.length > 0 ? { secrets: flags.secret } : {}),
    ...(flags.attempts !== undefined ? { attempts: flags.attempts } : {}),
    ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
    ...(flags.delay !== undefined ? { delay: flags.delay } : {}),
    ...(flags.jobId !== undefined ? { jobId: flags.jobId } : {}),
  };
}
