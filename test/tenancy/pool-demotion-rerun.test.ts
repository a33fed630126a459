// Re-running the run that holds a worker (host/sandbox.ts, #rerunWhenHeld): a runScript run
// seen holding its shared worker (50 ms of CPU in one guest entry) while other runs wait
// for that worker starts again on a demoted worker, if it has had no effect outside the
// sandbox. Also what makes that safe and cheap: no effect after a stop, no guest entry
// after a stop, and no new demoted worker starting while ordinary runs wait in line.
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { configurePool, createSandbox, hostSync, poolStats, runScript, type HostModules } from "scriptbox";
import { ACTIVATION_SLOTS_BYTES, ActivationSlots } from "../../host/activation-slots.js";
import { failure, sharedInFlightProbe, startedProbe } from "./demotion-probes.js";

// The runs here stage what happens on a shared worker: a script's first runs meet there,
// as runs of a known script that turns hostile do. Probation (pool-probation.test.ts)
// would send these new scripts' first runs to a worker of their own.
beforeAll(() => {
  configurePool({ probationWorkers: 0 });
});
describe("demoted workers start only when no ordinary run waits", () => {
  it("while ordinary runs wait in line, demoted runs wait for the demoted workers already running (at least one)", async () => {
    // First in this file (a process of its own): nothing is demoted and no demoted worker runs yet.
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 2 });
    const { events, modules, until } = startedProbe((n) => String(n));
    const busy = `import { started } from "probe";
      export default (n) => { started(n); const end = Date.now() + 200; while (Date.now() < end) {} return n }`;
    // The tenant is demoted by one run alone: it ran to its CPU limit (150 ms of the
    // thread's CPU, past the 50 ms that mark a hold however busy the machine), with no one
    // waiting, so it ended where it was.
    const d0 = await runScript("export default () => { for (;;) {} }", { tenant: "deferred", limits: { cpuTimeMs: 150, wallTimeMs: 30_000 } });
    expect(failure(d0).kind).toBe("cpu");
    expect(poolStats()).toMatchObject({ demoted: 0, demotedScripts: 1 });

    // An ordinary run holds the only shared worker until aborted (its host call is an
    // effect, so it is not re-run), and two light runs wait: in the ordinary line, or the
    // first queued on the worker (sent before the watchdog saw the holder hold it).
    const stopHolder = new AbortController();
    const holder = runScript(`import { started } from "probe"; export default () => { started("holder"); for (;;) {} }`, {
      modules,
      limits: { cpuTimeMs: 30_000, wallTimeMs: 30_000 },
      signal: stopHolder.signal,
    });
    await until(() => events.includes("holder"));
    const light = `import { started } from "probe"; export default (n) => { started(n); return n }`;
    const lights = ["l1", "l2"].map((n) => runScript(light, { input: n, modules }));
    // A failed expectation below must not leave the holder spinning into the next test.
    onTestFinished(() => stopHolder.abort());
    await until(() => poolStats().waitingRuns >= 1);

    // Three runs of the demoted tenant: one demoted worker starts for the first, the second
    // is queued on it (room for one), and the third waits in the demoted line instead of
    // starting the second demoted worker that demotedWorkers: 2 allows.
    const demoted = ["d1", "d2", "d3"].map((n) => runScript(busy, { input: n, tenant: "deferred", modules }));
    await until(() => events.includes("d1"));
    expect(poolStats().demoted).toBe(1);
    // The second light run and the third demoted run, at least.
    expect(poolStats().waitingRuns).toBeGreaterThanOrEqual(2);
    expect(events).not.toContain("l1");

    stopHolder.abort();
    expect(failure(await holder).kind).toBe("aborted");
    expect((await Promise.all(lights)).map((result) => result.ok && result.value)).toEqual(["l1", "l2"]);
    expect((await Promise.all(demoted)).map((result) => result.ok && result.value)).toEqual(["d1", "d2", "d3"]);
    expect(poolStats().waitingRuns).toBe(0);
  });
});

describe("re-running a run that holds a shared worker while others wait", () => {
  it("withdrawing a run and noting an effect exclude each other (ActivationSlots)", () => {
    const slots = new ActivationSlots(new SharedArrayBuffer(ACTIVATION_SLOTS_BYTES));
    const withdrawn = slots.allocate();
    expect(slots.start(withdrawn)).toBe(true);
    expect(slots.withdrawIfEffectFree(withdrawn)).toBe(true);
    // Withdrawn: the worker may not have the effect, and a second withdrawal is not one.
    expect(slots.control(withdrawn, () => undefined).noteEffect()).toBe(false);
    expect(slots.hadEffects(withdrawn)).toBe(false);
    expect(slots.withdrawIfEffectFree(withdrawn)).toBe(false);
    const effectful = slots.allocate();
    expect(slots.start(effectful)).toBe(true);
    expect(slots.control(effectful, () => undefined).noteEffect()).toBe(true);
    expect(slots.withdrawIfEffectFree(effectful)).toBe(false);
    // Stopped by the embedder (abort): no effect may follow either.
    const aborted = slots.allocate();
    expect(slots.start(aborted)).toBe(true);
    expect(slots.requestStop(aborted)).toBe(true);
    expect(slots.control(aborted, () => undefined).noteEffect()).toBe(false);
    // Finished (the worker has its outcome): answered, never withdrawn to run twice.
    const finished = slots.allocate();
    expect(slots.start(finished)).toBe(true);
    slots.control(finished, () => undefined).noteDone();
    expect(slots.withdrawIfEffectFree(finished)).toBe(false);
  });

  // Busy for 1 s of wall time (past the 50 ms of CPU that mark a hold even when the
  // machine gives the worker a fraction of a core), then probes. The re-run is checked at
  // every watchdog tick while the loop runs, so the light run need only arrive within it.
  const busyThenProbe = (tag: string) => `import { where, lightDone } from "probe";
    export default async () => { const end = Date.now() + 1000; while (Date.now() < end) {} await lightDone(); where(); return "${tag}" }`;
  const busyLimits = { cpuTimeMs: 5_000, wallTimeMs: 30_000 };
  const light = `import { started } from "probe"; export default (n) => { started(n); return n }`;

  /** `lightDone`, an async host function (a plain function) the heavy run's probes await, settles once `ended()` is called. */
  function lightGate() {
    let ended!: () => void;
    const done = new Promise<void>((resolve) => (ended = resolve));
    return { lightDone: () => done, ended };
  }

  /**
   * Starts `source` on the only shared worker, then a light run queued behind it; resolves
   * both, recording the order they ended in. `lightDone` (for the heavy run's probes)
   * resolves once the light run has ended.
   */
  function heavyThenLight(events: string[]) {
    const gate = lightGate();
    const start = async (source: string, modules: HostModules) => {
      const heavy = runScript(source, { limits: busyLimits, modules }).then((result) => {
        events.push("heavy ended");
        return result;
      });
      const deadline = Date.now() + 5_000;
      while (poolStats().inFlightPerSharedWorker[0] !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
      const lightRun = runScript(light, { input: 7, modules }).then((result) => {
        events.push("light ended");
        gate.ended();
        return result;
      });
      return Promise.all([heavy, lightRun]);
    };
    return { lightDone: gate.lightDone, start };
  }

  it("a run without effects that holds the worker while another waits starts again on a demoted worker; the waiting run goes first", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { modules: probeModules, seen } = sharedInFlightProbe();
    const { events, modules: lightModules } = startedProbe();
    const { lightDone, start } = heavyThenLight(events);
    const modules = { probe: { ...probeModules.probe, ...lightModules.probe, lightDone } };
    const [heavy, lightRun] = await start(busyThenProbe("re-run"), modules);
    expect(lightRun).toMatchObject({ ok: true, value: 7 });
    // To its caller it ran once: one result, one probe call, made on the demoted worker
    // (no run in flight on the shared one), after the light run had ended there.
    expect(heavy).toMatchObject({ ok: true, value: "re-run" });
    expect(seen).toEqual([0]);
    expect(events).toEqual(["started 7", "light ended", "heavy ended"]);
    // Its wait for the demoted worker (the first attempt included) is queued time.
    expect(heavy.stats.queuedMs).toBeGreaterThan(0);
  });

  // The re-run starts a demoted dedicated worker, at nice 19 from its start: on a loaded
  // machine that thread gets little CPU, hence the long timeout.
  it("an isolated run without effects that holds its dedicated worker while another isolated run waits for one starts again on a demoted dedicated worker; the waiting run gets the worker", { timeout: 120_000 }, async () => {
    configurePool({ maxIsolatedWorkers: 1, demotedWorkers: 1 });
    try {
      const events: string[] = [];
      const demotedBefore = poolStats().demotedScripts;
      const heavySource = "export default () => { const end = Date.now() + 1500; while (Date.now() < end) {} return 'heavy' } // isolated";
      const heavy = runScript(heavySource, { isolate: true, limits: busyLimits }).then((result) => {
        events.push("heavy ended");
        return result;
      });
      const deadline = Date.now() + 5_000;
      while (poolStats().isolated - poolStats().idleIsolated !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
      const lightRun = runScript("export default (n) => n // isolated light", { isolate: true, input: 7 }).then((result) => {
        events.push("light ended");
        return result;
      });
      // Without the re-run, the light run would wait for the heavy one's 1.5 s.
      expect(await lightRun).toMatchObject({ ok: true, value: 7 });
      expect(await heavy).toMatchObject({ ok: true, value: "heavy" });
      expect(events).toEqual(["light ended", "heavy ended"]);
      expect(poolStats().demotedScripts).toBe(demotedBefore + 1);
    } finally {
      configurePool({ maxIsolatedWorkers: 4 });
    }
  });

  it("an isolated worker whose withdrawn run is stuck in a native call goes to the next in line only once it has ended there: the waiting runs keep their order", { timeout: 120_000 }, async () => {
    configurePool({ maxIsolatedWorkers: 1, demotedWorkers: 1 });
    try {
      const ended: string[] = [];
      const hardStopsBefore = poolStats().hardStops;
      // Effect-free, and all in one guest entry (the module's top level): a 16 MB string and
      // 400 searches through it, native calls the interrupt never reaches in a loop that
      // short, so the withdrawn attempt runs on until the watchdog terminates its worker.
      const hog = `const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 400; i++) n += s.indexOf("b"); export default () => n; // isolated hog`;
      const hogRun = runScript(hog, { isolate: true, limits: { cpuTimeMs: 300, wallTimeMs: 60_000 } });
      const deadline = Date.now() + 5_000;
      while (poolStats().isolated - poolStats().idleIsolated !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
      const light = (name: string) =>
        runScript(`export default () => "${name}" // isolated light`, { isolate: true }).then((result) => {
          ended.push(name);
          return result;
        });
      const first = light("first");
      const second = light("second");
      expect(await Promise.all([first, second])).toMatchObject([
        { ok: true, value: "first" },
        { ok: true, value: "second" },
      ]);
      // Handed over while the withdrawn attempt still ran, the first was lost with the
      // worker and, sent again, went behind the second.
      expect(ended).toEqual(["first", "second"]);
      expect(poolStats().hardStops).toBeGreaterThan(hardStopsBefore);
      // Its re-run, on a demoted worker at nice 19, ends by its CPU limit, or by its wall
      // limit if a loaded machine gives that thread too little CPU.
      expect(["cpu", "timeout"]).toContain(failure(await hogRun).kind);
    } finally {
      configurePool({ maxIsolatedWorkers: 4 });
    }
  });

  it("a run that had an effect (a host call) before it held the worker is not run again: the waiting run waits", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { events, modules: lightModules } = startedProbe();
    const { start } = heavyThenLight(events);
    let calls = 0;
    const modules = { probe: { ...lightModules.probe, where: hostSync(() => void calls++) } };
    const effectFirst = `import { where } from "probe";
      export default () => { where(); const end = Date.now() + 1000; while (Date.now() < end) {} return "once" }`;
    const demotedBefore = poolStats().demotedScripts;
    const [heavy, lightRun] = await start(effectFirst, modules);
    expect(heavy).toMatchObject({ ok: true, value: "once" });
    expect(calls).toBe(1);
    // It was seen holding the worker (its script was demoted): only its effect kept it there.
    expect(poolStats().demotedScripts).toBe(demotedBefore + 1);
    expect(lightRun).toMatchObject({ ok: true, value: 7 });
    expect(events).toEqual(["heavy ended", "started 7", "light ended"]);
  });

  it("a run that holds the worker while nobody waits finishes where it is (its script is still demoted)", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { modules: probeModules, seen } = sharedInFlightProbe();
    const modules = { probe: { ...probeModules.probe, lightDone: hostSync(() => undefined) } };
    const before = poolStats().demotedScripts;
    const result = await runScript(busyThenProbe("alone"), { limits: busyLimits, modules });
    expect(result).toMatchObject({ ok: true, value: "alone" });
    expect(seen).toEqual([1]);
    expect(poolStats().demotedScripts).toBe(before + 1);
  });

  it("re-runs wait in the demoted line: the demoted worker's queue stays within queuedRunsPerWorker", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1 });
    // Six distinct effect-free loops (a first offence each: their keys are digests of
    // different texts): each holds the shared worker while the next ones wait, is
    // withdrawn, and runs again to its CPU limit on the one demoted worker.
    const loops = [0, 1, 2, 3, 4, 5].map((n) =>
      runScript(`export default () => { for (;;) {} } // loop ${n}`, { limits: { cpuTimeMs: 100, wallTimeMs: 60_000 } }),
    );
    let mostInFlight = 0;
    let sawWaiting = false;
    let settled = false;
    const all = Promise.all(loops).finally(() => (settled = true));
    while (!settled) {
      const stats = poolStats();
      mostInFlight = Math.max(mostInFlight, ...stats.inFlightPerDemotedWorker);
      if (stats.demoted > 0 && stats.waitingRuns > 0) sawWaiting = true;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    // Each ran once to its limit, where it was re-run (withdrawn attempts do not answer).
    expect((await all).map((result) => failure(result).kind)).toEqual(["cpu", "cpu", "cpu", "cpu", "cpu", "cpu"]);
    // One running and one queued at most, the others waiting in the embedder (one more
    // for a moment: a run answered counts until the embedder reads the answer, and the
    // next may be sent by then). Sent straight to the demoted worker, all five re-runs were.
    expect(mostInFlight).toBeGreaterThan(0);
    expect(mostInFlight).toBeLessThanOrEqual(3);
    expect(sawWaiting).toBe(true);
  });

  it("a withdrawn run stuck in a native call is ended on its old worker soon after, where only effect-free runs wait there", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { events, modules } = startedProbe();
    // Slow native searches (~85 ms each here, 5 s in all) in one guest entry, deaf to the
    // interrupt (QuickJS polls it every few thousand operations; this loop makes a few
    // hundred): withdrawn in the middle, its first attempt would hold the shared worker to
    // its end. Only effect-free one-shot runs wait there, so ending it costs them a re-run.
    const hog = `export default () => { const s = "a".repeat(1 << 24); let k = 0;
      for (let i = 0; i < 60; i++) k += s.indexOf("b"); return k }`;
    const stopHog = new AbortController();
    onTestFinished(() => stopHog.abort());
    const hardStops = poolStats().hardStops;
    const hogRun = runScript(hog, { limits: { cpuTimeMs: 8_000, wallTimeMs: 60_000 }, signal: stopHog.signal });
    const deadline = Date.now() + 5_000;
    while (poolStats().inFlightPerSharedWorker[0] !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
    const lightRun = runScript(light, { input: 7, modules });
    // The light run had no effect before the old worker was terminated: run again on a
    // fresh one (not evicted), while the hog's second attempt runs on the demoted worker.
    expect(await lightRun).toMatchObject({ ok: true, value: 7 });
    expect(events).toEqual(["started 7"]);
    expect(poolStats().hardStops).toBe(hardStops + 1);
    // Its second attempt is deaf to the abort: the demoted worker is retired under it
    // (ended once the hog's sandbox is released), not left busy for the tests after.
    configurePool({ demotedWorkers: 0 });
    stopHog.abort();
    expect(failure(await hogRun).kind).toBe("aborted");
    configurePool({ demotedWorkers: 1 });
  });

  it("a withdrawn run whose old worker also serves a createSandbox sandbox is left to end there: nothing is terminated for it", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const sandbox = await createSandbox();
    try {
      const plugin = await sandbox.load("let n = 0; export function bump() { return ++n }");
      expect(await plugin.call("bump")).toBe(1);
      const { modules } = startedProbe();
      // ~85 ms per search: ~0.5 s in all, past the 250 ms grace, well within the limit.
      const hog = `export default () => { const s = "a".repeat(1 << 24); let k = 0;
        for (let i = 0; i < 6; i++) k += s.indexOf("b"); return k }`;
      const hardStops = poolStats().hardStops;
      const hogRun = runScript(hog, { limits: { cpuTimeMs: 8_000, wallTimeMs: 60_000 } });
      const deadline = Date.now() + 5_000;
      while (poolStats().inFlightPerSharedWorker[0] !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
      const lightRun = runScript(light, { input: 7, modules });
      expect(await lightRun).toMatchObject({ ok: true, value: 7 });
      const hogResult = await hogRun;
      expect(hogResult).toMatchObject({ ok: true, value: -6 });
      // It was withdrawn and re-run: its first attempt (50 ms of CPU at least) is queued time.
      expect(hogResult.stats.queuedMs).toBeGreaterThanOrEqual(50);
      // The plugin kept its state: its worker was never terminated.
      expect(poolStats().hardStops).toBe(hardStops);
      expect(await plugin.call("bump")).toBe(2);
    } finally {
      await sandbox.dispose();
    }
  });

  it("a run seen holding the worker while nobody waited is re-run once another run comes to wait (checked at every tick)", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { modules: probeModules, seen } = sharedInFlightProbe();
    const { modules: lightModules } = startedProbe();
    const gate = lightGate();
    const modules = { probe: { ...probeModules.probe, ...lightModules.probe, lightDone: gate.lightDone } };
    const demotedBefore = poolStats().demotedScripts;
    const heavy = runScript(busyThenProbe("late"), { limits: busyLimits, modules });
    // Seen holding the worker (its script demoted) with no one waiting: it stays, for now.
    const deadline = Date.now() + 10_000;
    while (poolStats().demotedScripts === demotedBefore && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(poolStats().demotedScripts).toBe(demotedBefore + 1);
    const lightRun = runScript(light, { input: 7, modules }).finally(gate.ended);
    expect(await lightRun).toMatchObject({ ok: true, value: 7 });
    expect(await heavy).toMatchObject({ ok: true, value: "late" });
    // Its probe ran on the demoted worker: nothing in flight on the shared one.
    expect(seen).toEqual([0]);
  });

  it("a re-run waiting in the demoted line ends at once with its signal; a run whose queueTimeoutMs passed during its attempt is not withdrawn", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1 });
    const { events, modules, until } = startedProbe((n) => String(n));
    // Fill the demoted worker: a demoted tenant's run holds it (until aborted at the end),
    // and another is queued there, its room for one taken.
    const demote = await runScript("export default () => { for (;;) {} }", { tenant: "full", limits: { cpuTimeMs: 150, wallTimeMs: 30_000 } });
    expect(failure(demote).kind).toBe("cpu");
    const stopDemoted = new AbortController();
    onTestFinished(() => stopDemoted.abort());
    const demotedLimits = { cpuTimeMs: 30_000, wallTimeMs: 60_000 };
    const holder = runScript(`import { started } from "probe"; export default () => { started("holder"); for (;;) {} }`, { tenant: "full", modules, limits: demotedLimits, signal: stopDemoted.signal });
    await until(() => events.includes("holder"));
    const queued = runScript("export default () => 'queued'", { tenant: "full", limits: demotedLimits, signal: stopDemoted.signal });
    await until(() => poolStats().inFlightPerDemotedWorker.reduce((a, b) => a + b, 0) >= 2);

    // Effect-free loops, each a first offence, each held while a light run waits for the
    // shared worker: withdrawn, they wait in the full demoted line.
    const loop = (tag: string) => `export default () => { const end = Date.now() + 1000; while (Date.now() < end) {} return "${tag}" } // ${tag}`;
    const aborter = new AbortController();
    const aborted = runScript(loop("a"), { limits: busyLimits, signal: aborter.signal });
    while (poolStats().inFlightPerSharedWorker[0] !== 1) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(await runScript(light, { input: 1, modules })).toMatchObject({ ok: true, value: 1 });
    await until(() => poolStats().waitingRuns >= 1);
    const abortedAt = performance.now();
    aborter.abort();
    expect(failure(await aborted).kind).toBe("aborted");
    expect(performance.now() - abortedAt).toBeLessThan(1_000);

    // queueTimeoutMs: 40 passes while its attempt runs (it started in time): withdrawn, it
    // would end queue-timeout waiting to start again, so it finishes where it is.
    const demotedBefore = poolStats().demotedScripts;
    const inTime = runScript(loop("q"), { limits: busyLimits, queueTimeoutMs: 40 });
    while (poolStats().inFlightPerSharedWorker[0] !== 1) await new Promise((resolve) => setTimeout(resolve, 1));
    const lightRun = runScript(light, { input: 2, modules });
    expect(await inTime).toMatchObject({ ok: true, value: "q" });
    expect(await lightRun).toMatchObject({ ok: true, value: 2 });
    // It was seen holding the worker (demoted) while the light run waited: only its deadline kept it.
    expect(poolStats().demotedScripts).toBe(demotedBefore + 1);
    expect(poolStats().waitingRuns).toBe(0);

    stopDemoted.abort();
    expect(failure(await holder).kind).toBe("aborted");
    expect(failure(await queued).kind).toBe("aborted");
  });

  it("a plugin call aborted while it waits behind another call on the plugin ends aborted and leaves the plugin loaded, its state intact", async () => {
    const sandbox = await createSandbox({ limits: { cpuTimeMs: 5_000, wallTimeMs: 30_000 } });
    try {
      const plugin = await sandbox.load(`let n = 0;
        export async function slow() { await new Promise((resolve) => setTimeout(resolve, 600)); return ++n }
        export function bump() { return ++n }
        export function count() { return n }`);
      const first = plugin.call("slow");
      // Aborted at once (before the call leaves the embedder), and once it has reached the
      // worker (free while the slow call waits on its timer), where it waits its turn.
      const atOnce = new AbortController();
      const inWorker = new AbortController();
      const bumps = [plugin.with({ signal: atOnce.signal }).call("bump"), plugin.with({ signal: inWorker.signal }).call("bump")];
      const ended = Promise.allSettled(bumps);
      atOnce.abort();
      await new Promise((resolve) => setTimeout(resolve, 300));
      inWorker.abort();
      for (const bump of await ended) expect(bump).toMatchObject({ status: "rejected", reason: { kind: "aborted" } });
      expect(await first).toBe(1);
      // Neither bump ran, and the plugin was not unloaded for them.
      expect(await plugin.call("count")).toBe(1);
    } finally {
      await sandbox.dispose();
    }
  });

  it("a run told to stop during a slow native call enters no more guest code: its sandbox is not hard-stopped", async () => {
    configurePool({ sharedWorkers: 1 });
    const controller = new AbortController();
    // The abort arrives before a 16 MB repeat (native, ~0.1 s, deaf to the interrupt); the
    // default export would then call a native search 400 times, which ignores the interrupt
    // for seconds: entered, the watchdog would have to terminate the worker.
    const modules = { probe: { stop: hostSync(() => controller.abort()) } };
    const sandbox = await createSandbox({ modules, limits: { cpuTimeMs: 200, wallTimeMs: 30_000 } });
    try {
      const hog = `import { stop } from "probe"; stop(); const s = "a".repeat(1 << 24);
        export default () => { let k = 0; for (let i = 0; i < 400; i++) k += s.indexOf("b"); return k }`;
      const stopped = await sandbox.run(hog, { signal: controller.signal });
      expect(failure(stopped).kind).toBe("aborted");
      const next = await sandbox.run("export default () => 'still here'");
      expect(next).toMatchObject({ ok: true, value: "still here" });
      expect(sandbox.disposed).toBe(false);
    } finally {
      await sandbox.dispose();
    }
  });
});
