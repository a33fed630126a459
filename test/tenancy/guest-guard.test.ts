// Issue 10 §3: the execution guard measures the thread's CPU time, not wall time (a thread
// waiting for a core, here one pinned beside a hog, or sleeping outside guest code, spends
// none of its budget; a chain of short entries spends all of what it ran), reads the CPU clock only when wall time says the
// deadline could have passed, and honours the embedder's stop request in the watchdog slot.
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { ExecutionGuard, WATCHDOG_BYTES, WATCHDOG_FIELDS, WatchdogSlot } from "../../dist/host/worker/guard.js";
import { clockFromPath, currentThreadClock, currentThreadId, threadClock } from "../../dist/host/thread-cpu.js";
import { createSandbox } from "scriptbox";

const cpuClock = currentThreadClock();
const onLinux = cpuClock.isCpu;

function budget(cpuMs: number, wallMs: number) {
  let charged = 0;
  return {
    wallDeadline: performance.now() + wallMs,
    cpuRemainingMs: () => cpuMs - charged,
    chargeCpu: (ms: number) => void (charged += ms),
    charged: () => charged,
  };
}

describe("ExecutionGuard", () => {
  it.skipIf(!onLinux)("time spent outside guest code (a sleep in outsideGuest) is not charged; spinning reaches the CPU deadline", () => {
    const buffer = new SharedArrayBuffer(WATCHDOG_BYTES);
    const guard = new ExecutionGuard(new WatchdogSlot(buffer), () => 7);
    const b = budget(60, 10_000);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    let spunMs = 0;
    guard.enter(b, () => {
      guard.outsideGuest(() => Atomics.wait(sleeper, 0, 0, 150), () => 150); // 150 ms of wall time, ~no CPU time
      expect(guard.shouldInterrupt()).toBe(false);
      const start = performance.now();
      while (!guard.shouldInterrupt()) {
        /* spin: CPU time */
      }
      spunMs = performance.now() - start;
    });
    expect(guard.interruptedBy).toBe("cpu");
    // The sleep did not count: the guard let the thread spin for (at least) its 60 ms of CPU.
    expect(spunMs).toBeGreaterThanOrEqual(55);
    expect(b.charged()).toBeGreaterThanOrEqual(60);
    expect(b.charged()).toBeLessThan(150);
    // Reads of the CPU clock happen only once wall time could have passed the deadline.
    expect(guard.cpuClockReads).toBeGreaterThan(0);
    expect(guard.cpuClockReads).toBeLessThan(1000);
  });

  it.skipIf(!onLinux)("the watchdog's CPU deadline moves by the awake part of a wait outside guest code, never by its sleep", () => {
    const buffer = new SharedArrayBuffer(WATCHDOG_BYTES);
    const view = new Float64Array(buffer);
    const guard = new ExecutionGuard(new WatchdogSlot(buffer), () => 9);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    const deadlines: number[] = [];
    guard.enter(budget(60, 10_000), () => {
      deadlines.push(view[WATCHDOG_FIELDS.cpuDeadlineNs]!);
      // Asleep for all of it (the waiter says so): the deadline stays.
      guard.outsideGuest(
        () => Atomics.wait(sleeper, 0, 0, 40),
        () => 40,
      );
      deadlines.push(view[WATCHDOG_FIELDS.cpuDeadlineNs]!);
      // Awake for all of it (a poll that watched for the answer): the thread's CPU clock
      // advanced by about that much, and so does the deadline the watchdog compares it with.
      guard.outsideGuest(
        () => {
          const end = performance.now() + 30;
          while (performance.now() < end) {
            /* watching for an answer */
          }
        },
        () => 0,
      );
      deadlines.push(view[WATCHDOG_FIELDS.cpuDeadlineNs]!);
    });
    const [armed, afterSleep, afterSpin] = deadlines as [number, number, number];
    expect(armed).toBeGreaterThan(0);
    expect(Math.abs(afterSleep - armed)).toBeLessThan(2e6);
    expect(afterSpin - afterSleep).toBeGreaterThanOrEqual(30e6);
    expect(afterSpin - afterSleep).toBeLessThan(60e6);
    expect(view[WATCHDOG_FIELDS.deadline]).toBe(0); // disarmed once the entry ended
  });

  it.skipIf(!onLinux)("time the thread waits for a CPU (a hog pinned to the same core) is not charged", async () => {
    const ownThread = currentThreadId()!;
    const hog = new Worker(`const { readlinkSync } = require("node:fs"); const { parentPort } = require("node:worker_threads");
      parentPort.postMessage(Number(readlinkSync("/proc/thread-self").split("/").pop())); for (;;) {}`, { eval: true });
    const allCpus = `0-${availableParallelism() - 1}`;
    try {
      const hogThread = await new Promise<number>((resolve, reject) => {
        hog.once("message", resolve);
        hog.once("error", reject);
      });
      execFileSync("taskset", ["-p", "-c", "0", String(hogThread)], { stdio: "ignore" });
      execFileSync("taskset", ["-p", "-c", "0", String(ownThread)], { stdio: "ignore" });
      const guard = new ExecutionGuard(new WatchdogSlot(new SharedArrayBuffer(WATCHDOG_BYTES)), () => 5);
      const b = budget(60, 10_000);
      const start = performance.now();
      guard.enter(b, () => {
        while (!guard.shouldInterrupt()) {
          /* spin, sharing core 0 with the hog */
        }
      });
      const spentMs = performance.now() - start;
      expect(guard.interruptedBy).toBe("cpu");
      // The core was shared (the hog ran for a good part of that wall time), yet the guard
      // charged the CPU time the thread had, not the wall time it spent.
      expect(spentMs).toBeGreaterThan(85);
      // Stopped at its 60 ms budget; the charge (wall time minus the run_delay advance)
      // may read a few ms under it (56 ms once in CI under load): what matters is that
      // the wait for the core is not charged.
      expect(b.charged()).toBeGreaterThanOrEqual(50);
      expect(b.charged()).toBeLessThan(Math.min(85, spentMs * 0.8));
    } finally {
      execFileSync("taskset", ["-p", "-c", allCpus, String(ownThread)], { stdio: "ignore" });
      await hog.terminate();
    }
  });

  it.skipIf(!onLinux)("many short entries are charged what they ran (the run-time field lags for sub-tick entries)", () => {
    // The kernel folds a running thread's time into schedstat's first field only at ticks
    // and switches: entries of ~1 ms between sleeps read deltas of 0 most of the time. The
    // thread's CPU over the whole loop (long enough for that lag not to matter) is the truth.
    const guard = new ExecutionGuard(new WatchdogSlot(new SharedArrayBuffer(WATCHDOG_BYTES)), () => 6);
    const b = budget(60_000, 60_000);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    let sink = 0;
    const cpuBefore = cpuClock.nowNs();
    for (let i = 0; i < 150; i++) {
      guard.enter(b, () => {
        const cpuStart = cpuClock.nowNs(); // any read in the entry; the deltas alone would say ~0
        const until = performance.now() + 0.8;
        while (performance.now() < until) sink += cpuStart & 1;
      });
      Atomics.wait(sleeper, 0, 0, 1);
    }
    const threadCpuMs = (cpuClock.nowNs() - cpuBefore) / 1e6;
    expect(sink).toBeGreaterThanOrEqual(0);
    // Everything the loop ran outside the entries (the sleeps' bookkeeping) is small next to
    // 150 x 0.8 ms inside them; a lagging estimate charged ~20-50% of it.
    expect(b.charged()).toBeGreaterThan(threadCpuMs * 0.8);
    expect(b.charged()).toBeLessThanOrEqual(threadCpuMs * 1.1 + 5);
  });

  it("with the deadline far away the handler never reads the CPU clock", () => {
    const guard = new ExecutionGuard(new WatchdogSlot(new SharedArrayBuffer(WATCHDOG_BYTES)), () => 1);
    guard.enter(budget(60_000, 60_000), () => {
      for (let i = 0; i < 100_000; i++) expect(guard.shouldInterrupt()).toBe(false);
    });
    expect(guard.cpuClockReads).toBe(0);
  });

  it("a stop request for the sandbox in guest code interrupts it (reason aborted) and is cleared; one for another sandbox is not", () => {
    const buffer = new SharedArrayBuffer(WATCHDOG_BYTES);
    const view = new Float64Array(buffer);
    const guard = new ExecutionGuard(new WatchdogSlot(buffer), () => 3);
    guard.enter(budget(60_000, 60_000), () => {
      view[WATCHDOG_FIELDS.stopRequested] = 4;
      expect(guard.shouldInterrupt()).toBe(false);
      view[WATCHDOG_FIELDS.stopRequested] = 3;
      expect(guard.shouldInterrupt()).toBe(true);
    });
    expect(guard.interruptedBy).toBe("aborted");
    expect(view[WATCHDOG_FIELDS.stopRequested]).toBe(0);
  });

  it("the watchdog slot carries the wall deadline, the CPU deadline on the thread's clock and the thread id", () => {
    const buffer = new SharedArrayBuffer(WATCHDOG_BYTES);
    const view = new Float64Array(buffer);
    const guard = new ExecutionGuard(new WatchdogSlot(buffer), () => 9);
    const b = budget(100, 5_000);
    guard.enter(b, () => {
      expect(view[WATCHDOG_FIELDS.sandboxId]).toBe(9);
      expect(view[WATCHDOG_FIELDS.deadline]).toBeGreaterThan(Date.now());
      if (onLinux) {
        expect(view[WATCHDOG_FIELDS.threadId]).toBeGreaterThan(0);
        const left = (view[WATCHDOG_FIELDS.cpuDeadlineNs]! - cpuClock.nowNs()) / 1e6;
        expect(left).toBeGreaterThan(50);
        expect(left).toBeLessThanOrEqual(100);
      }
    });
    expect(view[WATCHDOG_FIELDS.deadline]).toBe(0);
  });
});

describe("another thread's CPU clock", () => {
  it("a schedstat file that reads zeros (no schedstats in the kernel) is no clock: wall time instead", async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "schedstat-"));
    try {
      writeFileSync(join(dir, "zeros"), "0 0 0\n");
      writeFileSync(join(dir, "real"), "123456 789 4\n");
      const zeros = clockFromPath(join(dir, "zeros"));
      expect(zeros.isCpu).toBe(false);
      expect(zeros.nowNs()).toBeGreaterThan(0);
      const real = clockFromPath(join(dir, "real"));
      expect(real.isCpu).toBe(true);
      expect(real.nowNs()).toBe(123456);
      expect(real.lastRunDelayNs()).toBe(789);
      real.close();
      expect(clockFromPath(join(dir, "missing")).isCpu).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!onLinux)("reading it after the thread exited returns its last figure instead of throwing (the watchdog reads it on a timer)", async () => {
    // The thread waits to be told to end: under load it once ended before the clock was
    // opened, and the clock fell back to wall time (isCpu false; fresh-clone CI run).
    const worker = new Worker(`const { readlinkSync } = require("node:fs"); const { parentPort } = require("node:worker_threads");
      let x = 0; for (let i = 0; i < 2e7; i++) x += i;
      parentPort.once("message", () => process.exit(0));
      parentPort.postMessage(Number(readlinkSync("/proc/thread-self").split("/").pop()));`, { eval: true });
    const id = await new Promise<number>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    const clock = threadClock(id);
    try {
      expect(clock.isCpu).toBe(true);
      const alive = clock.nowNs();
      expect(alive).toBeGreaterThan(0);
      const exited = new Promise((resolve) => worker.once("exit", resolve));
      worker.postMessage("end");
      await exited;
      expect(() => clock.nowNs()).not.toThrow();
      expect(clock.nowNs()).toBeGreaterThanOrEqual(alive);
    } finally {
      clock.close();
    }
  });
});

describe("cpuTimeMs across many short entries into guest code", () => {
  it.skipIf(!onLinux)("a chain of ~0.8 ms timer callbacks is charged the CPU it used and stopped at its limit", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 100, wallTimeMs: 30_000 } });
    // Each callback spins 0.8 ms, then sleeps until its next timer: entries shorter than a
    // scheduler tick, which the run-time field of schedstat sees late (it read ~0 for most
    // of them, so such a chain ran 4-8x its cpuTimeMs before the fix).
    const chain = `export default () => new Promise(() => {
      let n = 0;
      const tick = () => { n++; const end = performance.now() + 0.8; while (performance.now() < end) {} console.log(String(n)); setTimeout(tick, 0) };
      tick();
    })`;
    try {
      await sandbox.run(chain); // warm-up: the first run also loads what later ones reuse
      // The truth, from outside: the CPU the whole process used meanwhile (this process
      // does nothing else; the guest's worker thread is most of it).
      const before = process.cpuUsage();
      const result = await sandbox.run(chain);
      const used = process.cpuUsage(before);
      const processCpuMs = (used.user + used.system) / 1000;
      expect(result).toMatchObject({ ok: false, error: { kind: "cpu" } });
      expect(result.stats.cpuTimeMs).toBeLessThanOrEqual(100 + 25);
      expect(Number(result.logs.at(-1)!.message)).toBeGreaterThan(20);
      // Measured: 0.68-0.88 of the process's CPU with the fix (the rest is host work of
      // the timers and logs), 0.11-0.20 before it. On 2026-12-02: 0.54-0.61 alone, and
      // 0.36 once in a fresh-clone CI run with other test files on both cores (host work
      // per tick costs more then), so the line is drawn between that and the unfixed 0.20.
      expect(result.stats.cpuTimeMs / processCpuMs).toBeGreaterThan(0.3);
    } finally {
      await sandbox.dispose();
    }
  });
});
