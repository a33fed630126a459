// One sample of "what `import "scriptbox"` adds to the embedder's resident memory", in a
// fresh process (spawned by bench/realm.mjs with --expose-gc). Prints one JSON line.
//   node --expose-gc bench/import-child.mjs <ours|bare>
// bare: the engine library alone (what an embedder of bare quickjs-emscripten imports).
import { setTimeout as sleep } from "node:timers/promises";

async function settledRss() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await sleep(50);
  }
  return process.memoryUsage().rss;
}

const which = process.argv[2] ?? "ours";
// Node's ESM loader costs ~2 MiB on the first dynamic import: pay it before the baseline.
await import("node:os");
await import(new URL("./stats.mjs", import.meta.url).href);
const before = await settledRss();
if (which === "ours") {
  await import(new URL("../dist/src/index.js", import.meta.url).href);
} else {
  await import("quickjs-emscripten-core");
  await import("@jitl/quickjs-wasmfile-release-sync");
}
const after = await settledRss();
process.stdout.write(`${JSON.stringify({ rssDelta: after - before })}\n`);
