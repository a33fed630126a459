// Issue 10 §3: the execution guard measures the thread's CPU time, not wall time (a thread
// that is not running, here one blocked in Atomics.wait as a starved one would be
// descheduled, spends none of its budget), reads the CPU clock only when wall time says the
// deadline could have passed, and honours the embedder's stop request in the watchdog slot.
import { describe, expect, it } from "vitest";
import { ExecutionGuard, WATCHDOG_BYTES, WATCHDOG_FIELDS, WatchdogSlot } from "../../dist/host/worker/guard.js";
import { currentThreadClock } from "../../dist/host/thread-cpu.js";

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
  it.skipIf(!onLinux)("time the thread spends off the CPU is not charged; spinning reaches the CPU deadline", () => {
    const buffer = new SharedArrayBuffer(WATCHDOG_BYTES);
    const guard = new ExecutionGuard(new WatchdogSlot(buffer), () => 7);
    const b = budget(60, 10_000);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    let spunMs = 0;
    guard.enter(b, () => {
      Atomics.wait(sleeper, 0, 0, 150); // 150 ms of wall time, ~no CPU time
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
