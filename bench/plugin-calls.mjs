// plugin.call round trips on a quiet and on a loaded machine (issue 12, target 3), each
// beside a worker postMessage echo measured in the same conditions.
//
//   no added load: as the machine is.
//   loaded: one CPU hog per core, each a child process spinning `for (;;) {}` (so the load
//     competes for cores like another program would, not for this process's event loop),
//     started before and killed after the measurement.
//
// A third figure is the floor of any call between two threads: an Atomics.wait/notify
// ping-pong in which this thread blocks (no event loop on either side; an embedder's
// thread cannot do this, it must keep serving its event loop, so plugin.call and the echo
// wake through libuv instead). Under the hogs it shows what the kernel's wake-ups cost
// without any of the event loop's.
//
// Ours, the echo and the floor are measured in alternating blocks so that a noisy stretch hits all.
// The load average (1 min) is printed beside each figure: the hogs take a minute to show
// fully in it, so it reads low for the loaded rows.
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { spread } from "./stats.mjs";

const distIndex = new URL("../dist/src/index.js", import.meta.url).href;
const PLUGIN = "let calls = 0; export function onEvent(n) { calls++; return n + 1; }";
const BLOCK = 250;

/** Runs `body` while `count` child processes spin on the CPU; kills them however it ends. */
async function withCpuHogs(count, body) {
  const hogs = Array.from({ length: count }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  const kill = () => hogs.forEach((hog) => hog.kill("SIGKILL"));
  process.once("exit", kill);
  try {
    await sleep(300); // started and spinning
    return await body();
  } finally {
    kill();
    process.off("exit", kill);
    await sleep(300); // gone before the next measurement
  }
}

async function measure(createSandbox, samples) {
  const sandbox = await createSandbox();
  const plugin = await sandbox.load(PLUGIN, { filename: "plugin.js" });
  const worker = new Worker("const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m));", { eval: true });
  const echo = (i) =>
    new Promise((resolve) => {
      worker.once("message", resolve);
      worker.postMessage([i, 1, 0, 1, "onEvent", [i], 1]); // a plugin call's short form (host/protocol.ts: CallMessage)
    });
  const call = async (i) => {
    if ((await plugin.call("onEvent", i)) !== i + 1) throw new Error("plugin.call returned a wrong value");
  };
  const words = new Int32Array(new SharedArrayBuffer(8));
  const ponger = new Worker(
    `const { workerData } = require("node:worker_threads"); const w = new Int32Array(workerData);
     for (;;) { Atomics.wait(w, 0, 0); Atomics.store(w, 0, 0); Atomics.store(w, 1, 1); Atomics.notify(w, 1) }`,
    { eval: true, workerData: words.buffer },
  );
  const ping = async () => {
    Atomics.store(words, 1, 0);
    Atomics.store(words, 0, 1);
    Atomics.notify(words, 0);
    Atomics.wait(words, 1, 0, 1000);
  };
  const ours = [];
  const base = [];
  const floor = [];
  try {
    for (let i = 0; i < 200; i++) {
      await call(i);
      await echo(i);
      await ping();
    }
    const load = loadavg()[0];
    for (let done = 0; done < samples; done += BLOCK) {
      for (const [op, into] of [[call, ours], [echo, base], [ping, floor]]) {
        for (let i = 0; i < BLOCK; i++) {
          const start = performance.now();
          await op(i);
          into.push(performance.now() - start);
        }
      }
    }
    return { ours: spread(ours), echo: spread(base), floor: spread(floor), load: Math.max(load, loadavg()[0]) };
  } finally {
    await worker.terminate();
    await ponger.terminate();
    await sandbox.dispose();
  }
}

export async function benchPluginCalls({ quick = false } = {}) {
  const { createSandbox } = await import(distIndex);
  const samples = quick ? 2_000 : 10_000;
  const cores = availableParallelism();
  // Start the shared workers first (a fixed cost of the process).
  const first = await createSandbox();
  await first.run("export default () => 1");
  await first.dispose();
  const quiet = await measure(createSandbox, samples);
  const loaded = await withCpuHogs(cores, () => measure(createSandbox, samples));
  return { quiet, loaded, hogs: cores };
}
