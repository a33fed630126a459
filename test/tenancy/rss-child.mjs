// One case of test/tenancy/pool-rss.test.ts, in a fresh process started with --expose-gc
// (a process that has already run other tests gives meaningless RSS deltas). Prints one
// JSON line: the process RSS before the case and after it, each after a full GC.
//   node --expose-gc test/tenancy/rss-child.mjs <case> <share> <floor bytes>
// It waits (at most 15 s) for RSS to come within max(share × before, floor) of before.
import { setTimeout as sleep } from "node:timers/promises";

const { configurePool, createSandbox } = await import(new URL("../../dist/src/index.js", import.meta.url).href);

/** The hostile scripts, one per heavy kind of issue 10: output, echo, amplification, results. */
const CASES = {
  // 1 MiB of log per run (maxLogBytes), streamed to onLog, stopped by the CPU limit.
  "log flood": { source: `export default () => { for (;;) console.log("flood", "x".repeat(200)) }`, limits: { cpuTimeMs: 300 } },
  // A bridge call that reads a 1 MB argument and echoes it in an error, in a catch-all loop.
  "large echo messages": {
    source: `import { secret } from "runtime"; const big = "n".repeat(1 << 20); export default () => { for (;;) { try { secret(big) } catch {} } }`,
    limits: { cpuTimeMs: 300 },
  },
  // A result that shares one array 2^20 times: copied as a tree it would be ~1 GB.
  amplification: { source: `export default () => { let v = ["x".repeat(1000)]; for (let i = 0; i < 20; i++) v = [v, v]; return v }`, limits: { cpuTimeMs: 2_000 } },
  // A 24 MiB string result that crosses to the embedder (and is dropped there).
  "big results": { source: `export default () => "r".repeat(24 << 20)`, limits: { cpuTimeMs: 2_000, memoryBytes: 128 << 20 } },
};

async function rssAfterGc() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await sleep(50);
  }
  return process.memoryUsage().rss;
}

const [name, share, floor] = process.argv.slice(2);
const hostileCase = CASES[name];
if (!hostileCase) throw new Error(`unknown case ${name}`);
configurePool({ sharedWorkers: 2 });

/** One round: the hostile script in a fresh sandbox, beside ordinary runs in bystanders on the same workers. */
async function round() {
  const hostile = await createSandbox({ limits: hostileCase.limits, onLog: () => undefined });
  const bystanders = await Promise.all([0, 1, 2].map(() => createSandbox()));
  const [result] = await Promise.all([hostile.run(hostileCase.source), ...bystanders.map((sandbox, i) => sandbox.run(`export default (n) => n * 2`, { input: i }))]);
  await Promise.all([hostile, ...bystanders].map((sandbox) => sandbox.dispose()));
  return result.ok ? "ok" : result.error.kind;
}

// Warm-up: the same case twice, so that the workers, their warm pools, compiled code and
// the allocators are in the state the measured rounds leave them in.
for (let i = 0; i < 2; i++) await round();
await sleep(300); // the workers refill their warm pools and spare realms after a run
const before = await rssAfterGc();
const kinds = [];
for (let i = 0; i < 5; i++) kinds.push(await round());
// "Returns to": V8 gives heap pages back once a thread has been idle for a few seconds
// (its memory reducer), so the process gets up to 15 s, sampled every 500 ms.
let after = await rssAfterGc();
const bound = before + Math.max(Number(share) * before, Number(floor));
for (let waited = 0; after > bound && waited < 15_000; waited += 500) {
  await sleep(500);
  after = await rssAfterGc();
}
process.stdout.write(`${JSON.stringify({ name, before, after, kinds })}\n`);
process.exit(0);
