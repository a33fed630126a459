// `scriptbox schedule add|list|remove`: scripts that run on a cron schedule (bullmq job
// schedulers). The script is bundled when the schedule is added: re-add to update it.
import { existsSync, statSync } from "node:fs";
import { UsageError } from "../usage.js";
import { print } from "./run.js";
import { asUsageError, jobOptionsFromFlags, withQueue, type ConnectionFlags, type JobFlags } from "./queue-common.js";

export interface ScheduleAddOptions extends ConnectionFlags, JobFlags {
  tz?: string;
}

export function scheduleAddCommand(name: string, cron: string, file: string, options: ScheduleAddOptions): Promise<number> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`cannot read ${file}: no such file`);
  if (options.delay !== undefined || options.jobId !== undefined) throw new UsageError("--delay and --job-id do not apply to a schedule");
  const jobOptions = jobOptionsFromFlags(options);
  return withQueue(options, async (queue) => {
    const info = await queue.addSchedule(name, cron, file, { ...jobOptions, ...(options.tz ? { timezone: options.tz } : {}) }).catch(asUsageError);
    print(process.stdout, `schedule ${info.name}: ${info.cron} ${info.filename}${info.next ? `, next run ${new Date(info.next).toISOString()}` : ""}`);
    return 0;
  });
}

export function scheduleListCommand(options: ConnectionFlags & { json: boolean }): Promise<number> {
  return withQueue(options, async (queue) => {
    const schedules = await queue.listSchedules();
    if (options.json) print(process.stdout, JSON.stringify(schedules));
    else if (schedules.length === 0) print(process.stderr, `no schedules on queue "${options.queue}"`);
    else for (const s of schedules) print(process.stdout, `${s.name}\t${s.cron}\t${s.filename}\t${s.next ? new Date(s.next).toISOString() : "-"}`);
    return 0;
  });
}

export function scheduleRemoveCommand(name: string, options: ConnectionFlags): Promise<number> {
  return withQueue(options, async (queue) => {
    if (await queue.removeSchedule(name)) return 0;
    print(process.stderr, `scriptbox: no schedule named ${name} on queue "${options.queue}"`);
    return 1;
  });
}
