// The floor of "a fresh realm per run, on a worker thread" (issue 12, target 1): the bare
// engine on a worker thread, the embedder posting one run at a time and awaiting its answer,
// as a reused sandbox does. Two ways of giving each run a fresh runtime + context:
//   - build: newRuntime + newContext per run, freed after it (what our realm does, minus
//     the bridge, the guest core, limits and the activation);
//   - image: one runtime + context built once, the engine's memory captured right after,
//     and copied back before each run (the pre-initialisation technique Wizer brings to
//     QuickJS), so each run starts from the same bytes and nothing has to be freed.
// Used by bench/sandbox.mjs; docs/performance.md ("A memory image per run") says what
// using the technique in our realm would take.
//
// Each run evaluates a script that counts its runs in a global and must answer 2: a run
// that saw the previous run's global (an image that did not restore everything the engine
// reads) fails the bench instead of looking fast.
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

const SOURCE = "globalThis.runs = (globalThis.runs ?? 0) + 1; runs + 1";
const ROLE = "bare-worker-runs";
const PAGE = 4096;
/** A stretch of zeros at least this long after the data segment is the C stack's unused part. */
const STACK_GAP = 256 * 1024;

/** Per-run latencies (ms) of both modes, in blocks alternating between two workers. */
export async function bareWorkerRuns(samples, { warmup = 300, block = 100 } = {}) {
  const start = (mode) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { role: ROLE, mode }, execArgv: [] });
    const ready = new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    return { worker, ready };
  };
  const sides = { build: start("build"), image: start("image") };
  const images = await Promise.all(Object.values(sides).map((side) => side.ready));
  const ask = (worker) =>
    new Promise((resolve, reject) => {
      worker.once("message", (value) => (value === 2 ? resolve() : reject(new Error(`bare worker run answered ${value}, not 2: state leaked between runs`))));
      worker.postMessage(0);
    });
  const times = { build: [], image: [] };
  try {
    for (const mode of ["build", "image"]) for (let i = 0; i < warmup; i++) await ask(sides[mode].worker);
    for (let done = 0; done < samples; done += block) {
      for (const mode of ["build", "image"]) {
        for (let i = 0; i < block && done + i < samples; i++) {
          const t = performance.now();
          await ask(sides[mode].worker);
          times[mode].push(performance.now() - t);
        }
      }
    }
  } finally {
    await Promise.all(Object.values(sides).map((side) => side.worker.terminate()));
  }
  return { ...times, imageBytes: images[1].imageBytes };
}

/**
 * The spans of an engine's memory a fresh runtime + context depends on: the data segment
 * (and what follows it up to the C stack's unused part) and the heap up to its last
 * non-zero page. The stack between them is garbage whenever no call is in progress, and so
 * is everything past the heap's top; both are left alone. A heuristic good enough for a
 * bench (a real implementation reads the data end and the heap's top from the module).
 */
function imageSpans(bytes) {
  let top = bytes.length;
  while (top > 0 && bytes[top - 1] === 0) top--;
  const spans = [];
  let spanStart = 0;
  let zerosFrom = -1;
  for (let page = 0; page * PAGE < top; page++) {
    let zero = true;
    for (let i = page * PAGE; i < (page + 1) * PAGE; i++) if (bytes[i] !== 0) { zero = false; break; }
    if (zero) {
      if (zerosFrom < 0) zerosFrom = page * PAGE;
    } else {
      if (zerosFrom >= 0 && page * PAGE - zerosFrom >= STACK_GAP) {
        // Keep one zero page past the data (zero-initialised statics), cut the rest.
        spans.push([spanStart, zerosFrom + PAGE]);
        spanStart = page * PAGE;
      }
      zerosFrom = -1;
    }
  }
  spans.push([spanStart, Math.min(bytes.length, Math.ceil(top / PAGE) * PAGE + PAGE)]);
  return spans;
}

async function serve(mode) {
  const { bareEngine } = await import("./bare-quickjs.mjs");
  const engine = await bareEngine();
  const runIn = (context) => {
    const result = context.unwrapResult(context.evalCode(SOURCE, "run.js"));
    const value = context.getNumber(result);
    result.dispose();
    return value;
  };
  if (mode === "build") {
    parentPort.on("message", () => {
      const runtime = engine.newRuntime();
      const context = runtime.newContext();
      const value = runIn(context);
      context.dispose();
      runtime.dispose();
      parentPort.postMessage(value);
    });
    parentPort.postMessage({ imageBytes: 0 });
    return;
  }
  const memory = engine.getWasmMemory();
  // Kept for the worker's life: the image is its state right after these were made.
  const runtime = engine.newRuntime();
  const context = runtime.newContext();
  const captured = new Uint8Array(memory.buffer);
  const spans = imageSpans(captured);
  const images = spans.map(([from, to]) => captured.slice(from, to));
  parentPort.on("message", () => {
    const bytes = new Uint8Array(memory.buffer); // a new view: the run may have grown the memory
    for (let i = 0; i < spans.length; i++) bytes.set(images[i], spans[i][0]);
    // Every handle the run makes is disposed before the next restore, so the library's
    // bookkeeping matches the restored memory again.
    parentPort.postMessage(runIn(context));
  });
  parentPort.postMessage({ imageBytes: images.reduce((sum, image) => sum + image.byteLength, 0) });
  void runtime;
}

if (!isMainThread && workerData?.role === ROLE) await serve(workerData.mode);
