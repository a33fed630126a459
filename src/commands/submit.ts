// `scriptbox submit <file>`: bundles the script here and puts it on the queue. Prints the
// job id; with --wait, waits for the result and prints it as `scriptbox run` does (the
// job's logs, the value or the error) with the same exit codes.
import { existsSync, statSync } from "node:fs";
import { UsageError } from "../usage.js";
import { print, printLog, reportResult } from "./run.js";
import { asUsageError, jobOptionsFromFlags, withQueue, type ConnectionFlags, type JobFlags } from "./queue-common.js";

export interface SubmitCommandOptions extends ConnectionFlags, JobFlags {
  wait: boolean;
  json: boolean;
}

export function submitCommand(file: string, options: SubmitCommandOptions): Promise<number> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`cannot read ${file}: no such file`);
  const jobOptions = jobOptionsFromFlags(options);
  return withQueue(options, async (queue, { JobCancelledError, JobFailedError }) => {
    const job = await queue.submitFile(file, jobOptions).catch(asUsageError);
    if (!options.wait) {
      print(process.stdout, options.json ? JSON.stringify({ id: job.id }) : job.id);
      return 0;
    }
    if (!options.json) print(process.stderr, `scriptbox: job ${job.id} submitted, waiting for its result`);
    let result;
    try {
      result = await job.result();
    } catch (error) {
      if (error instanceof JobCancelledError || error instanceof JobFailedError) {
        print(process.stderr, `scriptbox: ${error.message}`);
        return 1;
      }
      throw error;
    }
    for (const entry of result.logs) printLog(entry, options.json);
    return reportResult(result, options.json);
  });
}
