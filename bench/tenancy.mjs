// Mixed tenancy (issue 10): runScript calls at a fixed concurrency, some of them hostile
// (busy loops, native hogs, log floods), measured for the ordinary ones: latency p50, p90
// and p99, success rate, throughput; beside the same load without hostile scripts (the
// baseline, measured in the same bench run), for shared workers and for `isolate: true`.
// Also the RSS each live isolated sandbox costs. Used by bench/run.mjs.
//
// Each scenario runs in a fresh process (`node bench/tenancy.mjs <scenario> <n>`), so one
// scenario's terminated workers and warm pools do not colour the next.
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { percentile, spread } from "./stats.mjs";

const distIndex = new URL("../dist/src/index.js", import.meta.url).href;
const CONCURRENCY = 50;
/** Ordinary runs before the measurement (see scenario()): a server that has been up for a few seconds. */
const WARM_UP_MS = 2_000;
/** What a server would give every request, hostile or not. */
const LIMITS = { cpuTimeMs: 100, wallTimeMs: 5_000 };

/** An ordinary request: a little computation, a timer, a log line, a result. */
const ORDINARY = `export default async (n) => {
  let s = 0; for (let i = 0; i < 20000; i++) s += i % 7;
  await new Promise((r) => setTimeout(r, 5));
  console.log("handled", n);
  return s + n;
}`;
const HOSTILE = [
  // A pure-JS loop: the interrupt stops it at the CPU limit.
  "export default () => { for (;;) {} }",
  // Native work that ignores the interrupt: only terminating the worker stops it.
  `const s = "a".repeat(1 << 24); export default () => { let n = 0; for (let i = 0; i < 200; i++) n += s.indexOf("b"); return n }`,
  // A log flood: bounded by maxLogBytes, stopped by the CPU limit.
  "export default () => { for (;;) console.log('flood') }",
];

async function scenario(name, total) {
  const { runScript, configurePool, poolStats, warmPool } = await import(distIndex);
  const hostileShare = name.endsWith("hostile") ? 0.1 : 0;
  const isolate = name.startsWith("isolate");
  // TENANCY_QUEUED_RUNS=<n> sets queuedRunsPerWorker (0: every run placed at once, as before it existed).
  // TENANCY_SHARED_WORKERS=<n> sets sharedWorkers (to compare pool sizes);
  // TENANCY_DEMOTED_WORKERS=0 turns the demotion of scripts that held a worker off.
  const pool = {};
  if (process.env.TENANCY_DEMOTED_WORKERS !== undefined) pool.demotedWorkers = Number(process.env.TENANCY_DEMOTED_WORKERS);
  if (process.env.TENANCY_QUEUED_RUNS !== undefined) pool.queuedRunsPerWorker = Number(process.env.TENANCY_QUEUED_RUNS);
  if (process.env.TENANCY_SHARED_WORKERS !== undefined) pool.sharedWorkers = Number(process.env.TENANCY_SHARED_WORKERS);
  configurePool(pool);
  // Warm-up outside the measurement, ordinary runs only (hostile scripts must be new to the
  // pool when measured): the workers' start belongs to process start, and so does V8's
  // tier-up of the engine's wasm, which compiles the hot QuickJS functions on background
  // threads for the first seconds of work and took ~0.3-0.4 s of CPU from the two cores
  // during the measured pass after a 4-run warm-up (the baseline's p99 ~250-300 ms then,
  // ~150-190 ms once warm). TENANCY_WARM_UP_MS=0 measures a cold pool: nothing run (the
  // shared workers started, in the shared scenarios).
  if (!isolate) await warmPool();
  const warmUpMs = Number(process.env.TENANCY_WARM_UP_MS ?? WARM_UP_MS);
  const warmUpEnds = performance.now() + warmUpMs;
  let warmUpRuns = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < warmUpEnds) await runScript(ORDINARY, { input: warmUpRuns++, limits: LIMITS, isolate });
    }),
  );
  // The warm-up must leave the pool as the measurement expects it: no ordinary script demoted.
  const demotedByWarmUp = poolStats().demotedScripts;
  if (demotedByWarmUp > 0) console.warn(`tenancy ${name}: the warm-up demoted ${demotedByWarmUp} script(s); the figures are not comparable`);
  const every = hostileShare > 0 ? Math.round(1 / hostileShare) : Infinity;
  const ordinary = [];
  // Where ordinary runs spend their time: waiting for their worker (stats.queuedMs: behind
  // other runs there, for a worker start, re-runs after a hard stop) and running.
  const queued = [];
  const running = [];
  const loadAtStart = loadavg()[0];
  const outcomes = { ok: 0, evicted: 0, other: 0, rejected: 0, hostileKinds: {}, otherKinds: {}, otherSamples: {} };
  let next = 0;
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const started = performance.now();
  const lane = async () => {
    while (next < total) {
      const i = next++;
      const hostile = i % every === every - 1;
      // TENANCY_HOSTILE=<index> keeps one kind of hostile script (to see what each costs).
      const only = process.env.TENANCY_HOSTILE;
      const source = hostile ? HOSTILE[only === undefined ? Math.floor(i / every) % HOSTILE.length : Number(only)] : ORDINARY;
      const t0 = performance.now();
      try {
        const result = await runScript(source, { input: i, limits: LIMITS, isolate });
        if (hostile) {
          const kind = result.ok ? "ok" : result.error.kind;
          outcomes.hostileKinds[kind] = (outcomes.hostileKinds[kind] ?? 0) + 1;
          continue;
        }
        ordinary.push(performance.now() - t0);
        queued.push(result.stats.queuedMs ?? 0);
        running.push(result.stats.wallTimeMs);
        if (result.ok) outcomes.ok++;
        else if (result.error.kind === "evicted") outcomes.evicted++;
        else {
          outcomes.other++;
          outcomes.otherKinds[result.error.kind] = (outcomes.otherKinds[result.error.kind] ?? 0) + 1;
          outcomes.otherSamples[result.error.kind] ??= result.error.message;
        }
      } catch {
        if (!hostile) outcomes.rejected++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  return {
    name,
    total,
    ordinaryCount: ordinary.length + outcomes.rejected,
    p50: percentile(ordinary, 50),
    p90: percentile(ordinary, 90),
    p99: percentile(ordinary, 99),
    queued: { p50: percentile(queued, 50), p99: percentile(queued, 99) },
    running: { p50: percentile(running, 50), p99: percentile(running, 99) },
    loadAtStart,
    warmUpMs,
    warmUpRuns,
    demotedByWarmUp,
    successRate: outcomes.ok / (ordinary.length + outcomes.rejected),
    ...outcomes,
    throughput: total / seconds,
    peakRss,
  };
}

/** RSS per live isolated sandbox: process RSS with `count` alive (each ran once), minus before, after GC. */
async function isolatedRss(count) {
  const { createSandbox, configurePool } = await import(distIndex);
  configurePool({ maxIsolatedWorkers: count });
  const gc = async () => {
    for (let i = 0; i < 3; i++) {
      globalThis.gc?.();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await gc();
  const before = process.memoryUsage().rss;
  const sandboxes = [];
  for (let i = 0; i < count; i++) sandboxes.push(await createSandbox({ isolate: true }));
  await Promise.all(sandboxes.map((sandbox) => sandbox.run("export default () => 1")));
  await gc();
  const after = process.memoryUsage().rss;
  await Promise.all(sandboxes.map((sandbox) => sandbox.dispose()));
  return { name: "isolated-rss", count, perSandbox: (after - before) / count };
}

const run = promisify(execFile);

async function inChild(...args) {
  const { stdout } = await run(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 600_000 });
  return JSON.parse(stdout.trim().split("\n").pop());
}

/** Runs every scenario, each in its own process. */
export async function benchTenancy({ quick }) {
  const total = quick ? 100 : 200;
  const results = {};
  for (const name of ["shared", "shared-hostile", "isolate", "isolate-hostile"]) results[name] = await inChild(name, String(total));
  // RSS per live isolated sandbox in three fresh processes (one quick): p50/p90/p99 of them.
  const count = quick ? 4 : 8;
  const perSandbox = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) perSandbox.push((await inChild("isolated-rss", String(count))).perSandbox);
  results.isolatedRss = { count, perSandbox: spread(perSandbox) };
  return { total, concurrency: CONCURRENCY, limits: LIMITS, results };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [name, n] = process.argv.slice(2);
  const result = name === "isolated-rss" ? await isolatedRss(Number(n)) : await scenario(name, Number(n));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
