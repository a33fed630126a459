// `scriptbox worker`: takes scripts from a Redis queue and runs them in this process's
// sandboxes, one line per finished job. SIGTERM/SIGINT drain: no new jobs, running ones
// get --grace ms to finish; exit 0 when they did, 1 when some had to be left to other
// workers (their locks expire and they run again there).
import type { SandboxOptions } from "../../host/types.js";
import { describeConnection, redisOptions } from "../../host/queue/connection.js";
import { UsageError } from "../usage.js";
import { print } from "./run.js";
import { resolveSandboxFlags, type SandboxFlagValues } from "./sandbox-flags.js";
import { connectQueueLibrary, type ConnectionFlags } from "./queue-common.js";

/** `run`'s sandbox flags (for a worker: the maximums and the secrets jobs may name), and the worker's own. */
export interface WorkerCommandOptions extends ConnectionFlags, SandboxFlagValues {
  concurrency?: number;
  grace: number;
  lockDuration: number;
}

/**
 * Job text in a log line: file names and messages come from whoever wrote the job to
 * Redis. Whitespace runs become one space and other control characters are escaped, so a
 * job can neither add lines of its own to the worker's log nor send terminal escapes.
 */
function logText(text: string, max: number): string {
  return text.replace(/\s+/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`).slice(0, max);
}

export async function workerCommand(options: WorkerCommandOptions): Promise<number> {
  const sandbox: SandboxOptions = resolveSandboxFlags(options).options;

  const { startScriptWorker } = await connectQueueLibrary(options);
  let lastError = "";
  let worker;
  try {
    worker = await startScriptWorker({
      connection: options.redis,
      name: options.queue,
      ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      lockDurationMs: options.lockDuration,
      sandbox,
      onJob: (event) => {
        const detail = event.outcome === "ok" ? "" : ` ${logText(event.message ?? "", 200)}`;
        print(process.stdout, `job ${logText(event.id, 200)} ${logText(event.filename, 200)} ${event.outcome} ${event.ms}ms${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}${detail}`);
      },
      onError: (error) => {
        // ioredis reports every failed reconnection attempt: say it once per distinct message.
        if (error.message === lastError) return;
        lastError = error.message;
        print(process.stderr, `scriptbox worker: ${error.message}`);
      },
    });
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError((error as Error).message);
    throw error;
  }
  print(process.stderr, `scriptbox worker: taking jobs from queue "${options.queue}" at ${describeConnection(redisOptions(options.redis))} (SIGTERM drains, grace ${options.grace} ms)`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  print(process.stderr, `scriptbox worker: ${signal}: draining (${worker.running} running)`);
  const { drained } = await worker.close({ graceMs: options.grace });
  if (!drained) print(process.stderr, "scriptbox worker: grace period over; unfinished jobs will run again on another worker");
  // The shared sandbox pool keeps worker threads alive: leave without waiting for them.
  process.exit(drained ? 0 : 1);
}
