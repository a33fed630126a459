// Shared by the test/tenancy/pool-demotion*.test.ts files: probes a guest calls to tell
// where and when it ran, and the failure of a run expected to fail.
import { hostSync, poolStats, type HostModules, type RunResult } from "scriptbox";

/** The error of a run expected to fail (a test failure if it succeeded). */
export function failure(result: RunResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/**
 * A probe host function that records, when the guest calls it, how many runs are in
 * flight on the ordinary shared workers: 0 means the calling guest runs elsewhere (on a
 * demoted worker), since its own run would count there.
 */
export function sharedInFlightProbe(): { modules: HostModules; seen: number[] } {
  const seen: number[] = [];
  const where = hostSync(() => {
    seen.push(poolStats().inFlightPerSharedWorker.reduce((a, b) => a + b, 0));
  });
  return { modules: { probe: { where } }, seen };
}

/**
 * A probe host function `started(n)` that records `describe(n)` (by default "started n")
 * when the guest calls it, and a wait for a recorded event.
 */
export function startedProbe(describe: (n: unknown) => string = (n) => `started ${String(n)}`) {
  const events: string[] = [];
  const started = hostSync((n: unknown) => {
    events.push(describe(n));
  });
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { events, modules: { probe: { started } }, until };
}
