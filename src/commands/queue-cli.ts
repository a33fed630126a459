// Registers the queue commands (`worker`, `submit`, `schedule`, `queue`) on the program.
// Each command module is loaded when its command runs: bullmq is optional, and `run`
// must not pay for the queue.
import { Command, InvalidArgumentError } from "commander";

export interface FlagParsers {
  parseSize: (value: string) => number;
  parsePositiveNumber: (value: string) => number;
}

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
const jobFlags = (command: Command, parsers: FlagParsers) =>
  command
    .option("--input <json>", "input for the default-exported function: JSON text, or @file.json")
    .option("--allow-net <hosts>", "narrow the workers' network allow-list to these host[:port] entries (comma-separated, repeatable)", collectList)
    .option("--cpu-time <ms>", "guest CPU time limit (at most the worker's)", parsers.parsePositiveNumber)
    .option("--timeout <ms>", "wall-clock limit (at most the worker's)", parsers.parsePositiveNumber)
    .option("--memory <size>", "memory limit (at most the worker's)", parsers.parseSize)
    .option("--env <K=V>", "an env value for the script (repeatable)", collect, [])
    .option("--secret <NAME>", "a secret the script uses, by name: the workers hold its value (repeatable)", collect, [])
    .option("--attempts <n>", "runs in all if the script fails (default 1: no retry)", parseCount);

async function exit(code: Promise<number>): Promise<void> {
  process.exitCode = await code;
}

export function registerQueueCommands(program: Command, parsers: FlagParsers): void {
  connectionFlags(
    program
      .command("worker")
      .description("take scripts from a Redis queue and run them in sandboxes (see docs/queue.md)")
      .option("--concurrency <n>", "jobs run at once (default: the number of CPUs)", parseCount)
      .option("--allow-net <hosts>", "the network allow-list; jobs may narrow it, never widen it", collectList, [])
      .option("--cpu-time <ms>", "guest CPU time limit, the most a job may ask for", parsers.parsePositiveNumber)
      .option("--timeout <ms>", "wall-clock limit, the most a job may ask for", parsers.parsePositiveNumber)
      .option("--memory <size>", "memory limit, the most a job may ask for", parsers.parseSize)
      .option("--env <K=V>", "an env value every job sees (repeatable)", collect, [])
      .option("--secret <NAME=ENV_VAR@origin>", "a secret jobs may name, from an environment variable, usable only towards origin (repeatable)", collect, [])
      .option("--weak-secret <NAME>", "accept a short or low-entropy value for secret NAME, which is refused otherwise (repeatable)", collect, [])
      .option("--cloud-url <url>", "base URL of the cloud API for the preconfigured `cloud` client")
      .option("--cloud-token-secret <NAME>", "the secret holding the cloud API token (PAT)")
      .option("--cloud-session-secret <NAME>", "the secret holding the dashboard session")
      .option("--location <url>", "base URL for relative URLs in fetch")
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
      parsers,
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
      parsers,
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
