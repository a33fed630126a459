// Starting a worker thread at the lowest OS priority right after it is created.
//
// Why: a demoted worker (WorkerPool.acquireDemoted) lowers its own priority as its entry
// module starts, but a new thread first spends ~40 ms of CPU at the priority it inherited
// from the embedder's thread (Node's bootstrap of the worker), and a native hog stopped by
// terminating its demoted worker made its replacement do so among the ordinary runs it was
// meant to spare, once per hog: in the mixed-tenancy bench those restarts alone raised the
// ordinary runs' p50 by ~10-20 ms and their p99 by ~20-50 ms. Linux lets a process lower
// (never raise, without privilege) the priority of any of its own threads by thread id,
// and `new Worker()` creates its thread before it returns: the one task that appeared in
// /proc/self/task across the constructor is that thread, and setpriority on its id lowers
// it while it is still bootstrapping (not before its first instruction: the embedder's
// thread may be preempted between the two, and the new one run a slice at its priority).
import { readdirSync } from "node:fs";
import { constants, setPriority } from "node:os";

/**
 * Runs `start` (which creates one thread) and lowers the new thread to the lowest
 * priority. Best effort, Linux only: when not exactly one new task appeared (another thread
 * started at the same moment: which is ours cannot be told) or /proc is unreadable, nothing
 * is changed, and the thread lowers its own priority once it runs (host/worker/entry.ts).
 */
export function startAtLowestPriority<T>(start: () => T): T {
  if (process.platform !== "linux") return start();
  const before = taskIds();
  const started = start();
  if (before === null) return started;
  const after = taskIds();
  const added = after === null ? [] : [...after].filter((id) => !before.has(id));
  if (added.length === 1) {
    try {
      setPriority(Number(added[0]), constants.priority.PRIORITY_LOW);
    } catch {
      // Gone already, or not allowed here: the thread lowers its own priority as it starts.
    }
  }
  return started;
}

function taskIds(): Set<string> | null {
  try {
    return new Set(readdirSync("/proc/self/task"));
  } catch {
    return null;
  }
}
