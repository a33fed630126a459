// Registers the queue commands (`worker`, `submit`, `schedule`, `queue`) on the program.
// Each command module is loaded when its command runs: bullmq is optional, and `run`
// must not pay for the queue.
import { Command, InvalidArgumentError } from "commander";
import { addSandboxFlags } from "./sandbox-flags.js";
import { parseQuantity, type QuantityKind } from "./units.js";

/** A job's limit flag in the user's units (as `run` takes them): 64mb, 2s, 500. */
const quantity = (kind: QuantityKind) => (value: string) => {
  const parsed = parseQuantity(value, kind);
  if (parsed === undefined || parsed.value <= 0) throw new InvalidArgumentError(`expected a positive ${kind === "bytes" ? "size (64mb, 512k, …)" : kind === "ms" ? "duration (ms, or 2s, 1m, …)" : "whole number"}`);
  return parsed.value;
};

const collect = (value: string, previous: string[]) => [...previous, value];
const collectList = (value: string, previous: string[] | undefined) => [...(previous ?? []), ...value.split(",").map((s) => s.trim()).filter(Boolean)];

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a whole number of at least 1");
  return n;
}

function parseMs(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("expected a whole number of milliseconds");
  return n;
}

const connectionFlags = (command: Command) =>
  command
    .option("--redis <url>", "the Redis holding the queue", "redis://127.0.0.1:6379")
    .option("--queue <name>", "the queue's name", "scripts");

/** Flags of a job: what it asks for, within what the workers allow. */
const jobFlags = (command: Command) =>
  command
    .option("--input <json>", "input for the default-exported function: JSON text, or @file.json")
    .option("--allow-net <hosts>", "narrow the workers' network allow-list to these host[:port] entries (comma-separated, repeatable)", collectList)
    .option("--cpu-time <ms>", "guest CPU time limit (at most the worker's)", quantity("ms"))
    .option("--timeout <ms>", "wall-clock limit (at most the worker's)", quantity("ms"))
    .option("--memory <size>", "memory limit (at most the worker's)", quantity("bytes"))
    .option("--env <K=V>", "an env value for the script (repeatable)", collect, [])
    .option("--secret <NAME>", "a secret the script uses, by name: the workers hold its value (repeatable)", collect, [])
    .option("--attempts <n>", "runs in all if the script fails (default 1: no retry)", parseCount);

async function exit(code: Promise<number>): Promise<void> {
  process.exitCode = await code;
}

export function registerQueueCommands(program: Command): void {
  // The worker's sandbox flags are `run`'s (sandbox-flags.ts): for a worker, its limits are
  // the most a job may ask for, its allow-list the widest a job may use, its secrets the
  // ones jobs may name. --config names a scriptbox.config.json (there is no script folder).
  const worker = program
    .command("worker")
    .description("take scripts from a Redis queue and run them in sandboxes (see docs/queue.md)");
  addSandboxFlags(worker);
  connectionFlags(
    worker
      .option("--concurrency <n>", "jobs run at once (default: the number of CPUs)", parseCount)
      .option("--grace <ms>", "on SIGTERM, how long running jobs may take to finish", parseMs, 30_000)
      .option("--lock-duration <ms>", "how soon a job of a dead worker is taken over by another", parseMs, 30_000),
  ).action(async (opts) => {
    const { workerCommand } = await import("./worker.js");
    await exit(workerCommand(opts));
  });

  connectionFlags(
    jobFlags(
      program
        .command("submit")
        .description("bundle a script file and put it on the queue; prints the job id")
        .argument("<file>", "the script (.js or .ts, with its relative imports)"),
    )
      .option("--priority <n>", "1 is the highest; jobs without a priority go first", parseCount)
      .option("--delay <ms>", "wait this long before the job may run", parseMs)
      .option("--job-id <id>", "your own id: submitting the same id again is the same job")
      .option("--wait", "wait for the result and print it as `scriptbox run` does (same exit codes)", false)
      .option("--json", "print JSON on stdout (logs go to stderr)", false),
  ).action(async (file: string, opts) => {
    const { submitCommand } = await import("./submit.js");
    await exit(submitCommand(file, opts));
  });

  const schedule = program.command("schedule").description("run scripts on a cron schedule");
  connectionFlags(
    jobFlags(
      schedule
        .command("add")
        .description("add (or replace) a schedule: the script is bundled now")
        .argument("<name>", "the schedule's name")
        .argument("<cron>", 'cron pattern, e.g. "*/5 * * * *" (optional leading seconds field)')
        .argument("<file>", "the script"),
    ).option("--tz <zone>", "time zone of the cron pattern (default: UTC)"),
  ).action(async (name: string, cron: string, file: string, opts) => {
    const { scheduleAddCommand } = await import("./schedule.js");
    await exit(scheduleAddCommand(name, cron, file, opts));
  });
  connectionFlags(schedule.command("list").description("list the schedules").option("--json", "print JSON", false)).action(async (opts) => {
    const { scheduleListCommand } = await import("./schedule.js");
    await exit(scheduleListCommand(opts));
  });
  connectionFlags(schedule.command("remove").description("remove a schedule").argument("<name>", "the schedule's name")).action(async (name: string, opts) => {
    const { scheduleRemoveCommand } = await import("./schedule.js");
    await exit(scheduleRemoveCommand(name, opts));
  });

  const queue = program.command("queue").description("look at a queue");
  connectionFlags(queue.command("stats").description("jobs waiting, active, delayed, completed, failed").option("--json", "print JSON", false)).action(async (opts) => {
    const { queueStatsCommand } = await import("./queue-stats.js");
    await exit(queueStatsCommand(opts));
  });
}
