// CPU time of one thread, read from Linux's scheduler statistics.
//
// Wall time spent in guest code is not CPU time: on an oversubscribed machine a starved
// worker thread looks exactly like a spinning one. Linux keeps, per thread, the
// nanoseconds it has run on a CPU (first field of /proc/<pid>/task/<tid>/schedstat) and
// the nanoseconds it has waited, runnable, for a CPU (second field, "run_delay").
// The first lags for a running thread (the kernel folds the time run since the last
// scheduler event into it only at the next tick or switch), so a short interval read
// around reads 0 most of the time; the second is exact whenever the thread reads it (the
// thread is running then, so no wait is in progress): wall time minus run_delay's advance
// is what a short interval really ran, plus any time it slept (host/worker/guard.ts).
// Measured here: a pread of an already open schedstat file costs ~2 µs and has nanosecond
// resolution (the utime/stime fields of `stat` are in 10 ms ticks, too coarse for a
// 50 ms limit). Elsewhere (no /proc, or schedstat disabled) callers fall back to wall time;
// docs/limits.md says so.
import { closeSync, openSync, readlinkSync, readSync } from "node:fs";

export interface ThreadClock {
  /** Nanoseconds this thread has run on a CPU, or wall-clock nanoseconds when `isCpu` is false. */
  nowNs(): number;
  /**
   * Nanoseconds this thread has waited for a CPU while runnable ("run_delay"), as of the
   * last nowNs() call (one read gives both); always 0 when `isCpu` is false.
   */
  lastRunDelayNs(): number;
  /** False when the platform gave no per-thread CPU time and this clock is wall time. */
  readonly isCpu: boolean;
  close(): void;
}

const buffer = Buffer.alloc(96);

/** schedstat's first two fields ("<run ns> <run_delay ns> <timeslices>"); one pread. */
function readFields(fd: number, into: { runNs: number; runDelayNs: number }): void {
  const length = readSync(fd, buffer, 0, buffer.length, 0);
  let value = 0;
  let field = 0;
  for (let i = 0; i <= length; i++) {
    const digit = i < length ? buffer[i]! - 48 : -1;
    if (digit >= 0 && digit <= 9) {
      value = value * 10 + digit;
      continue;
    }
    if (field === 0) into.runNs = value;
    else {
      into.runDelayNs = value;
      return;
    }
    field = 1;
    value = 0;
  }
}

function wallClock(): ThreadClock {
  return { nowNs: () => Number(process.hrtime.bigint()), lastRunDelayNs: () => 0, isCpu: false, close() {} };
}

/**
 * A thread's clock from its schedstat file; wall time when there is none. Exported for
 * tests. A file that reads 0 run time is no clock either: the thread has run (it is
 * running now, or it reported its id), and kernels built without schedstats that boot
 * with `nodelayacct` keep the file and write zeros, which would leave the watchdog's CPU
 * check blind for good.
 */
export function clockFromPath(path: string): ThreadClock {
  let fd: number;
  const last = { runNs: 0, runDelayNs: 0 };
  try {
    fd = openSync(path, "r");
  } catch {
    return wallClock();
  }
  try {
    readFields(fd, last);
  } catch {
    last.runNs = 0;
  }
  if (last.runNs === 0) {
    closeSync(fd);
    return wallClock();
  }
  let open = true;
  return {
    nowNs: () => {
      try {
        readFields(fd, last);
      } catch {
        // The thread has exited (ESRCH; its worker's "exit" event may not have arrived yet)
        // or the clock was closed: it runs no more, so its last reading stays its CPU
        // time. Thrown, this reached the pool's watchdog timer and crashed the embedder.
      }
      return last.runNs;
    },
    lastRunDelayNs: () => last.runDelayNs,
    isCpu: true,
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** The calling thread's CPU clock (the file is bound to this thread when it is opened). */
export function currentThreadClock(): ThreadClock {
  return clockFromPath("/proc/thread-self/schedstat");
}

/** The kernel's id of the calling thread, so another thread can watch its CPU time; null off Linux. */
export function currentThreadId(): number | null {
  try {
    const match = /\/task\/(\d+)$/.exec(readlinkSync("/proc/thread-self"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** Another thread of this process, by the id `currentThreadId()` gave inside it. */
export function threadClock(threadId: number | null): ThreadClock {
  return threadId === null ? wallClock() : clockFromPath(`/proc/self/task/${threadId}/schedstat`);
}
