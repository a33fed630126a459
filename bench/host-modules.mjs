// Host modules (issue 9): host call round trips, throughput with many sandboxes, and the
// cost of declaring a module, each beside a baseline measured in the same run.
//
//   async round trip: guest `await app.echo(i)` 10,000 times in one run; one call = the
//     time between consecutive arrivals in the host function (guest → embedder → guest →
//     next call). Baseline: a worker postMessage echo round trip.
//   sync round trip: the same with a hostSync echo. Baseline (the floor): a bare
//     quickjs-emscripten newFunction called from guest code on the same thread.
//   throughput: 8 sandboxes at once, each awaiting host calls in a loop, in rounds: calls/s
//     per round, and the embedder thread's CPU per call (the thread's own schedstat clock).
//   create cost: create + run + dispose with a 50-function module vs without one.
import { loadavg } from "node:os";
import { Worker } from "node:worker_threads";
import { bareEngine } from "./bare-quickjs.mjs";
import { median, rateSpread, spread } from "./stats.mjs";

const distIndex = new URL("../dist/src/index.js", import.meta.url).href;
const threadCpu = new URL("../dist/host/thread-cpu.js", import.meta.url).href;

function check(result) {
  if (!result.ok) throw new Error(`run failed: ${result.error.kind}: ${result.error.message}`);
  return result.value;
}

/** Percentiles, and the 1-min load average when they were taken. */
function summary(times) {
  return { ...spread(times), load: loadavg()[0] };
}

/** Per-call times from arrival timestamps (drops the first calls, which warm up). */
function gaps(stamps, warmup) {
  const out = [];
  for (let i = warmup + 1; i < stamps.length; i++) out.push(stamps[i] - stamps[i - 1]);
  return out;
}

async function roundTrips(api, calls) {
  const { createSandbox, hostSync } = api;
  const asyncStamps = [];
  const syncStamps = [];
  const sandbox = await createSandbox({
    limits: { cpuTimeMs: 120_000, wallTimeMs: 300_000, maxHostCalls: 10_000_000 },
    modules: {
      app: {
        echo: (i) => (asyncStamps.push(performance.now()), i),
        echoSync: hostSync((i) => (syncStamps.push(performance.now()), i)),
      },
    },
  });
  try {
    check(await sandbox.run(`import { echo } from "app"; export default async (n) => { for (let i = 0; i < n; i++) await echo(i); return n }`, { input: calls }));
    check(await sandbox.run(`import { echoSync } from "app"; export default (n) => { let s = 0; for (let i = 0; i < n; i++) s += echoSync(i); return s }`, { input: calls }));
  } finally {
    await sandbox.dispose();
  }
  return { async: summary(gaps(asyncStamps, 500)), sync: summary(gaps(syncStamps, 500)) };
}

/** Worker postMessage echo round trips (the floor of any call between threads). */
async function workerEcho(calls) {
  const worker = new Worker("require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));", { eval: true });
  const times = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await new Promise((resolve) => {
      worker.once("message", resolve);
      worker.postMessage({ t: 1, c: i, f: 0, j: `[${i}]`, b: [], s: 0 });
    });
    times.push(performance.now() - start);
  }
  await worker.terminate();
  return summary(times.slice(500));
}

/** A bare quickjs-emscripten host function (newFunction) called from guest code, same thread. */
async function bareNewFunction(calls) {
  const module = await bareEngine();
  const ctx = module.newContext();
  const stamps = [];
  const fn = ctx.newFunction("echo", (arg) => {
    stamps.push(performance.now());
    return ctx.newNumber(ctx.getNumber(arg));
  });
  ctx.setProp(ctx.global, "echo", fn);
  fn.dispose();
  ctx.unwrapResult(ctx.evalCode(`let s = 0; for (let i = 0; i < ${calls}; i++) s += echo(i); s`)).dispose();
  ctx.dispose();
  return summary(gaps(stamps, 500));
}

/**
 * 8 sandboxes at once, each awaiting `callsEach` host calls per round: calls/s of each round
 * (p50/p90/p99 over rounds, the slow side) and the embedder thread's CPU per call overall.
 */
async function throughput(api, sandboxes, callsEach, rounds) {
  const { createSandbox } = api;
  const { currentThreadClock } = await import(threadCpu);
  const clock = currentThreadClock();
  let calls = 0;
  const app = { echo: (i) => (calls++, i) };
  const list = await Promise.all(Array.from({ length: sandboxes }, () => createSandbox({ modules: { app }, limits: { cpuTimeMs: 120_000, wallTimeMs: 300_000 } })));
  const script = `import { echo } from "app"; export default async (n) => { for (let i = 0; i < n; i++) await echo(i); return n }`;
  // Warm every sandbox's worker first.
  await Promise.all(list.map((sandbox) => sandbox.run(script, { input: 200 }).then(check)));
  const rates = [];
  let allCalls = 0;
  const cpuStart = clock.nowNs();
  for (let round = 0; round < rounds; round++) {
    calls = 0;
    const start = performance.now();
    await Promise.all(list.map((sandbox) => sandbox.run(script, { input: callsEach }).then(check)));
    rates.push(calls / ((performance.now() - start) / 1000));
    allCalls += calls;
  }
  const cpuNs = clock.nowNs() - cpuStart;
  clock.close();
  await Promise.all(list.map((sandbox) => sandbox.dispose()));
  return { callsPerSecond: rateSpread(rates), embedderCpuPerCallMs: cpuNs / 1e6 / allCalls, cpuIsThreadTime: clock.isCpu, calls: allCalls, rounds };
}

function fiftyFunctions() {
  const module = { version: "1.0.0", nested: {} };
  for (let i = 0; i < 40; i++) module[`fn${i}`] = (x) => x;
  for (let i = 0; i < 10; i++) module.nested[`fn${i}`] = async (x) => x;
  return module;
}

async function createCost(api, samples) {
  const { createSandbox } = api;
  const app = fiftyFunctions();
  const plain = [];
  const withModule = [];
  const once = async (options, into) => {
    const start = performance.now();
    const sandbox = await createSandbox(options);
    check(await sandbox.run("export default () => 1 + 1"));
    into.push(performance.now() - start);
    await sandbox.dispose();
  };
  for (let i = 0; i < 30; i++) {
    await once({}, []);
    await once({ modules: { app } }, []);
  }
  // Alternating, so that both see the same machine.
  for (let i = 0; i < samples; i++) {
    await once({}, plain);
    await once({ modules: { app } }, withModule);
  }
  return { plain: summary(plain), withModule: summary(withModule), added: median(withModule) - median(plain) };
}

export async function benchHostModules({ quick = false } = {}) {
  const api = await import(distIndex);
  const calls = quick ? 3_000 : 10_000;
  const trips = await roundTrips(api, calls);
  const echo = await workerEcho(calls);
  const bare = await bareNewFunction(calls);
  // 40,000 calls in all (8,000 quick), in rounds: a rate per round.
  const flow = await throughput(api, 8, 1_000, quick ? 1 : 5);
  const create = await createCost(api, quick ? 100 : 400);
  return { calls, trips, echo, bare, flow, create };
}
