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
/** For a holder that spins through a test of many hard stops (its CPU limit must not end it first on a loaded machine). */
const LONG_HOLD_LIMITS = { cpuTimeMs: 300_000, wallTimeMs: 300_000 };

/**
 * A native hog: all its work in one native call per iteration, in its top level, which no
 * interrupt reaches (it ends by the hard stop of its worker). `name` makes each a script of
 * its own.
 */
const nativeHog = (name: string) => `const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 400; i++) n += s.indexOf("b"); export default () => n; // ${name}`;

/**
 * Guest code that holds its worker (CPU in one go, after an effect: a run that had one is
 * never withdrawn to run elsewhere) while the test keeps it (`keep`, until `release`).
 * `name` tells the runs apart (and makes each text a script of its own).
 */
function holderProbe(limits = HOLD_LIMITS) {
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
  const run = (name: string) => runScript(holder(name), { modules, limits });
  const startedCount = (name: string) => probe.events.filter((event) => event === `started ${name}`).length;
  /** Makes `name`'s script known: one run of it that ends at once. */
  const makeKnown = async (name: string) => expect(await run(name)).toMatchObject({ ok: true, value: name });
  /**
   * Starts a run of `name` that holds its worker (kept until `release(name)`), and waits
   * until the watchdog has seen it hold it (its script is then demoted: no room for runs
   * there). Returns the run's result (wrapped: an async function's returned promise would
   * be awaited, and the run ends only once released).
   */
  const holdWorker = async (name: string) => {
    const demotedBefore = poolStats().demotedScripts;
    const startedBefore = startedCount(name);
    keep(name);
    const held = run(name);
    await probe.until(() => startedCount(name) > startedBefore);
    await probe.until(() => poolStats().demotedScripts > demotedBefore);
    return { result: held };
  };
  return { ...probe, modules, release, makeKnown, holdWorker };
}

/**
 * The scene of most probation-worker tests: one shared worker (room for
 * `queuedRunsPerWorker` runs), one demoted and one probation worker, warm; a known script
 * (`known`, returning its input: one run of it ended); and the holder probe with the
 * script of `sharedHolder` made known, so that its next run holds the shared worker.
 */
async function probationScene(queuedRunsPerWorker: number, test: string, sharedHolder: string, holdLimits = HOLD_LIMITS) {
  configurePool({ sharedWorkers: 1, queuedRunsPerWorker, demotedWorkers: 1, probationWorkers: 1 });
  await warmPool();
  const known = `export default (n) => n // known, ${test}`;
  expect(await runScript(known, { input: 0 })).toMatchObject({ ok: true, value: 0 });
  const probe = holderProbe(holdLimits);
  await probe.makeKnown(sharedHolder);
  return { known, ...probe };
}

/**
 * The scene of the native-hog tests: probationScene with its shared worker held (a holder
 * with LONG_HOLD_LIMITS) and a known run waiting for it, so that new scripts' runs go to
 * the probation worker only. `releaseShared()` lets the holder end and checks that both it
 * and the known run then end ok.
 */
async function heldSharedScene(queuedRunsPerWorker: number, test: string) {
  const holder = `${test} shared`;
  const { known, release, until, holdWorker } = await probationScene(queuedRunsPerWorker, test, holder, LONG_HOLD_LIMITS);
  const { result: sharedHeld } = await holdWorker(holder);
  let sharedEnded = false;
  void sharedHeld.then(() => (sharedEnded = true));
  const knownRun = runScript(known, { input: 1 });
  await until(() => poolStats().waitingRuns === 1);
  return {
    hardStopsBefore: poolStats().hardStops,
    /** Whether the holder has ended (the shared worker is no longer held). */
    sharedEnded: () => sharedEnded,
    releaseShared: async () => {
      release(holder);
      expect(await knownRun).toMatchObject({ ok: true, value: 1 });
      expect(await sharedHeld).toMatchObject({ ok: true });
    },
    /** For `finally`: lets the holder end whatever happened. */
    cleanUp: () => release(holder),
    /** `count` distinct native hogs sent at once (queued on the probation worker in that order). */
    sendHogs: (count: number, cpuTimeMs: number) =>
      Array.from({ length: count }, (_, i) => runScript(nativeHog(`${test} hog ${i}`), { limits: { cpuTimeMs, wallTimeMs: 120_000 } })),
  };
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

describe("the ordinary line, for runs let out of the probation line", () => {
  /** A line with no room, and the order in which its waiters are let out once room comes. */
  function orderedLine() {
    let room = 0;
    const line = new RunAdmission(() => room);
    const order: string[] = [];
    const admit = (name: string, ahead = false, since?: number) => {
      const wait = line.admit(undefined, ahead, undefined, since);
      void wait.admission.then(() => order.push(name));
      return wait;
    };
    /** Lets `count` more runs out (all by default), and waits for their admissions to resolve. */
    const drain = async (count = Infinity) => {
      room = count === Infinity ? Infinity : room + count;
      line.wake();
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    return { line, order, admit, drain };
  }

  it("a run that began to wait earlier elsewhere takes its place by arrival: behind the runs there before it, before the later ones, behind the runs that came back", async () => {
    const { line, order, admit, drain } = orderedLine();
    admit("known at 100", false, 100);
    admit("known at 300", false, 300);
    admit("came back", true, 500);
    // Let out of the probation line after its wait, begun at 200. Before this change it
    // went ahead of every known run, however long they had waited (hostile test).
    admit("new since 200", false, 200);
    admit("new since 50", false, 50);
    admit("known at 400", false, 400);
    expect(line.waitingCount).toBe(6);
    await drain();
    expect(order).toEqual(["came back", "new since 50", "known at 100", "new since 200", "known at 300", "known at 400"]);
  });

  it("keeps the runs that came back in front after some leave in every way (cancel, admission, release)", async () => {
    const { line, order, admit, drain } = orderedLine();
    const back1 = admit("back 1", true, 10);
    admit("back 2, let out", true, 3);
    admit("known at 100", false, 100);
    back1.cancel();
    admit("back 3", true, 30);
    admit("old, let out", false, 5);
    // Both runs that began to wait at 5 or before leave (their admissions say waitedTooLong).
    line.releaseWaitingSince(5);
    admit("back 4", true, 40);
    admit("known at 200", false, 200);
    await drain(1);
    // One admitted from the front; the next to come back still goes behind the other one.
    admit("back 5", true, 50);
    await drain();
    expect(order).toEqual(["back 2, let out", "old, let out", "back 3", "back 4", "back 5", "known at 100", "known at 200"]);
  });
});

describe("probation workers", () => {
  it("a new script's run that holds its worker holds the probation worker: a known run sent meanwhile ends on the shared worker, and so does a new one while no known run waits", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 1 });
    await warmPool();
    expect(poolStats().inFlightPerProbationWorker).toEqual([0]);
    const known = "export default (n) => n + 1 // known, first test";
    expect(await runScript(known, { input: 1 })).toMatchObject({ ok: true, value: 2 });
    const { release, holdWorker } = holderProbe();
    const { result: held } = await holdWorker("new holder");
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
      const { events, release, until, holdWorker } = holderProbe();
      const held = (await holdWorker("shared holder")).result.then((result) => {
        events.push("holder ended");
        return result;
      });
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

  it("a probation worker the pool stops while it starts (configurePool) does not hold back the next one", async () => {
    configurePool({ sharedWorkers: 1, queuedRunsPerWorker: 1, demotedWorkers: 1, probationWorkers: 0 });
    try {
      await warmPool();
      const { until } = startedProbe();
      // Probation on: a new script's run starts a probation worker (the run itself goes to
      // the idle shared worker); probation off again while that thread starts (a thread
      // takes 50 ms or more to start here, and the probe looks every 5 ms: were it ready
      // by then, this test would prove nothing, but it could not fail either).
      configurePool({ probationWorkers: 1 });
      const first = runScript("export default () => 1 // new, stopped while starting");
      await until(() => poolStats().inFlightPerProbationWorker.length === 1);
      configurePool({ probationWorkers: 0 });
      expect(poolStats().inFlightPerProbationWorker).toEqual([]);
      expect(await first).toMatchObject({ ok: true, value: 1 });
      // On again, well within PROBATION_MAX_WAIT_MS: the next new script's run starts one
      // (a worker that failed to start would hold the next back that long).
      configurePool({ probationWorkers: 1 });
      expect(await runScript("export default () => 2 // new, after the stop")).toMatchObject({ ok: true, value: 2 });
      expect(poolStats().inFlightPerProbationWorker).toHaveLength(1);
    } finally {
      configurePool({ probationWorkers: 1 });
    }
  });

  it("runs of a new script wait in the probation line while known runs wait for the shared worker, and join the ordinary line once the script is known", async () => {
    // A known script whose next run holds the shared worker (known: one run of it ended at once).
    const { known, release, until, holdWorker } = await probationScene(1, "third test", "on shared");
    try {
      // The probation worker is held by a new script's run, the shared worker by the known one.
      const { result: probationHeld } = await holdWorker("on probation");
      const { result: sharedHeld } = await holdWorker("on shared");
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
      expect(await knownRun).toMatchObject({ ok: true, value: 21 });
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

  it("a new script's run waits at most PROBATION_MAX_WAIT_MS while known runs keep the shared worker busy: then it takes its place by arrival among them", async () => {
    const { known, release, until, holdWorker } = await probationScene(1, "aging test", "aging shared");
    try {
      const { result: probationHeld } = await holdWorker("aging probation");
      const { result: sharedHeld } = await holdWorker("aging shared");
      const ended: string[] = [];
      const knownRun = (n: number) => runScript(known, { input: n }).then((result) => (ended.push(`known ${n}`), result));
      // One known run waits before the new one arrives, two after it.
      const earlierKnown = knownRun(0);
      await until(() => poolStats().waitingRuns === 1);
      const sent = performance.now();
      const newRun = runScript("export default () => 'new' // aging test").then((result) => (ended.push("new"), result));
      await until(() => poolStats().waitingNewScriptRuns === 1);
      const laterKnown = [1, 2].map(knownRun);
      await until(() => poolStats().waitingRuns === 4);
      // Past the bound (and not before), the new run joins the ordinary line where it would
      // be had it waited there from the start: behind the known run that was there before
      // it, ahead of the two that came after it.
      await until(() => poolStats().waitingNewScriptRuns === 0);
      expect(performance.now() - sent).toBeGreaterThanOrEqual(PROBATION_MAX_WAIT_MS);
      expect(poolStats().waitingRuns).toBe(4);
      release("aging shared");
      expect(await Promise.all([earlierKnown, newRun, ...laterKnown, sharedHeld])).toMatchObject([
        { ok: true, value: 0 },
        { ok: true, value: "new" },
        { ok: true, value: 1 },
        { ok: true, value: 2 },
        { ok: true },
      ]);
      expect(ended).toEqual(["known 0", "new", "known 1", "known 2"]);
      release("aging probation");
      expect(await probationHeld).toMatchObject({ ok: true });
    } finally {
      release("aging shared");
      release("aging probation");
    }
  });

  it("runs that lose the probation worker to a hard stop are sent again to its replacement, not to the shared worker known runs wait for", { timeout: 120_000 }, async () => {
    const { known, release, until, holdWorker } = await probationScene(4, "hard-stop test", "hard-stop shared");
    try {
      const { result: sharedHeld } = await holdWorker("hard-stop shared");
      const knownRun = runScript(known, { input: 1 });
      await until(() => poolStats().waitingRuns === 1);
      // A new native hog takes the probation worker (effect-free, all in its top level, which
      // no interrupt reaches): withdrawn once seen, it runs on there until the watchdog
      // terminates the worker; the new run queued behind it is a bystander of that.
      const hardStopsBefore = poolStats().hardStops;
      const hog = nativeHog("probation hog");
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

  it("a new script queued behind more native hogs than a bystander's retries on the probation worker runs on a replacement: losing only its place does not count", { timeout: 180_000 }, async () => {
    const scene = await heldSharedScene(10, "hogs-ahead test");
    try {
      // Nine distinct native hogs (no interrupt reaches them: each ends by the hard stop of
      // its worker), then a light new script, sent at once: all queued on the probation
      // worker in that order, so the light run is a bystander of each hog ahead of it (of
      // one per replacement: the next hog in line is a replacement's first run).
      const hogs = scene.sendHogs(9, 200);
      const light = runScript("export default () => 'light' // hogs-ahead test");
      // Not "evicted" after its sixth lost worker; and on a probation worker, not sent to
      // the held shared worker (a replacement that a hog stopped before it was ready once
      // held back the next one for a second, as if it could not start).
      expect(await light).toMatchObject({ ok: true, value: "light" });
      expect(scene.sharedEnded()).toBe(false);
      expect(poolStats().hardStops - scene.hardStopsBefore).toBeGreaterThan(6);
      await scene.releaseShared();
      for (const hog of await Promise.all(hogs)) expect(hog).toMatchObject({ ok: false, error: { kind: "cpu" } });
    } finally {
      scene.cleanUp();
    }
  });

  it("a run queued behind a flood of native hogs ends evicted at its 25th lost worker, not re-sent for as long as they come", { timeout: 240_000 }, async () => {
    const scene = await heldSharedScene(30, "hog-flood test");
    try {
      // As in the test before, with 25 hogs ahead of the light run: its place is lost at
      // least 25 times (none counts as a bystander's retry), the bound on losses of any kind.
      const hogs = scene.sendHogs(25, 100);
      const light = await runScript("export default () => 'light' // hog-flood test");
      expect(light).toMatchObject({ ok: false, error: { kind: "evicted" } });
      expect(light.ok || light.error.message).toMatch(/the 25th worker it lost/);
      expect(poolStats().hardStops - scene.hardStopsBefore).toBeGreaterThanOrEqual(25);
      expect(scene.sharedEnded()).toBe(false);
      await scene.releaseShared();
      // Each hog ended by its own hard stop, or, queued behind enough others, evicted as the
      // light run was (a hog's withdrawn attempt stuck in native code costs its worker
      // too, so the hogs ahead cost more than one worker each).
      const kinds = (await Promise.all(hogs)).map((hog) => (hog.ok ? "ok" : hog.error.kind));
      expect(kinds.filter((kind) => kind !== "cpu" && kind !== "evicted")).toEqual([]);
      expect(kinds).toContain("cpu");
    } finally {
      scene.cleanUp();
    }
  });

  it("a run queued behind native hogs, losing its place at each hard stop, ends queue-timeout at its queueTimeoutMs", { timeout: 120_000 }, async () => {
    const scene = await heldSharedScene(14, "hog-timeout test");
    try {
      // Twelve hogs ahead (each costs its worker, and often a replacement too, ~0.4 s or
      // more per worker): the light run is still queued after its 3 s, on its second or
      // later worker (the first hard stop comes once a hog has spent 200 ms of CPU).
      const hogs = scene.sendHogs(12, 100);
      const light = await runScript("export default () => 'light' // hog-timeout test", { queueTimeoutMs: 3_000 });
      expect(light).toMatchObject({ ok: false, error: { kind: "queue-timeout" } });
      expect(poolStats().hardStops).toBeGreaterThan(scene.hardStopsBefore);
      expect(scene.sharedEnded()).toBe(false);
      await scene.releaseShared();
      for (const hog of await Promise.all(hogs)) expect(hog.ok).toBe(false);
    } finally {
      scene.cleanUp();
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
