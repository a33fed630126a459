// The submitting side of the script queue: bundles scripts here (a worker on another
// machine needs no file system access), checks job options here (a mistake is an error
// at submit), and hands out job handles whose result() is the sandbox's RunResult.
import type { Queue, QueueEvents } from "bullmq";
import { toCrossable } from "../marshal/crossing-values.js";
import { bundleEntryFile } from "../bundle/bundle.js";
import { prepareSource, type PreparedSource } from "../transpile.js";
import type { RunResult } from "../types.js";
import { loadBullMQ } from "./bullmq-loader.js";
import { redisOptions, type RedisConnection, type RedisOptions } from "./connection.js";
import { decodeResult, encodeValue, FAILED_RESULT_FIELD, JOB_FORMAT, portableScript, type ScriptJobData } from "./job-data.js";
import { checkJobOptions, type ScriptJobOptions } from "./job-options.js";
import { DEFAULT_RETENTION, type Retention } from "./retention.js";
import { cancelChannel, cancelledKey, CANCELLED_REASON, DEFAULT_QUEUE_NAME, QUEUE_PREFIX } from "./names.js";

export interface ScriptQueueOptions {
  /** A redis:// URL or { host, port, … } (default redis://127.0.0.1:6379). */
  connection?: RedisConnection;
  /** The queue's name (default "scripts"); workers take jobs from the queue of their name. */
  name?: string;
  /** How long finished jobs stay in Redis (defaults: docs/queue.md). */
  retention?: Retention;
}

export interface QueueStats {
  waiting: number;
  active: number;
  delayed: number;
  prioritized: number;
  completed: number;
  failed: number;
}

export interface ScheduleInfo {
  name: string;
  cron: string;
  filename: string;
  next: number | null;
}

export class JobCancelledError extends Error {
  constructor(id: string) {
    super(`job ${id} was cancelled`);
    this.name = "JobCancelledError";
  }
}

export class JobFailedError extends Error {
  constructor(id: string, reason: string) {
    super(`job ${id} failed without a script result: ${reason}`);
    this.name = "JobFailedError";
  }
}

/** How often a waiting job.result() looks at the job's state besides listening for its events. */
const RESULT_RECHECK_MS = 5_000;

export type CancelOutcome = "removed" | "signalled" | "finished";

/** How a job ended, as #finished sees it; missing: there is no such job (any more). */
type JobEnd = { completed: true; value: unknown } | { completed: false; reason: string; missing?: boolean };

/** A submitted job. */
export class ScriptJob {
  readonly id: string;
  readonly #owner: ScriptQueue;

  /** @internal */
  constructor(owner: ScriptQueue, id: string) {
    this.#owner = owner;
    this.id = id;
  }

  /**
   * Waits for the job to finish and resolves with its RunResult, the shape sandbox.run
   * returns. A script that failed resolves with `ok: false` (its error kind says why);
   * a job that ended without a script result (cancelled, or the worker gave up on it)
   * rejects with JobCancelledError or JobFailedError.
   */
  result<T = unknown>(): Promise<RunResult<T>> {
    return this.#owner.resultOf(this.id) as Promise<RunResult<T>>;
  }

  /**
   * Cancels the job: a job that has not started is removed; a running one is stopped by
   * its worker. Resolves with what happened ("finished" when it was already done).
   */
  cancel(): Promise<CancelOutcome> {
    return this.#owner.cancel(this.id);
  }

  /** "waiting", "active", "delayed", "prioritized", "completed", "failed" or "unknown". */
  state(): Promise<string> {
    return this.#owner.stateOf(this.id);
  }
}

export class ScriptQueue {
  readonly name: string;
  readonly #redis: RedisOptions;
  readonly #retention: { completed: { age: number; count: number }; failed: { age: number; count: number } };
  #queue: Promise<Queue> | null = null;
  #events: Promise<QueueEvents> | null = null;
  #closed = false;

  constructor(options: ScriptQueueOptions = {}) {
    this.name = options.name ?? DEFAULT_QUEUE_NAME;
    if (typeof this.name !== "string" || !/^[A-Za-z0-9_.-]{1,100}$/.test(this.name)) throw new TypeError("name must be 1-100 letters, digits, '_', '.' or '-'");
    this.#redis = redisOptions(options.connection);
    this.#retention = { completed: { ...DEFAULT_RETENTION.completed, ...options.retention?.completed }, failed: { ...DEFAULT_RETENTION.failed, ...options.retention?.failed } };
    for (const [state, { age, count }] of Object.entries(this.#retention)) {
      if (!Number.isInteger(age) || age < 0 || !Number.isInteger(count) || count < 0) throw new RangeError(`retention.${state}: age (seconds) and count must be integers of at least 0`);
    }
  }

  #bullQueue(): Promise<Queue> {
    if (this.#closed) return Promise.reject(new Error("the script queue was closed"));
    this.#queue ??= loadBullMQ().then(({ Queue }) => {
      const queue = new Queue(this.name, {
        connection: this.#redis,
        prefix: QUEUE_PREFIX,
        defaultJobOptions: { removeOnComplete: this.#retention.completed, removeOnFail: this.#retention.failed },
      });
      queue.on("error", () => undefined); // ioredis reconnects; calls fail or wait meanwhile
      return queue;
    });
    return this.#queue;
  }

  #queueEvents(): Promise<QueueEvents> {
    this.#events ??= loadBullMQ().then(async ({ QueueEvents }) => {
      // Read events from now on Redis's clock. bullmq's default ("$") starts at its first
      // XREAD, which can come after a job's state was checked: its event would be missed.
      const client = (await (await this.#bullQueue()).client) as unknown as { time(): Promise<[string, string]> };
      const [seconds, micros] = await client.time();
      const lastEventId = `${Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - 1}-0`;
      const events = new QueueEvents(this.name, { connection: this.#redis, prefix: QUEUE_PREFIX, lastEventId });
      events.on("error", () => undefined);
      events.setMaxListeners(0); // two listeners per job.result() waiting
      await events.waitUntilReady();
      return events;
    });
    // A failed setup (Redis away at that moment) is tried again by the next result().
    this.#events.catch(() => (this.#events = null));
    return this.#events;
  }

  /** Submits a script given as source text (TypeScript when options.filename ends in .ts). */
  async submit(source: string, options: ScriptJobOptions = {}): Promise<ScriptJob> {
    if (typeof source !== "string") throw new TypeError("source must be a string");
    const checked = checkJobOptions(options);
    return this.#add(await prepareSource(source, options.filename ?? "script.js"), options.input, checked);
  }

  /** Submits a script file, bundled here with its relative imports and its source map. */
  async submitFile(path: string, options: Omit<ScriptJobOptions, "filename"> = {}): Promise<ScriptJob> {
    const checked = checkJobOptions(options);
    return this.#add(await bundleEntryFile(path), options.input, checked);
  }

  /** A handle on a job submitted earlier (by id). */
  job(id: string): ScriptJob {
    return new ScriptJob(this, String(id));
  }

  #jobData(script: PreparedSource, input: unknown, checked: ReturnType<typeof checkJobOptions>): ScriptJobData {
    const crossable = toCrossable(input, "input");
    return { format: JOB_FORMAT, script: portableScript(script), ...(crossable !== undefined ? { input: encodeValue(crossable) } : {}), ...checked.data };
  }

  async #add(script: PreparedSource, input: unknown, checked: ReturnType<typeof checkJobOptions>): Promise<ScriptJob> {
    const data = this.#jobData(script, input, checked);
    const queue = await this.#bullQueue();
    // A job id used again after its job was cancelled names a new job: not a cancelled one.
    if (checked.queueOptions.jobId !== undefined) await (await queue.client).del(cancelledKey(this.name, checked.queueOptions.jobId));
    const job = await queue.add(script.filename, data, checked.queueOptions);
    return new ScriptJob(this, job.id!);
  }

  /** @internal */
  async resultOf(id: string): Promise<RunResult> {
    const [queue, events] = await Promise.all([this.#bullQueue(), this.#queueEvents()]);
    const end = await this.#finished(queue, events, id);
    if (end.completed) {
      const result = typeof end.value === "string" ? decodeResult(end.value) : null;
      if (result === null) throw new JobFailedError(id, "its return value is not a script result");
      return result;
    }
    const client = await queue.client;
    // Cancelled: a job removed before it started has only its mark left; a running one
    // may hold the script result of an earlier attempt, which is not this job's outcome.
    if (end.reason === CANCELLED_REASON) throw new JobCancelledError(id);
    if (end.missing) {
      if ((await client.get(cancelledKey(this.name, id))) !== null) throw new JobCancelledError(id);
      throw new JobFailedError(id, end.reason);
    }
    const stored = await client.hget(queue.toKey(id), FAILED_RESULT_FIELD);
    const result = stored === null ? null : decodeResult(stored);
    if (result !== null) return result;
    if (end.reason === CANCELLED_REASON) throw new JobCancelledError(id);
    throw new JobFailedError(id, end.reason);
  }

  /**
   * Waits for the job's completed or failed event, and looks at its state now and every
   * few seconds as well: an event can be missed (a reconnection, a stream trimmed while
   * this process was away), a state cannot.
   */
  #finished(queue: Queue, events: QueueEvents, id: string): Promise<JobEnd> {
    // Per-job event names ("completed:17") are not in bullmq's typed listener map.
    const emitter = events as unknown as NodeJS.EventEmitter;
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (end: JobEnd) => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        emitter.off(`completed:${id}`, onCompleted);
        emitter.off(`failed:${id}`, onFailed);
        emitter.off(`removed:${id}`, onRemoved);
        resolve(end);
      };
      const onCompleted = (args: { returnvalue: unknown }) => settle({ completed: true, value: args.returnvalue });
      const onFailed = (args: { failedReason: string }) => settle({ completed: false, reason: args.failedReason });
      // Removed (cancelled before it started): look at once rather than at the next check.
      const onRemoved = () => void checkOrFail();
      emitter.on(`completed:${id}`, onCompleted);
      emitter.on(`failed:${id}`, onFailed);
      emitter.on(`removed:${id}`, onRemoved);
      const check = async () => {
        const state = await queue.getJobState(id);
        if (state !== "completed" && state !== "failed" && state !== "unknown") return;
        const { Job } = await loadBullMQ();
        const job = await Job.fromId(queue, id);
        if (!job) settle({ completed: false, missing: true, reason: "no such job (never submitted, or removed by retention)" });
        else if (state === "completed") settle({ completed: true, value: job.returnvalue });
        else if (state === "failed") settle({ completed: false, reason: job.failedReason });
      };
      const checkOrFail = () => check().catch((error: unknown) => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        reject(error as Error);
      });
      const timer = setInterval(checkOrFail, RESULT_RECHECK_MS);
      void checkOrFail();
    });
  }

  /** @internal */
  async cancel(id: string): Promise<CancelOutcome> {
    const queue = await this.#bullQueue();
    const { Job } = await loadBullMQ();
    const job = await Job.fromId(queue, id);
    if (!job) return "finished";
    const state = await job.getState();
    if (state === "completed" || state === "failed") return "finished";
    // The mark first: whichever way the job goes from here (removed, or started by a
    // worker that has not seen the signal yet), it ends as cancelled.
    const client = await queue.client;
    await client.set(cancelledKey(this.name, id), "1", { EX: Math.max(1, this.#retention.failed.age) });
    if (state !== "active") {
      try {
        await job.remove();
        return "removed";
      } catch {
        // It became active meanwhile: signal its worker below.
      }
    }
    await (client as unknown as { publish(channel: string, message: string): Promise<number> }).publish(cancelChannel(this.name), id);
    return "signalled";
  }

  /** @internal */
  async stateOf(id: string): Promise<string> {
    const queue = await this.#bullQueue();
    return queue.getJobState(id);
  }

  async stats(): Promise<QueueStats> {
    const queue = await this.#bullQueue();
    const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized", "completed", "failed");
    return { waiting: counts.waiting ?? 0, active: counts.active ?? 0, delayed: counts.delayed ?? 0, prioritized: counts.prioritized ?? 0, completed: counts.completed ?? 0, failed: counts.failed ?? 0 };
  }

  /**
   * Runs a script file on a cron schedule (a BullMQ job scheduler): adding a schedule of
   * an existing name replaces it. The file is bundled now; re-add to pick up changes.
   */
  async addSchedule(name: string, cron: string, path: string, options: Omit<ScriptJobOptions, "filename" | "delay" | "jobId"> & { timezone?: string } = {}): Promise<ScheduleInfo> {
    if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,100}$/.test(name)) throw new TypeError("a schedule name is 1-100 letters, digits, '_', '.' or '-'");
    const { timezone, ...jobOptions } = options;
    // The types leave them out; a JS caller could still pass them, and bullmq's scheduler
    // silently replaces a jobId and a delay of its own: say so rather than ignore them.
    for (const key of ["filename", "delay", "jobId"]) if (Object.hasOwn(jobOptions, key)) throw new TypeError(`${key} does not apply to a schedule`);
    const checked = checkJobOptions(jobOptions);
    const { CronExpressionParser } = await loadCronParser();
    try {
      CronExpressionParser.parse(cron, timezone ? { tz: timezone } : {});
    } catch (error) {
      throw new TypeError(`not a cron expression: ${JSON.stringify(cron)} (${(error as Error).message})`);
    }
    const script = await bundleEntryFile(path);
    const queue = await this.#bullQueue();
    await queue.upsertJobScheduler(name, { pattern: cron, ...(timezone ? { tz: timezone } : {}) }, { name: script.filename, data: this.#jobData(script, jobOptions.input, checked), opts: checked.queueOptions });
    return (await this.listSchedules()).find((s) => s.name === name)!;
  }

  async listSchedules(): Promise<ScheduleInfo[]> {
    const queue = await this.#bullQueue();
    const schedulers = await queue.getJobSchedulers(0, -1, true);
    return schedulers.map((s) => ({ name: s.key, cron: s.pattern ?? "", filename: s.template?.data ? ((s.template.data as ScriptJobData).script?.filename ?? s.name) : s.name, next: s.next ?? null }));
  }

  /** Resolves false when there was no schedule of that name. */
  async removeSchedule(name: string): Promise<boolean> {
    const queue = await this.#bullQueue();
    return queue.removeJobScheduler(name);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closing: Promise<void>[] = [];
    if (this.#events) closing.push(this.#events.then((e) => e.close()).catch(() => undefined));
    if (this.#queue) closing.push(this.#queue.then((q) => q.close()).catch(() => undefined));
    await Promise.all(closing);
  }
}

/** cron-parser is bullmq's own dependency: resolve it the way bullmq does. */
async function loadCronParser(): Promise<{ CronExpressionParser: { parse(expression: string, options: { tz?: string }): unknown } }> {
  const { createRequire } = await import("node:module");
  await loadBullMQ();
  const require = createRequire(createRequire(import.meta.url).resolve("bullmq"));
  const parser = require("cron-parser") as { CronExpressionParser?: unknown; parseExpression?: (e: string, o: { tz?: string }) => unknown };
  if (parser.CronExpressionParser) return parser as never;
  return { CronExpressionParser: { parse: (expression, options) => parser.parseExpression!(expression, options) } };
}

/** A queue handle: submit scripts, wait for results, manage schedules. No connection until first use. */
export function createScriptQueue(options: ScriptQueueOptions = {}): ScriptQueue {
  return new ScriptQueue(options);
}
