// The working side of the script queue: takes jobs from Redis and runs each in a fresh
// sandbox of this process's pool, under this worker's configuration (its limits are the
// maximums, its allow-list the outer bound, its secrets the only secret values).
import { availableParallelism } from "node:os";
import type { Job, Worker } from "bullmq";
import { resolveSandboxConfig } from "../options.js";
import { createSandbox, type Sandbox } from "../sandbox.js";
import type { ErrorKind, RunResult, SandboxOptions } from "../types.js";
import { loadBullMQ, loadIORedis } from "./bullmq-loader.js";
import { redisOptions, type RedisConnection } from "./connection.js";
import { decodeValue, encodeResult, FAILED_RESULT_FIELD, JOB_FORMAT, type ScriptJobData } from "./job-data.js";
import { sandboxOptionsForJob } from "./job-options.js";
import { cancelChannel, cancelledKey, CANCELLED_REASON, DEFAULT_QUEUE_NAME, QUEUE_PREFIX } from "./names.js";

export interface ScriptWorkerOptions {
  connection?: RedisConnection;
  /** The queue to take jobs from (default "scripts"). */
  name?: string;
  /** Jobs run at once in this process (default: the number of CPUs). */
  concurrency?: number;
  /** This worker's sandbox configuration: the maximums and the only source of secrets. */
  sandbox?: Omit<SandboxOptions, "onLog">;
  /**
   * How long a job's lock lasts without renewal (default 30,000 ms). A worker that dies
   * mid-job leaves its job locked this long before another worker takes it over.
   */
  lockDurationMs?: number;
  /** How many times a job may be taken over from a dead worker before it fails (default 3). */
  maxStalledCount?: number;
  /** Called once per finished job (the CLI prints it as a line). */
  onJob?: (event: JobEvent) => void;
  /** Connection and other errors bullmq reports while it recovers from them. */
  onError?: (error: Error) => void;
}

export interface JobEvent {
  id: string;
  filename: string;
  /** "ok", the script's error kind, "cancelled", or "error" (no script result). */
  outcome: "ok" | ErrorKind | "cancelled" | "error";
  ms: number;
  /** 1 for the first run of the job. */
  attempt: number;
  /** The error message when outcome is not "ok". */
  message?: string;
}

export interface ScriptWorker {
  readonly name: string;
  /** Jobs running now. */
  readonly running: number;
  /**
   * Stops taking jobs and waits up to `graceMs` (default 30,000) for the running ones.
   * Resolves with drained: false when some were still running: they are stopped here,
   * and run again on another worker once their locks expire (at-least-once).
   */
  close(options?: { graceMs?: number }): Promise<{ drained: boolean }>;
}

class JobCancelled extends Error {}

/** The most of a script's error kept as a failed job's reason (the whole error is in its result). */
const FAILED_REASON_CHARS = 1_000;

const ABANDONED = "left unfinished when the worker closed: it runs again once its lock expires";

/** The script itself failed: its result is stored and reported already; bullmq retries it if the job asked for attempts. */
class ScriptFailed extends Error {}

function abortPromise(signal: AbortSignal | undefined): Promise<never> | null {
  if (!signal) return null;
  return new Promise((_resolve, reject) => {
    if (signal.aborted) reject(new JobCancelled());
    signal.addEventListener("abort", () => reject(new JobCancelled()), { once: true });
  });
}

export async function startScriptWorker(options: ScriptWorkerOptions = {}): Promise<ScriptWorker> {
  const name = options.name ?? DEFAULT_QUEUE_NAME;
  const redis = redisOptions(options.connection);
  const sandboxOptions: SandboxOptions = { ...(options.sandbox ?? {}) };
  resolveSandboxConfig(sandboxOptions); // a mistake in the worker's own configuration fails here
  const concurrency = options.concurrency ?? availableParallelism();
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1000) throw new RangeError("concurrency must be an integer from 1 to 1000");
  const lockDuration = options.lockDurationMs ?? 30_000;
  if (!Number.isInteger(lockDuration) || lockDuration < 500) throw new RangeError("lockDurationMs must be an integer of at least 500");
  const { Worker, UnrecoverableError } = await loadBullMQ();
  const onError = options.onError ?? (() => undefined);
  let running = 0;
  // The sandboxes of running jobs, and whether close() gave up waiting for them: a job left
  // unfinished runs again on another worker, so it must not go on running here as well.
  const live = new Set<Sandbox>();
  let abandoned = false;

  const processor = async (job: Job, _token?: string, signal?: AbortSignal): Promise<string> => {
    const started = performance.now();
    const data = job.data as ScriptJobData;
    const filename = typeof data?.script?.filename === "string" ? data.script.filename : job.name;
    const report = (outcome: JobEvent["outcome"], message?: string) =>
      options.onJob?.({ id: job.id!, filename, outcome, ms: Math.round(performance.now() - started), attempt: job.attemptsMade + 1, ...(message !== undefined ? { message } : {}) });
    running++;
    try {
      if (data?.format !== JOB_FORMAT || typeof data.script?.code !== "string") throw new UnrecoverableError(`not a scriptbox job (format ${String(data?.format)})`);
      // Beside the sandbox's creation (no added latency): was the job cancelled before
      // this worker tracked it (the signal came too early to reach it)? And a job run
      // again drops the script result of its earlier attempt, so that job.result() never
      // mistakes it for this run's.
      const client = await worker.client;
      const cancelled = client.get(cancelledKey(name, job.id!));
      const cleared = job.attemptsStarted > 1 ? client.hdel(worker.toKey(job.id!), FAILED_RESULT_FIELD) : null;
      let sandbox: Sandbox;
      try {
        sandbox = await createSandbox(sandboxOptionsForJob(data, sandboxOptions));
      } catch (error) {
        await Promise.allSettled([cancelled, cleared]);
        // Nothing a retry would change: a secret this worker lacks, a bad option value.
        throw new UnrecoverableError((error as Error).message);
      }
      try {
        await cleared;
        if ((await cancelled) !== null) throw new JobCancelled();
        // close() gave up on this job while its sandbox was being made: do not start it.
        if (abandoned) throw new Error(ABANDONED);
      } catch (error) {
        void sandbox.dispose();
        if (error instanceof JobCancelled) throw new UnrecoverableError(CANCELLED_REASON);
        throw error;
      }
      let result: RunResult;
      live.add(sandbox);
      try {
        const input = data.input === undefined ? undefined : decodeValue(data.input);
        const aborted = abortPromise(signal);
        const run = sandbox.runPrepared(data.script, { input });
        result = await (aborted ? Promise.race([run, aborted]) : run);
      } catch (error) {
        if (error instanceof JobCancelled) throw new UnrecoverableError(CANCELLED_REASON);
        // Input or script fields that do not decode: running the job again changes nothing.
        if (error instanceof TypeError || error instanceof SyntaxError) throw new UnrecoverableError(`malformed job: ${error.message}`);
        throw error;
      } finally {
        live.delete(sandbox);
        // Not awaited when cancelled: a busy sandbox is freed when its limits stop it.
        void sandbox.dispose();
      }
      // Its lock is no longer renewed and it will run again elsewhere: leave Redis alone.
      if (abandoned) throw new Error(ABANDONED);
      if (result.ok) {
        report("ok");
        return encodeResult(result);
      }
      // Kept in the job's own hash, so retention removes it with the job.
      await client.hset(worker.toKey(job.id!), { [FAILED_RESULT_FIELD]: encodeResult(result) });
      report(result.error.kind, result.error.message);
      // The reason is a summary (the whole error is in the stored result): bullmq keeps it
      // as failedReason, again in the stack trace it stores, and in the events stream, and
      // a script's error message has no size limit of its own (20 MB fits in 64 MiB).
      const summary = `${result.error.kind}: ${result.error.name}: ${result.error.message}`;
      throw new ScriptFailed(summary.length > FAILED_REASON_CHARS ? `${summary.slice(0, FAILED_REASON_CHARS)}… (${summary.length} characters)` : summary);
    } catch (error) {
      const message = (error as Error).message;
      if (error instanceof UnrecoverableError) report(message === CANCELLED_REASON ? "cancelled" : "error", message);
      else if (!(error instanceof ScriptFailed)) report("error", message);
      throw error;
    } finally {
      running--;
    }
  };

  const worker: Worker = new Worker(name, processor, {
    connection: { ...redis, maxRetriesPerRequest: null },
    prefix: QUEUE_PREFIX,
    concurrency,
    lockDuration,
    stalledInterval: lockDuration,
    maxStalledCount: options.maxStalledCount ?? 3,
    autorun: false,
  });
  worker.on("error", onError);

  // Cancellation of running jobs: bullmq's cancelJob reaches only this process's jobs,
  // so the queue side publishes the id and every worker checks whether it runs it.
  const Redis = await loadIORedis();
  const subscriber = new Redis({ ...redis, maxRetriesPerRequest: null });
  subscriber.on("error", onError);
  subscriber.on("message", (_channel: string, id: string) => {
    worker.cancelJob(id, CANCELLED_REASON);
  });
  await subscriber.subscribe(cancelChannel(name));

  // The first sandbox of a process pays for compiling the engine: not the first job.
  const warm = await createSandbox();
  await warm.run("export default 0");
  await warm.dispose();

  void worker.run().catch(onError);
  await worker.waitUntilReady();

  let closing: Promise<{ drained: boolean }> | null = null;
  return {
    name,
    get running() {
      return running;
    },
    close({ graceMs = 30_000 } = {}) {
      closing ??= (async () => {
        // pause: no new jobs, and resolves once the running ones finished. (Not close():
        // once a close is under way bullmq's close(true) returns that same close, which
        // waits for the running jobs however long they take: no grace period at all.)
        const drained = worker.pause().then(
          () => true,
          () => false,
        );
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<false>((resolve) => (timer = setTimeout(resolve, graceMs, false)));
        const ok = await Promise.race([drained, expired]);
        clearTimeout(timer);
        if (!ok) abandoned = true;
        // Forced: the unfinished jobs' locks are no longer renewed (they run again on another
        // worker once they expire), and their sandboxes are stopped here.
        await worker.close(!ok);
        for (const sandbox of live) void sandbox.dispose();
        subscriber.disconnect();
        return { drained: ok };
      })();
      return closing;
    },
  };
}
