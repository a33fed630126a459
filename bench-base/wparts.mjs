import { Worker } from "node:worker_threads";
const D = "/work/wt-perf-lifecycle/dist/host";
const code = `
const { parentPort } = require("node:worker_threads");
(async () => {
const T = [performance.now()];
const wb = await import("${D}/engine/wasm-binary.js"); T.push(performance.now());
const m = wb.compiledEngineModule("release"); T.push(performance.now());
const wh = await import("${D}/worker/worker-host.js"); T.push(performance.now());
const inst = await import("${D}/engine/instance.js");
const e = await inst.createEngineInstance(32*1024*1024); T.push(performance.now());
const e2 = await inst.createEngineInstance(32*1024*1024); T.push(performance.now());
const u = await import("undici"); T.push(performance.now());
parentPort.postMessage(T.map((t,i)=> i? +(t-T[i-1]).toFixed(1):0).slice(1));
})();`;
const t0 = performance.now();
const w = new Worker(code, { eval: true });
const parts = await new Promise(r => w.once("message", r));
console.log("spawn+all", (performance.now()-t0).toFixed(1), "wasmbinary, compile, workerhost-graph, engine1, engine2, undici(after)", parts);
await w.terminate();
