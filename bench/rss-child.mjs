// One sample of "resident memory per idle live sandbox with 100 alive", ours and bare, in a
// fresh process (spawned by bench/sandbox.mjs with --expose-gc): a process that has already
// allocated and freed a lot gives meaningless RSS deltas. Prints one JSON line.
//   node --expose-gc bench/rss-child.mjs <ours-first|bare-first> [count] [runs]
// `runs` (default 1): runs per sandbox of ours; from 3 on, each sandbox holds a memory image
// of its fresh realm (docs/architecture.md, "Realms from a memory image").
import { setTimeout as sleep } from "node:timers/promises";
import { bareCreateAndRun } from "./bare-quickjs.mjs";
import { collectGarbage } from "./stats.mjs";

const order = process.argv[2] ?? "ours-first";
const count = Number(process.argv[3] ?? 100);
const runs = Number(process.argv[4] ?? 1);
const SOURCE = "export default () => 1 + 1";
const { createSandbox } = await import(new URL("../dist/src/index.js", import.meta.url).href);

async function settledRss() {
  await sleep(300); // lets the workers finish refilling their warm pools and spare realms
  await collectGarbage();
  return process.memoryUsage().rss;
}

async function ours() {
  const before = await settledRss();
  const alive = [];
  for (let i = 0; i < count; i++) {
    const sandbox = await createSandbox();
    for (let run = 0; run < runs; run++) {
      const result = await sandbox.run(SOURCE);
      if (!result.ok) throw new Error(`run failed: ${result.error.message}`);
    }
    alive.push(sandbox);
  }
  const after = await settledRss();
  return { perSandbox: (after - before) / count, alive };
}

async function bare() {
  const before = await settledRss();
  const alive = [];
  for (let i = 0; i < count; i++) alive.push(await bareCreateAndRun(SOURCE));
  const after = await settledRss();
  return { perSandbox: (after - before) / count, alive };
}

// Start the shared workers (and their warm pools) before the baseline: they are a fixed
// cost of the process, not of each sandbox. Same for the bare engine's compiled module.
const warm = await Promise.all([createSandbox(), createSandbox()]);
for (const sandbox of warm) await sandbox.run(SOURCE);
for (const sandbox of warm) await sandbox.dispose();
(await bareCreateAndRun(SOURCE)).dispose();
await sleep(1000);

const results = {};
for (const which of order === "bare-first" ? ["bare", "ours"] : ["ours", "bare"]) {
  const { perSandbox, alive } = which === "ours" ? await ours() : await bare();
  results[which] = perSandbox;
  // Kept alive until the end on purpose: both measurements start from a process holding
  // the previous set, so neither profits from memory the other freed.
  globalThis[`__keep_${which}`] = alive;
}
process.stdout.write(`${JSON.stringify(results)}\n`);
process.exit(0);
