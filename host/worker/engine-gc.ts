// Giving the memory of dropped engine instances back to the system.
//
// An engine instance's linear memory is a WebAssembly.Memory: V8 frees it only when a
// garbage collection finds the instance unreachable. A worker that has dropped a sandbox
// whose heap grew to 100 MiB is usually idle afterwards, and an idle isolate does not
// collect, so that memory stayed resident until the worker happened to allocate enough to
// trigger a full GC: the embedder's RSS measured +110-150 MiB after a few hostile runs
// that built 24 MiB results, long after they were disposed (test/tenancy/pool-rss.test.ts).
//
// So the worker collects its own isolate once the memory of the instances it dropped adds
// up to DROPPED_BYTES_BEFORE_GC, and again once it has dropped nothing more for QUIET_MS
// (if it dropped anything since that collection): below the threshold nothing else
// collects, and a collection at the threshold can run while a dropped instance is still
// reachable (a stopped run's pending callbacks), after which nothing would try again.
// Either way the memory stayed resident until V8's own heuristics collected: +12-20 MiB
// for ~4 s after one grown sandbox was disposed in a quiet process, and, in one CI run of
// test/tenancy/pool-rss.test.ts, 45 MiB for the test's whole 15 s. A full GC of a
// worker's small JS heap costs a few ms; it runs on a turn of its own (between the steps
// of any request), the quiet one as the worker's idle work (never ahead of a queued run),
// at most once per QUIET_MS beyond the threshold's.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const DROPPED_BYTES_BEFORE_GC = 32 * 1024 * 1024;
/** Anything dropped is collected (again) once nothing more was dropped for this long. */
export const QUIET_MS = 1_000;

/** Dropped since the last collection at the threshold, and since the last quiet one. */
let dropped = 0;
let droppedSinceQuietGc = 0;
let scheduled = false;
let quietTimer: NodeJS.Timeout | null = null;
let collect: (() => void) | null | undefined;
/** How the quiet collection is run: the worker's idle work (setIdleScheduler), or at once. */
let whenIdle: (task: () => void) => void = (task) => task();

/** The worker host's idle-work queue (WorkerHost.whenIdle): the quiet collection waits for queued runs. */
export function setIdleScheduler(schedule: (task: () => void) => void): void {
  whenIdle = schedule;
}

function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === "function") return (collect = exposed);
  try {
    setFlagsFromString("--expose-gc");
    const gc: unknown = runInNewContext("gc");
    collect = typeof gc === "function" ? (gc as () => void) : null;
  } catch {
    collect = null;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  return collect;
}

function collectAtThreshold(): void {
  scheduled = false;
  dropped = 0;
  collector()?.();
}

function collectOnceQuiet(): void {
  if (droppedSinceQuietGc === 0) return;
  droppedSinceQuietGc = 0;
  dropped = 0;
  collector()?.();
}

/** Call when an engine instance of `bytes` of linear memory will never be used again. */
export function noteDroppedEngine(bytes: number): void {
  dropped += bytes;
  droppedSinceQuietGc += bytes;
  // Pushed back by every drop: while drops keep coming, the threshold collects.
  if (quietTimer === null) quietTimer = setTimeout(() => whenIdle(collectOnceQuiet), QUIET_MS).unref();
  else quietTimer.refresh();
  if (dropped < DROPPED_BYTES_BEFORE_GC || scheduled) return;
  scheduled = true;
  setImmediate(collectAtThreshold).unref();
}
