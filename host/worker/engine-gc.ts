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
// up to DROPPED_BYTES_BEFORE_GC. A full GC of a worker's small JS heap costs a few ms; it
// runs on a later turn, never inside a request. V8 gives a thread no `gc()` unless the
// process was started with --expose-gc: then we use it; otherwise the flag is switched on
// just long enough to read `gc` out of a fresh context, and switched off again.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const DROPPED_BYTES_BEFORE_GC = 32 * 1024 * 1024;

let dropped = 0;
let scheduled = false;
let collect: (() => void) | null | undefined;

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

/** Call when an engine instance of `bytes` of linear memory will never be used again. */
export function noteDroppedEngine(bytes: number): void {
  dropped += bytes;
  if (dropped < DROPPED_BYTES_BEFORE_GC || scheduled) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    dropped = 0;
    collector()?.();
  }).unref();
}
