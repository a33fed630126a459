// The sandbox host's figures (issue 2), each beside bare quickjs-emscripten in the same
// process (bench/bare-quickjs.mjs), as p50 / p90 / p99. Used by bench/run.mjs.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { barePlugin, bareCreateAndRun, bareReusedSandbox } from "./bare-quickjs.mjs";
import { collectGarbage, median, sample, spread } from "./stats.mjs";
import { importCost, realmCost } from "./realm.mjs";
import { bareWorkerRuns } from "./worker-runs.mjs";

const SOURCE = "export default () => 1 + 1";
const PLUGIN = "let calls = 0; export function onEvent(n) { calls++; return n + 1; }";
const BARE_PLUGIN = "export default function onEvent(n) { return n + 1; }";
/** Pause between create/run/dispose cycles in the "idle pool" measurement. */
const IDLE_PAUSE_MS = 25;

const run = promisify(execFile);
const distIndex = new URL("../dist/src/index.js", import.meta.url).href;

function check(result) {
  if (!result.ok) throw new Error(`sandbox run failed: ${result.error.kind}: ${result.error.message}`);
  return result;
}

/**
 * (a) createSandbox + run, and + dispose. Ours twice: from an idle pool (IDLE_PAUSE_MS
 * between cycles lets the worker refill its warm pool off the request path, as a server
 * taking requests as they come) and back to back (each cycle queued behind the previous
 * one's dispose and refill work). Bare: a new wasm instance + runtime + context + eval,
 * back to back, in blocks alternating with ours (see bareCreateAndRunAlone for the
 * primary bare figure).
 */
async function createAndRun(createSandbox, samples) {
  const series = () => ({ createRun: [], createRunDispose: [] });
  const idle = series();
  const backToBack = series();
  const bare = series();
  const cycle = async (side, create, pauseMs) => {
    const start = performance.now();
    const dispose = await create();
    const ran = performance.now();
    await dispose();
    const disposed = performance.now();
    side?.createRun.push(ran - start);
    side?.createRunDispose.push(disposed - start);
    if (pauseMs > 0) await sleep(pauseMs);
  };
  const oursCycle = async () => {
    const sandbox = await createSandbox();
    check(await sandbox.run(SOURCE));
    return () => sandbox.dispose();
  };
  const bareCycle = async () => {
    const sandbox = await bareCreateAndRun(SOURCE);
    return () => sandbox.dispose();
  };
  for (let i = 0; i < 20; i++) {
    await cycle(null, oursCycle, 0);
    await cycle(null, bareCycle, 0);
  }
  // Alternating blocks: a noisy stretch on the machine hits every series alike, and no
  // series' garbage (16 MiB wasm memories) is collected inside another's cycles.
  const BLOCK = 25;
  for (let done = 0; done < samples; done += BLOCK) {
    for (let i = 0; i < BLOCK; i++) await cycle(idle, oursCycle, IDLE_PAUSE_MS);
    for (let i = 0; i < BLOCK; i++) await cycle(backToBack, oursCycle, 0);
    await sleep(IDLE_PAUSE_MS);
    for (let i = 0; i < BLOCK; i++) await cycle(bare, bareCycle, 0);
  }
  return { idle, backToBack, bare };
}

/**
 * Bare create + run (+ dispose) back to back, measured before scriptbox is imported. Each
 * bare cycle allocates a 16 MiB wasm memory, which makes V8 run a full GC of the thread's
 * heap every cycle or two (external memory pressure); once the package (undici, fastify,
 * esbuild, ...) is loaded, that heap is larger and a bare cycle takes several times longer
 * (measured 1.7 ms -> 5-15 ms). The small-heap figure is the bare baseline we compare
 * against: it is the fastest, so the ratio is conservative.
 */
export async function bareCreateAndRunAlone(samples, pauseMs = 0) {
  const createRun = [];
  const createRunDispose = [];
  for (let i = 0; i < 20 + samples; i++) {
    if (pauseMs > 0) await sleep(pauseMs); // the idle rows' baseline: a cold core after the same pause
    const start = performance.now();
    const sandbox = await bareCreateAndRun(SOURCE);
    const ran = performance.now();
    sandbox.dispose();
    const disposed = performance.now();
    if (i < 20) continue;
    createRun.push(ran - start);
    createRunDispose.push(disposed - start);
  }
  return { createRun, createRunDispose };
}

/** (b) runs in one reused sandbox; bare: one engine, a fresh runtime+context per run (the
 * isolation our host gives each run) and, for reference, one reused context. */
async function reusedRuns(createSandbox, samples) {
  const sandbox = await createSandbox();
  const ours = await sample(async () => check(await sandbox.run(SOURCE)), { warmup: 50, samples });
  await sandbox.dispose();
  const fresh = await bareReusedSandbox({ freshRealm: true });
  const bareFresh = await sample(() => fresh.run(SOURCE), { warmup: 50, samples });
  fresh.dispose();
  const reused = await bareReusedSandbox({ freshRealm: false });
  const bareReused = await sample(() => reused.run(SOURCE), { warmup: 50, samples });
  reused.dispose();
  return { ours, bareFresh, bareReused };
}

/** (c) plugin.call round trip from the embedder's thread; bare: a host→guest callFunction. */
async function pluginCalls(createSandbox, samples) {
  const sandbox = await createSandbox();
  const plugin = await sandbox.load(PLUGIN, { filename: "plugin.js" });
  const ours = await sample(async (i) => {
    if ((await plugin.call("onEvent", i)) !== i + 1) throw new Error("plugin.call returned a wrong value");
  }, { warmup: 200, samples });
  await sandbox.dispose();
  const bare = await barePlugin(BARE_PLUGIN, "default");
  const bareTimes = await sample((i) => bare.call(i), { warmup: 200, samples });
  bare.dispose();
  return { ours, bare: bareTimes };
}

/** The floor under any call into a worker: a postMessage echo round trip of the message plugin.call posts. */
async function workerEcho(samples) {
  const worker = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", { eval: true });
  const times = await sample(
    (i) =>
      new Promise((resolve) => {
        worker.once("message", resolve);
        worker.postMessage([i, 1, 0, 1, "onEvent", [i], 1]); // a plugin call's short form (host/protocol.ts: CallMessage)
      }),
    { warmup: 200, samples },
  );
  await worker.terminate();
  return times;
}

/** (d) RSS per idle live sandbox with 100 alive, in fresh child processes (see rss-child.mjs). */
async function residentMemory(children, runsPerSandbox = 1) {
  const child = fileURLToPath(new URL("./rss-child.mjs", import.meta.url));
  const ours = [];
  const bare = [];
  for (let i = 0; i < children; i++) {
    const { stdout } = await run(process.execPath, ["--expose-gc", child, i % 2 === 0 ? "ours-first" : "bare-first", "100", String(runsPerSandbox)], { timeout: 60_000 });
    const result = JSON.parse(stdout.trim().split("\n").at(-1));
    ours.push(result.ours);
    bare.push(result.bare);
  }
  return { ours, bare };
}

/**
 * How far past a 100 ms cpuTimeMs a `for(;;){}` is stopped, in one reused sandbox: by the
 * run's own stats (cpu time, and wall time from the start of the activation in the worker)
 * and by the embedder's clock around run() (which adds the request's own path: message,
 * realm, and the fresh engine the host builds after a run stopped mid-flight).
 */
async function limitOvershoot(createSandbox, samples) {
  const cpuTimeMs = 100;
  const cpuOver = [];
  const statsWallOver = [];
  const wallOver = [];
  let sandbox = await createSandbox({ limits: { cpuTimeMs } });
  check(await sandbox.run(SOURCE));
  for (let i = 0; i < samples + 1; i++) {
    if (sandbox.disposed) sandbox = await createSandbox({ limits: { cpuTimeMs } });
    const start = performance.now();
    const result = await sandbox.run("for (;;) {}");
    const wall = performance.now() - start;
    if (result.ok || result.error.kind !== "cpu") throw new Error(`expected a cpu limit, got ${JSON.stringify(result.error ?? result.value)}`);
    if (i === 0) continue; // warm-up
    cpuOver.push(result.stats.cpuTimeMs - cpuTimeMs);
    statsWallOver.push(result.stats.wallTimeMs - cpuTimeMs);
    wallOver.push(wall - cpuTimeMs);
  }
  await sandbox.dispose();
  return { cpuTimeMs, cpuOver, statsWallOver, wallOver };
}

function figure(ours, bare, extra = {}) {
  return { ours: median(ours), bare: median(bare), oursSpread: spread(ours), bareSpread: spread(bare), samples: ours.length, ...extra };
}

export async function benchSandbox({ quick = false } = {}) {
  const n = quick ? 100 : 300;
  const bareAlone = await bareCreateAndRunAlone(n);
  const bareAloneIdle = await bareCreateAndRunAlone(n, IDLE_PAUSE_MS);
  const { createSandbox } = await import(distIndex);
  // Start the shared workers before measuring anything: a fixed cost of the process.
  const first = await Promise.all([createSandbox(), createSandbox()]);
  for (const sandbox of first) check(await sandbox.run(SOURCE));
  await Promise.all(first.map((sandbox) => sandbox.dispose()));
  await collectGarbage();

  const a = await createAndRun(createSandbox, n);
  const b = await reusedRuns(createSandbox, quick ? 300 : 1000);
  const onWorker = await bareWorkerRuns(quick ? 1000 : 3000);
  const c = await pluginCalls(createSandbox, quick ? 1000 : 5000);
  const echo = await workerEcho(quick ? 1000 : 5000);
  const limit = await limitOvershoot(createSandbox, quick ? 10 : 20);
  await collectGarbage();
  const realm = await realmCost(quick ? 500 : 2000);
  const d = await residentMemory(quick ? 1 : 3);
  const dImaged = await residentMemory(quick ? 1 : 3, 3);
  const imported = await importCost(quick ? 2 : 5);
  return {
    idleCreateRun: figure(a.idle.createRun, bareAloneIdle.createRun, { pauseMs: IDLE_PAUSE_MS }),
    idleCreateRunDispose: figure(a.idle.createRunDispose, bareAloneIdle.createRunDispose, { pauseMs: IDLE_PAUSE_MS }),
    createRun: figure(a.backToBack.createRun, bareAlone.createRun),
    createRunDispose: figure(a.backToBack.createRunDispose, bareAlone.createRunDispose),
    bareLoaded: { createRun: spread(a.bare.createRun), createRunDispose: spread(a.bare.createRunDispose) },
    reusedRun: { ours: median(b.ours), bareFresh: median(b.bareFresh), bareReused: median(b.bareReused), samples: b.ours.length, oursSpread: spread(b.ours), bareFreshSpread: spread(b.bareFresh) },
    workerRuns: { build: spread(onWorker.build), image: spread(onWorker.image), imageBytes: onWorker.imageBytes },
    realmBuild: { ours: spread(realm.ours.build), bare: spread(realm.bare.build) },
    realmCycle: { ours: spread(realm.ours.cycle), bare: spread(realm.bare.cycle) },
    realmFromImage: { ours: spread(realm.image.build), bare: spread(realm.bare.build) },
    realmFromImageCycle: { ours: spread(realm.image.cycle), bare: spread(realm.bare.cycle) },
    importRss: { ours: spread(imported.ours), bare: spread(imported.bare) },
    pluginCall: { ours: spread(c.ours), bare: spread(c.bare), echo: spread(echo) },
    rssPerSandbox: { ours: median(d.ours), bare: median(d.bare), samples: d.ours.length, oursSpread: spread(d.ours), bareSpread: spread(d.bare) },
    rssPerImagedSandbox: { ours: median(dImaged.ours), bare: median(dImaged.bare), samples: dImaged.ours.length, oursSpread: spread(dImaged.ours), bareSpread: spread(dImaged.bare) },
    limit: { cpuTimeMs: limit.cpuTimeMs, cpuOver: spread(limit.cpuOver), statsWallOver: spread(limit.statsWallOver), wallOver: spread(limit.wallOver) },
  };
}
