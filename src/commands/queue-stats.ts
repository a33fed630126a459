// `scriptbox queue stats`: how many jobs are in each state.
import { print } from "./run.js";
import { connectQueueLibrary, type ConnectionFlags } from "./queue-common.js";

export async function queueStatsCommand(options: ConnectionFlags & { json: boolean }): Promise<number> {
  const { createScriptQueue } = await connectQueueLibrary(options);
  const queue = createScriptQueue({ connection: options.redis, name: options.queue });
  try {
    const stats = await queue.stats();
    if (options.json) print(process.stdout, JSON.stringify(stats));
    else for (const [state, count] of Object.entries(stats)) print(process.stdout, `${state.padEnd(12)}${count}`);
    return 0;
  } finally {
    await queue.close();
  }
}
