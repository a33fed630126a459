// Fresh realm cost (issue 12, target 1) and the embedder's import cost (target 5), each
// beside a baseline measured in the same run. Used by bench/sandbox.mjs.
//
// Realm: built and freed in this process, on the worker's own code path (WorkerHost's
// engine and sandbox, Realm's constructor and dispose) without the worker thread, so the
// figure is the realm alone: runtime + context + bridge + guest core. Baseline: bare
// quickjs-emscripten's newRuntime + newContext (+ dispose) on one engine instance, in
// blocks alternating with ours.
//
// Import: RSS of a fresh process before and after `await import(<dist entry>)`, in child
// processes (bench/import-child.mjs); baseline: the same child importing only the engine
// library a bare embedder needs (quickjs-emscripten-core and its release variant).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { MessageChannel } from "node:worker_threads";
import { bareEngine } from "./bare-quickjs.mjs";

const dist = new URL("../dist/", import.meta.url);
const run = promisify(execFile);

async function workerSideSandbox() {
  const { WorkerHost } = await import(new URL("host/worker/worker-host.js", dist).href);
  const { WATCHDOG_BYTES } = await import(new URL("host/worker/guard.js", dist).href);
  const { ACTIVATION_SLOTS_BYTES } = await import(new URL("host/activation-slots.js", dist).href);
  const { DEFAULT_LIMITS } = await import(new URL("host/limits.js", dist).href);
  const { port1, port2 } = new MessageChannel();
  port1.on("message", () => {});
  port1.unref();
  const init = { watchdog: new SharedArrayBuffer(WATCHDOG_BYTES), activationSlots: new SharedArrayBuffer(ACTIVATION_SLOTS_BYTES), warmPool: { size: 0, burstExtraMax: 0 } };
  const host = new WorkerHost(init, port2);
  const sandbox = await host.newSandbox("release", DEFAULT_LIMITS.memoryBytes);
  sandbox.configure(1, { limits: { ...DEFAULT_LIMITS }, allow: [], env: {}, secrets: {}, cloud: null, location: null, streamLogs: false, variant: "release" });
  return { sandbox, port: port1 };
}

/**
 * Per-sample milliseconds of building a realm, and of building + freeing one, ours and bare;
 * and of a realm from the sandbox's memory image (what its runs get from the third on:
 * docs/architecture.md, "Realms from a memory image"): the image restored and the realm made
 * ("build"), + ended ("cycle").
 */
export async function realmCost(samples) {
  const { Realm } = await import(new URL("host/worker/realm.js", dist).href);
  const { sandbox, port } = await workerSideSandbox();
  const engine = await bareEngine();
  const ours = { build: [], cycle: [] };
  const bare = { build: [], cycle: [] };
  const image = { build: [], cycle: [] };
  const oursOnce = (series) => {
    const start = performance.now();
    const realm = new Realm(sandbox);
    const built = performance.now();
    realm.dispose();
    const freed = performance.now();
    series?.build.push(built - start);
    series?.cycle.push(freed - start);
  };
  const bareOnce = (series) => {
    const start = performance.now();
    const runtime = engine.newRuntime();
    const context = runtime.newContext();
    const built = performance.now();
    context.dispose();
    runtime.dispose();
    const freed = performance.now();
    series?.build.push(built - start);
    series?.cycle.push(freed - start);
  };
  // A second sandbox with an image, as a sandbox gets one after two runs and a turn of idle work.
  const { sandbox: imaged, port: imagedPort } = await workerSideSandbox();
  for (let i = 0; i < 2; i++) await imaged.run("export default () => 0", "warm.js", undefined);
  await new Promise((resolve) => setImmediate(resolve));
  imaged.prepareSpare();
  if (!imaged.image) throw new Error("bench: the sandbox did not capture a memory image");
  imaged.spare.disposeForRestore(); // the captured realm: ended as its run would end it
  imaged.spare = null;
  const imageOnce = (series) => {
    const start = performance.now();
    imaged.image.memory.restore(imaged.engine);
    const realm = new Realm(imaged, imaged.image);
    const built = performance.now();
    realm.disposeForRestore();
    const ended = performance.now();
    series?.build.push(built - start);
    series?.cycle.push(ended - start);
  };
  for (let i = 0; i < 50; i++) {
    oursOnce(null);
    bareOnce(null);
    imageOnce(null);
  }
  const BLOCK = 50;
  for (let done = 0; done < samples; done += BLOCK) {
    for (let i = 0; i < BLOCK; i++) oursOnce(ours);
    for (let i = 0; i < BLOCK; i++) bareOnce(bare);
    for (let i = 0; i < BLOCK; i++) imageOnce(image);
  }
  sandbox.dispose();
  imaged.dispose();
  port.close();
  imagedPort.close();
  return { ours, bare, image };
}

/** RSS added by importing the package, and by importing the bare engine library, in fresh child processes. */
export async function importCost(children) {
  const child = fileURLToPath(new URL("./import-child.mjs", import.meta.url));
  const ours = [];
  const bare = [];
  for (let i = 0; i < children; i++) {
    for (const which of i % 2 === 0 ? ["ours", "bare"] : ["bare", "ours"]) {
      const { stdout } = await run(process.execPath, ["--expose-gc", child, which], { timeout: 60_000 });
      const result = JSON.parse(stdout.trim().split("\n").at(-1));
      (which === "ours" ? ours : bare).push(result.rssDelta);
    }
  }
  return { ours, bare };
}
