// The child of test/tenancy/warm-pool-rss.test.ts, in a fresh process started with
// --expose-gc. Prints one JSON line: RSS (after a full GC) before a burst of 40 sandboxes
// that each touch a few MiB of their engine's memory, right after it, and after each
// 2 s of the light load that follows (3 at a time: create, run, dispose), 10 s in all.
//   node --expose-gc test/tenancy/burst-rss-child.mjs
const { createSandbox, warmPool } = await import(new URL("../../dist/src/index.js", import.meta.url).href);

const HEAVY = `export default () => { const a = []; for (let i = 0; i < 60000; i++) a.push({ i, s: "x" + i }); return a.length }`;
const LIGHT = `export default async () => { await new Promise((r) => setTimeout(r, 5)); return 1 }`;

function rssAfterGc() {
  globalThis.gc();
  return process.memoryUsage().rss;
}

await warmPool();
const before = rssAfterGc();
const sandboxes = await Promise.all(Array.from({ length: 40 }, () => createSandbox()));
const heavy = await Promise.all(sandboxes.map((sandbox) => sandbox.run(HEAVY)));
if (!heavy.every((result) => result.ok)) throw new Error(`a heavy run failed: ${JSON.stringify(heavy.find((result) => !result.ok))}`);
await Promise.all(sandboxes.map((sandbox) => sandbox.dispose()));
await new Promise((resolve) => setTimeout(resolve, 200));
const afterBurst = rssAfterGc();
const during = [];
const end = Date.now() + 10_000;
let nextSample = Date.now() + 2_000;
await Promise.all(
  Array.from({ length: 3 }, async () => {
    while (Date.now() < end) {
      const sandbox = await createSandbox();
      const result = await sandbox.run(LIGHT);
      if (!result.ok) throw new Error(`a light run failed: ${JSON.stringify(result)}`);
      await sandbox.dispose();
      if (Date.now() >= nextSample) {
        nextSample += 2_000;
        during.push(rssAfterGc());
      }
    }
  }),
);
console.log(JSON.stringify({ before, afterBurst, during }));
process.exit(0);
