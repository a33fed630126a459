// `scriptbox queue stats`: how many jobs are in each state.
import { print } from "./run.js";
import { withQueue, type ConnectionFlags } from "./queue-common.js";

export function queueStatsCommand(options: ConnectionFlags & { json: boolean }): Promise<number> {
  return withQueue(options, async (queue) => {
    const stats = await queue.stats();
    if (options.json) print(process.stdout, JSON.stringify(stats));
    else for (const [state, count] of Object.entries(stats)) print(process.stdout, `${state.padEnd(12)}${count}`);
    return 0;
  });
}
