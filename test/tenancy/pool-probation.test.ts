// Probation (host/run-probation.ts): one-shot runs of scripts new to the pool go to a
// worker of their own first, so that runs of known scripts never wait behind them; new
// scripts still use the shared workers while no known run waits; runs of a new script
// waiting in the probation line join the ordinary line once the script is known.
import { describe, expect, it } from "vitest";
import { configurePool, hostSync, poolStats, runScript, warmPool } from "scriptbox";
import { KnownScripts, PROBATION_MAX_WAIT_MS } from "../../host/run-probation.js";
import { RunAdmission } from "../../host/run-admission.js";
import { startedProbe } from "./demotion-probes.js";

const HOLD_LIMITS = { cpuTimeMs: 60_000, wallTimeMs: 120_000 };

/**
 * Guest code that holds its worker (CPU in one go, after an effect: a run that had one is
 * never withdrawn to run elsewhere) while the test keeps it (`keep`, until `release`).
 * `name` tells the runs apart (and makes each text a script of its own).
 */
function holderProbe() {
  const probe = startedProbe((name) => `started ${String(name)}`);
  const kept = new Set<string>();
  const hold = hostSync((name: string) => kept.has(name));
  const modules = { probe: { ...probe.modules.probe, hold } };
  const holder = (name: string) => `import { started, hold } from "probe";
    export default () => {
      started(${JSON.stringify(name)});
      while (hold(${JSON.stringify(name)})) { const end = Date.now() + 2; while (Date.now() < end) {} }
      return ${JSON.stringify(name)};
    }`;
  const keep = (name: string) => void kept.add(name);
  const release = (name: string) => void kept.delete(name);
  /** Until the watchdog has seen a holder hold its worker (its script is then demoted: no room for runs there). */
  const untilSeenHolding = async (demotedBefore: number) => probe.until(() => poolStats().demotedScripts > demotedBefore);
  return { ...probe, modules, holder, keep, release, untilSeenHolding };
}

describe("KnownScripts", () => {
  it("remembers scripts that ran, the least recently run forgotten first; a demoted one is forgotten", () => {
    const known = new KnownScripts(undefined, 3);
    for (const key of ["a", "b", "c"]) known.noteRan(key);
    known.noteRan("a");
    known.noteRan("d");
    expect(["a", "b", "c", "d"].filter((key) => known.has(key))).toEqual(["a", "c", "d"]);
    known.forget("c");
    expect(known.has("c")).toBe(false);
    expect(known.size).toBe(2);
  });

  it("tells when a script becomes known, and only then", () => {
    const told: string[] = [];
    const known = new KnownScripts((key) => told.push(key));
    known.noteRan("x");
    known.noteRan("x");
    known.noteRan("y");
    expect(told).toEqual(["x", "y"]);
    // Forgotten (demoted), then known again.
    known.forget("x");
    known.noteRan("x");
    expect(told).toEqual(["x", "y", "x"]);
  });
});

describe("the probation line (RunAdmission with keys)", () => {
  it("lets out the runs of a key just known, and only those, in one pass; a run that gave up its place leaves nothing behind", async () => {
    const line = new RunAdmission(() => 0);
    const a1 = line.admit(undefined, false, "a");
    const b = line.admit(undefined, false, "b");
    const a2 = line.admit(undefined, false, "a");
    const unkeyed = line.admit();
    expect(line.keyedCount).toBe(2);
    line.releaseKey("a");
    // Let out without room: they join another line.
    await Promise.all([a1.admission, a2.admission]);
    expect(line.waitingCount).toBe(2);
    // A run that gives up its place (queueTimeoutMs, signal, dispose) is no longer indexed:
    // its key's entry went with it (a leak per distinct key, found by review).
    b.cancel();
    expect(line.keyedCount).toBe(0);
    line.releaseKey("b");
    expect(line.waitingCount).toBe(1);
    unkeyed.cancel();
    expect(line.waitingCount).toBe(0);
  });

  it("lets out the runs that began to wait at a time or earlier, looking past the runs that came back (ahead) and no further", async () => {
    const line = new RunAdmission(() => 0);
    const old = line.admit(undefined, false, "a", 100);
    const young = line.admit(undefined, false, "b", 300);
    // Came back (ahead), its wait counted from its first: it goes first in line.
    const returnedYoung = line.admit(undefined, true, "c", 250);
    const returnedOld = line.admit(undefined, true, "d", 50);
    line.releaseWaitingSince(200);
    const [oldAdmission, returnedOldAdmission] = await Promise.all([old.admission, returnedOld.admission]);
    expect(oldAdmission.waitedTooLong).toBe(true);
    expect(returnedOldAdmission.waitedTooLong).toBe(true);
    expect(line.waitingCount).toBe(2);
    expect(line.keyedCount).toBe(2);
    young.cancel();
    returnedYoung.cancel();
    expect(line.waitingCount).toBe(0);
  });
});

describe("probation workers", () => {
  it("a new script's run that holds its worker holds the probation worker: a known run sent meanwhile ends on the shared worker, and so does a new one while no known run waits", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 1 });
    await warmPool();
    expect(poolStats().inFlightPerProbationWorker).toEqual([0]);
    const known = "export default (n) => n + 1 // known, first test";
    expect(await runScript(known, { input: 1 })).toMatchObject({ ok: true, value: 2 });
    const { events, modules, holder, keep, release, until, untilSeenHolding } = holderProbe();
    const demotedBefore = poolStats().demotedScripts;
    keep("new holder");
    const held = runScript(holder("new holder"), { modules, limits: HOLD_LIMITS });
    await until(() => events.includes("started new holder"));
    await untilSeenHolding(demotedBefore);
    expect(poolStats().inFlightPerProbationWorker).toEqual([1]);
    expect(poolStats().inFlightPerSharedWorker).toEqual([0]);
    expect(await runScript(known, { input: 41 })).toMatchObject({ ok: true, value: 42 });
    // A new script too: the probation worker is held, and no known run waits for the shared one.
    expect(await runScript("export default () => 'light' // new, first test")).toMatchObject({ ok: true, value: "light" });
    expect(poolStats().inFlightPerProbationWorker).toEqual([1]);
    release("new holder");
    expect(await held).toMatchObject({ ok: true, value: "new holder" });
  });

  it("without probation (probationWorkers: 0) the same new script holds the shared worker, and the known run waits for it", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 0 });
    try {
      expect(poolStats().inFlightPerProbationWorker).toEqual([]);
      const known = "export default (n) => n + 1 // known, second test";
      expect(await runScript(known, { input: 1 })).toMatchObject({ ok: true, value: 2 });
      const { events, modules, holder, keep, release, until, untilSeenHolding } = holderProbe();
      const demotedBefore = poolStats().demotedScripts;
      keep("shared holder");
      const held = runScript(holder("shared holder"), { modules, limits: HOLD_LIMITS }).then((result) => {
        events.push("holder ended");
        return result;
      });
      await until(() => events.includes("started shared holder"));
      await untilSeenHolding(demotedBefore);
      expect(poolStats().inFlightPerSharedWorker).toEqual([1]);
      const knownRun = runScript(known, { input: 41 }).then((result) => {
        events.push("known ended");
        return result;
      });
      await until(() => poolStats().waitingRuns === 1);
      setTimeout(() => release("shared holder"), 200);
      expect(await knownRun).toMatchObject({ ok: true, value: 42 });
      expect(await held).toMatchObject({ ok: true, value: "shared holder" });
      expect(events).toEqual(["started shared holder", "holder ended", "known ended"]);
    } finally {
      configurePool({ probationWorkers: 1 });
    }
  });

  it("runs of a new script wait in the probation line while known runs wait for the shared worker, and join the ordinary line once the script is known", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 1 });
    await warmPool();
    const known = "export default (n) => n * 2 // known, third test";
    expect(await runScript(known, { input: 1 })).toMatchObject({ ok: true, value: 2 });
    const { events, modules, holder, keep, release, until, untilSeenHolding } = holderProbe();
    // A known script that holds the shared worker (known: one run of it ended at once).
    expect(await runScript(holder("on shared"), { modules, limits: HOLD_LIMITS })).toMatchObject({ ok: true, value: "on shared" });
    try {
      // The probation worker is held by a new script's run.
      let demotedBefore = poolStats().demotedScripts;
      keep("on probation");
      const probationHeld = runScript(holder("on probation"), { modules, limits: HOLD_LIMITS });
      await until(() => events.includes("started on probation"));
      await untilSeenHolding(demotedBefore);
      // The shared worker by the known one.
      demotedBefore = poolStats().demotedScripts;
      keep("on shared");
      const sharedHeld = runScript(holder("on shared"), { modules, limits: HOLD_LIMITS });
      await until(() => events.filter((event) => event === "started on shared").length === 2);
      await untilSeenHolding(demotedBefore);
      expect(poolStats().inFlightPerSharedWorker).toEqual([1]);
      expect(poolStats().inFlightPerProbationWorker).toEqual([1]);
      const knownRun = runScript(known, { input: 21 });
      const light = "export default (n) => n // new, third test";
      const copies = [runScript(light, { input: 1 }), runScript(light, { input: 2 })];
      await until(() => poolStats().waitingRuns === 3);
      expect(poolStats().waitingNewScriptRuns).toBe(2);
      // The new script becomes known: a run of it ends (isolated: on a dedicated worker).
      expect(await runScript(light, { input: 0, isolate: true })).toMatchObject({ ok: true, value: 0 });
      await until(() => poolStats().waitingNewScriptRuns === 0);
      expect(poolStats().waitingRuns).toBe(3);
      release("on shared");
      expect(await sharedHeld).toMatchObject({ ok: true, value: "on shared" });
      // All three ran on the shared worker; the probation worker is still held.
      expect(await knownRun).toMatchObject({ ok: true, value: 42 });
      expect(await Promise.all(copies)).toMatchObject([
        { ok: true, value: 1 },
        { ok: true, value: 2 },
      ]);
      expect(poolStats().inFlightPerProbationWorker).toEqual([1]);
      release("on probation");
      expect(await probationHeld).toMatchObject({ ok: true, value: "on probation" });
    } finally {
      release("on shared");
      release("on probation");
    }
  });

  it("a new script's run waits at most PROBATION_MAX_WAIT_MS while known runs keep the shared worker busy: then it goes before them", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 1 });
    await warmPool();
    const known = "export default (n) => n // known, aging test";
    expect(await runScript(known, { input: 0 })).toMatchObject({ ok: true, value: 0 });
    const { events, modules, holder, keep, release, until, untilSeenHolding } = holderProbe();
    expect(await runScript(holder("aging shared"), { modules, limits: HOLD_LIMITS })).toMatchObject({ ok: true });
    try {
      let demotedBefore = poolStats().demotedScripts;
      keep("aging probation");
      const probationHeld = runScript(holder("aging probation"), { modules, limits: HOLD_LIMITS });
      await until(() => events.includes("started aging probation"));
      await untilSeenHolding(demotedBefore);
      demotedBefore = poolStats().demotedScripts;
      keep("aging shared");
      const sharedHeld = runScript(holder("aging shared"), { modules, limits: HOLD_LIMITS });
      await until(() => events.filter((event) => event === "started aging shared").length === 2);
      await untilSeenHolding(demotedBefore);
      const ended: string[] = [];
      const sent = performance.now();
      const newRun = runScript("export default () => 'new' // aging test").then((result) => (ended.push("new"), result));
      await until(() => poolStats().waitingNewScriptRuns === 1);
      const knownRuns = [1, 2].map((n) => runScript(known, { input: n }).then((result) => (ended.push(`known ${n}`), result)));
      await until(() => poolStats().waitingRuns === 3);
      // Past the bound (and not before), the new run joins the ordinary line, ahead of the
      // known runs there.
      await until(() => poolStats().waitingNewScriptRuns === 0);
      expect(performance.now() - sent).toBeGreaterThanOrEqual(PROBATION_MAX_WAIT_MS);
      expect(poolStats().waitingRuns).toBe(3);
      release("aging shared");
      expect(await Promise.all([newRun, ...knownRuns, sharedHeld])).toMatchObject([
        { ok: true, value: "new" },
        { ok: true, value: 1 },
        { ok: true, value: 2 },
        { ok: true },
      ]);
      expect(ended).toEqual(["new", "known 1", "known 2"]);
      release("aging probation");
      expect(await probationHeld).toMatchObject({ ok: true });
    } finally {
      release("aging shared");
      release("aging probation");
    }
  });

  it("runs that lose the probation worker to a hard stop are sent again to its replacement, not to the shared worker known runs wait for", { timeout: 120_000 }, async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 4, demotedWorkers: 1, probationWorkers: 1 });
    await warmPool();
    const known = "export default (n) => n // known, hard-stop test";
    expect(await runScript(known, { input: 0 })).toMatchObject({ ok: true, value: 0 });
    const { events, modules, holder, keep, release, until, untilSeenHolding } = holderProbe();
    expect(await runScript(holder("hard-stop shared"), { modules, limits: HOLD_LIMITS })).toMatchObject({ ok: true });
    try {
      const demotedBefore = poolStats().demotedScripts;
      keep("hard-stop shared");
      const sharedHeld = runScript(holder("hard-stop shared"), { modules, limits: HOLD_LIMITS });
      await until(() => events.filter((event) => event === "started hard-stop shared").length === 2);
      await untilSeenHolding(demotedBefore);
      const knownRun = runScript(known, { input: 1 });
      await until(() => poolStats().waitingRuns === 1);
      // A new native hog takes the probation worker (effect-free, all in its top level, which
      // no interrupt reaches): withdrawn once seen, it runs on there until the watchdog
      // terminates the worker; the new run queued behind it is a bystander of that.
      const hardStopsBefore = poolStats().hardStops;
      const hog = `const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 400; i++) n += s.indexOf("b"); export default () => n; // probation hog`;
      // Both sent at once: both are placed on the probation worker (room for 4) before the
      // watchdog sees the hog hold it, so the light run is queued there behind it.
      const hogRun = runScript(hog, { limits: { cpuTimeMs: 300, wallTimeMs: 60_000 } });
      const bystander = runScript("export default () => 'bystander' // hard-stop test");
      await until(() => poolStats().inFlightPerProbationWorker[0] === 2 || poolStats().hardStops > hardStopsBefore);
      // It ends while the shared worker is still held: on the probation worker's replacement.
      expect(await bystander).toMatchObject({ ok: true, value: "bystander" });
      expect(poolStats().hardStops).toBeGreaterThan(hardStopsBefore);
      expect(poolStats().waitingRuns).toBe(1);
      release("hard-stop shared");
      expect(await knownRun).toMatchObject({ ok: true, value: 1 });
      expect(await sharedHeld).toMatchObject({ ok: true });
      expect((await hogRun).ok).toBe(false);
    } finally {
      release("hard-stop shared");
    }
  });

  it("a demoted script is no longer known: when its demotion ends, its next run is on probation again", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 1, demotionMs: 3_000 });
    try {
      await warmPool();
      const loop = "export default () => { for (;;) {} } // fourth test";
      // Known first: a run stopped at 5 ms of CPU held nothing.
      expect(await runScript(loop, { limits: { cpuTimeMs: 5 } })).toMatchObject({ ok: false, error: { kind: "cpu" } });
      const knownBefore = poolStats().knownScripts;
      // Then it runs to a 150 ms limit: demoted, forgotten as known.
      expect(await runScript(loop, { limits: { cpuTimeMs: 150 } })).toMatchObject({ ok: false, error: { kind: "cpu" } });
      expect(poolStats().knownScripts).toBe(knownBefore - 1);
      // Its demotion ends. New again: a run of it that ends without holding anything makes
      // it known (while it was demoted, a run of it would not).
      await new Promise((resolve) => setTimeout(resolve, 3_200));
      expect(await runScript(loop, { limits: { cpuTimeMs: 5 } })).toMatchObject({ ok: false, error: { kind: "cpu" } });
      expect(poolStats().knownScripts).toBe(knownBefore);
    } finally {
      configurePool({ demotionMs: 60_000 });
    }
  });
});
