// Sandbox lifecycle figures (issue 12, targets 2 and 6), each beside a baseline measured in
// the same run, with p50, p90 and p99. Used by bench/run.mjs (section "lifecycle").
//
//  - cycle: create + run + dispose, all awaited, back to back and from an idle pool (25 ms
//    between cycles), beside the bare engine's cycle (new wasm instance + runtime + context
//    + eval + dispose, bench/bare-quickjs.mjs) measured in the same process before
//    scriptbox is imported (the small-heap figure, the fastest: see bench/sandbox.mjs).
//  - burst: 200 `createSandbox()` + run, each run waiting 50 ms on setTimeout, submitted at
//    once: time to the first result and to all, beside the same burst in node:vm contexts
//    (a floor with no engine start-up and no worker) in the same process.
//  - first: the first sandbox in a fresh process (one process per sample): workers started
//    at the first createSandbox (the default) or by warmPool() right after the import,
//    with and without 100 ms of other start-up work between the import and the first
//    createSandbox; beside a fresh process that starts a bare worker thread and runs the
//    bare engine's cycle in it (the floor of "a first script off the main thread").
//
// Each scenario runs in a child process (`node bench/lifecycle.mjs <scenario> …`), so
// worker start-up and warm pools of one do not colour another. SCRIPTBOX_BENCH_DIST points
// the children at another build (to measure an older commit side by side).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { spread } from "./stats.mjs";

const SOURCE = "export default () => 1 + 1";
const WAIT_50 = "export default () => new Promise((resolve) => setTimeout(() => resolve(1), 50))";
const BURST = 200;
const IDLE_PAUSE_MS = 25;
const GAP_MS = 100;

const distIndex = process.env.SCRIPTBOX_BENCH_DIST
  ? new URL(process.env.SCRIPTBOX_BENCH_DIST, `file://${process.cwd()}/`).href
  : new URL("../dist/src/index.js", import.meta.url).href;

function check(result) {
  if (!result.ok) throw new Error(`sandbox run failed: ${result.error.kind}: ${result.error.message}`);
  return result;
}

// ---- scenarios (each runs in a child process) --------------------------------------

async function cycleScenario(samples) {
  const { bareCreateAndRun } = await import("./bare-quickjs.mjs");
  const bareCycle = async () => (await bareCreateAndRun(SOURCE)).dispose();
  const timed = async (into, op) => {
    const start = performance.now();
    await op();
    into?.push(performance.now() - start);
  };
  const bare = [];
  for (let i = 0; i < 20 + samples; i++) await timed(i < 20 ? null : bare, bareCycle);
  // The idle row's like-for-like baseline: the same pause before each bare cycle (after 25 ms
  // asleep, a core and its caches are cold: the bare cycle's p50 doubled on 2026-12-02).
  const bareIdle = [];
  for (let i = 0; i < samples; i++) {
    await sleep(IDLE_PAUSE_MS);
    await timed(bareIdle, bareCycle);
  }

  const { createSandbox } = await import(distIndex);
  const oursCycle = async () => {
    const sandbox = await createSandbox();
    check(await sandbox.run(SOURCE));
    await sandbox.dispose();
  };
  // Workers started and warm (a fixed cost of the process, measured by "first").
  await Promise.all(Array.from({ length: 4 }, oursCycle));
  for (let i = 0; i < 20; i++) await oursCycle();
  const backToBack = [];
  const idle = [];
  const bareLoaded = [];
  const BLOCK = 25;
  for (let done = 0; done < samples; done += BLOCK) {
    for (let i = 0; i < BLOCK; i++) await timed(backToBack, oursCycle);
    await sleep(IDLE_PAUSE_MS);
    for (let i = 0; i < BLOCK; i++) {
      await timed(idle, oursCycle);
      await sleep(IDLE_PAUSE_MS);
    }
    for (let i = 0; i < BLOCK; i++) await timed(bareLoaded, bareCycle);
    await sleep(IDLE_PAUSE_MS);
  }
  return { bare: spread(bare), bareIdle: spread(bareIdle), backToBack: spread(backToBack), idle: spread(idle), bareLoaded: spread(bareLoaded) };
}

/** One burst: `start(i)` for BURST items at once; time to the first and to the last result. */
async function burst(start) {
  const t0 = performance.now();
  let first = null;
  const each = [];
  await Promise.all(
    Array.from({ length: BURST }, async (_, i) => {
      await start(i);
      const t = performance.now() - t0;
      first ??= t;
      each.push(t);
    }),
  );
  return { first, all: performance.now() - t0, each };
}

async function burstScenario(rounds) {
  const vm = await import("node:vm");
  const vmStart = async () => {
    const context = vm.createContext({ setTimeout });
    const wait = new vm.Script("new Promise((resolve) => setTimeout(() => resolve(1), 50))").runInContext(context);
    if ((await wait) !== 1) throw new Error("vm burst: wrong value");
  };
  const { createSandbox } = await import(distIndex);
  const oursStart = async () => {
    const sandbox = await createSandbox();
    try {
      check(await sandbox.run(WAIT_50));
    } finally {
      await sandbox.dispose();
    }
  };
  // Workers started, warm pools full: the burst is not about process start-up.
  await Promise.all(Array.from({ length: 4 }, oursStart));
  await sleep(300);
  const ours = { first: [], all: [], each: [] };
  const floor = { first: [], all: [], each: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [into, start] of round % 2 === 0 ? [[floor, vmStart], [ours, oursStart]] : [[ours, oursStart], [floor, vmStart]]) {
      const r = await burst(start);
      into.first.push(r.first);
      into.all.push(r.all);
      into.each.push(...r.each);
      await sleep(300); // the workers refill their warm pools between bursts
    }
  }
  const summary = (x) => ({ first: spread(x.first), all: spread(x.all), each: spread(x.each) });
  return { burst: BURST, rounds, ours: summary(ours), vm: summary(floor) };
}

/** One fresh process's first sandbox. mode: lazy | warm | lazy-gap | warm-gap. */
async function firstScenario(mode) {
  const t0 = performance.now();
  const scriptbox = await import(distIndex);
  const imported = performance.now();
  if (mode.startsWith("warm")) {
    if (typeof scriptbox.warmPool !== "function") return { skipped: "this build has no warmPool()" };
    void scriptbox.warmPool();
  }
  // Other start-up work of the embedder (reading config, opening a server): busy, not idle.
  if (mode.endsWith("gap")) while (performance.now() - imported < GAP_MS);
  const created = performance.now();
  const sandbox = await scriptbox.createSandbox();
  check(await sandbox.run(SOURCE));
  const done = performance.now();
  await sandbox.dispose();
  return { importMs: imported - t0, firstMs: done - created, sinceStartMs: done };
}

/** The floor: a fresh process starts a worker thread that runs the bare engine's cycle. */
async function firstBareScenario() {
  const { Worker } = await import("node:worker_threads");
  const bare = new URL("./bare-quickjs.mjs", import.meta.url).href;
  const t0 = performance.now();
  const worker = new Worker(
    `import { bareCreateAndRun } from ${JSON.stringify(bare)}; import { parentPort } from "node:worker_threads";
     const sandbox = await bareCreateAndRun(${JSON.stringify(SOURCE)}); sandbox.dispose(); parentPort.postMessage(sandbox.value);`,
    { eval: true, type: "module" },
  );
  await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  const done = performance.now();
  await worker.terminate();
  return { firstMs: done - t0 };
}

// ---- the parent: runs each scenario in a child process -----------------------------

const run = promisify(execFile);

async function inChild(...args) {
  const { stdout } = await run(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), ...args], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 600_000,
    env: process.env,
  });
  return JSON.parse(stdout.trim().split("\n").pop());
}

export async function benchLifecycle({ quick = false } = {}) {
  const cycle = await inChild("cycle", String(quick ? 100 : 300));
  const bursts = await inChild("burst", String(quick ? 3 : 6));
  const processes = quick ? 5 : 12;
  const first = { lazy: [], warm: [], "lazy-gap": [], "warm-gap": [], bare: [] };
  const importMs = [];
  let warmSkipped = false;
  for (let i = 0; i < processes; i++) {
    // Interleaved, so a noisy stretch of the machine hits every mode alike.
    for (const mode of Object.keys(first)) {
      const r = mode === "bare" ? await inChild("first-bare") : await inChild("first", mode);
      if (r.skipped) warmSkipped = true;
      else first[mode].push(r.firstMs);
      if (mode === "lazy") importMs.push(r.importMs);
    }
  }
  return {
    cycle,
    bursts,
    first: Object.fromEntries(Object.entries(first).map(([mode, values]) => [mode, spread(values)])),
    importMs: spread(importMs),
    warmSkipped,
    gapMs: GAP_MS,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [name, arg] = process.argv.slice(2);
  let result;
  if (name === "cycle") result = await cycleScenario(Number(arg));
  else if (name === "burst") result = await burstScenario(Number(arg));
  else if (name === "first") result = await firstScenario(arg);
  else if (name === "first-bare") result = await firstBareScenario();
  else {
    // `node bench/lifecycle.mjs` alone: the whole section, printed as JSON.
    result = await benchLifecycle({ quick: process.argv.includes("--quick") });
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
