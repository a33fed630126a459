// Re-running the run that holds a worker (host/sandbox.ts, #rerunWhenHeld): a runScript run
// seen holding its shared worker (50 ms of CPU in one guest entry) while other runs wait
// for that worker starts again on a demoted worker, if it has had no effect outside the
// sandbox. Also what makes that safe and cheap: no effect after a stop, no guest entry
// after a stop, and no new demoted worker starting while ordinary runs wait in line.
import { describe, expect, it, onTestFinished } from "vitest";
import { configurePool, createSandbox, hostSync, poolStats, runScript, type HostModules } from "scriptbox";
import { ACTIVATION_SLOTS_BYTES, ActivationSlots } from "../../host/activation-slots.js";
import { failure, sharedInFlightProbe, startedProbe } from "./demotion-probes.js";
describe("demoted workers start only when no ordinary run waits", () => {
  it("while ordinary runs wait in line, demoted runs wait for the demoted workers already running (at least one)", async () => {
    // First in this file (a process of its own): nothing is demoted and no demoted worker runs yet.
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 2 });
    const { events, modules, until } = startedProbe((n) => String(n));
    const busy = `import { started } from "probe";
      export default (n) => { started(n); const end = Date.now() + 200; while (Date.now() < end) {} return n }`;
    // Demoted by one run alone (it held the worker, and no one waited: it was not re-run).
    expect(await runScript(busy, { input: "d0", tenant: "deferred", modules })).toMatchObject({ ok: true, value: "d0" });
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
  });

  // Busy for 300 ms of wall time (well past the 50 ms of CPU that mark a hold), then a probe.
  const busyThenProbe = (tag: string) => `import { where } from "probe";
    export default () => { const end = Date.now() + 300; while (Date.now() < end) {} where(); return "${tag}" }`;
  const busyLimits = { cpuTimeMs: 5_000, wallTimeMs: 30_000 };
  const light = `import { started } from "probe"; export default (n) => { started(n); return n }`;

  /** Starts `source` on the only shared worker, then a light run queued behind it; resolves both, recording the order they ended in. */
  async function heavyThenLight(source: string, modules: HostModules, events: string[]) {
    const heavy = runScript(source, { limits: busyLimits, modules }).then((result) => {
      events.push("heavy ended");
      return result;
    });
    const deadline = Date.now() + 5_000;
    while (poolStats().inFlightPerSharedWorker[0] !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
    const lightRun = runScript(light, { input: 7, modules }).then((result) => {
      events.push("light ended");
      return result;
    });
    return Promise.all([heavy, lightRun]);
  }

  it("a run without effects that holds the worker while another waits starts again on a demoted worker; the waiting run goes first", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { modules: probeModules, seen } = sharedInFlightProbe();
    const { events, modules: lightModules } = startedProbe();
    const modules = { probe: { ...probeModules.probe, ...lightModules.probe } };
    const [heavy, lightRun] = await heavyThenLight(busyThenProbe("re-run"), modules, events);
    expect(lightRun).toMatchObject({ ok: true, value: 7 });
    // To its caller it ran once: one result, one probe call, made on the demoted worker
    // (no run in flight on the shared one), after the light run had ended there.
    expect(heavy).toMatchObject({ ok: true, value: "re-run" });
    expect(seen).toEqual([0]);
    expect(events).toEqual(["started 7", "light ended", "heavy ended"]);
    // Its wait for the demoted worker (the first attempt included) is queued time.
    expect(heavy.stats.queuedMs).toBeGreaterThan(0);
  });

  it("a run that had an effect (a host call) before it held the worker is not run again: the waiting run waits", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { events, modules: lightModules } = startedProbe();
    let calls = 0;
    const modules = { probe: { ...lightModules.probe, where: hostSync(() => void calls++) } };
    const effectFirst = `import { where } from "probe";
      export default () => { where(); const end = Date.now() + 300; while (Date.now() < end) {} return "once" }`;
    const [heavy, lightRun] = await heavyThenLight(effectFirst, modules, events);
    expect(heavy).toMatchObject({ ok: true, value: "once" });
    expect(calls).toBe(1);
    expect(lightRun).toMatchObject({ ok: true, value: 7 });
    expect(events).toEqual(["heavy ended", "started 7", "light ended"]);
  });

  it("a run that holds the worker while nobody waits finishes where it is (its script is still demoted)", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1 });
    const { modules, seen } = sharedInFlightProbe();
    const before = poolStats().demotedScripts;
    const result = await runScript(busyThenProbe("alone"), { limits: busyLimits, modules });
    expect(result).toMatchObject({ ok: true, value: "alone" });
    expect(seen).toEqual([1]);
    expect(poolStats().demotedScripts).toBe(before + 1);
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
