// Benchmark of the cloud API emulator: requests per second for GET /api/v1/team with PAT
// auth at 32 concurrent connections, beside a bare fastify route in the same run (the
// ratio is what the emulator's work costs: auth, SQLite reads, serialization).
//
// The servers run in a worker thread and the load generator (undici) on the main
// thread, so on a 2-core machine each has a core instead of sharing one event loop.
// Uses the built emulator: `npm run build` first (npm run bench does).
// Standalone: node bench/emulator.mjs
import { fileURLToPath, pathToFileURL } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

const CONNECTIONS = 32;
const WARMUP_MS = 1000;
const MEASURE_MS = 5000;
const SERVER_ROLE = "scriptbox-emulator-bench-server";

if (!isMainThread && workerData?.role === SERVER_ROLE) await serve();

/** Worker side: the emulator (seeded, in memory) and a bare fastify route, on loopback. */
async function serve() {
  const { startEmulator } = await import(new URL("../dist/emulator/index.js", import.meta.url).href);
  const { default: Fastify } = await import("fastify");
  const emulator = await startEmulator({ host: "127.0.0.1", port: 0, seed: true });
  const bare = Fastify({ logger: false });
  bare.get("/bare", async () => ({ id: "team_0", object: "team", name: "Bare", email: "bare@example.com", created_at: 0, updated_at: 0 }));
  const bareUrl = await bare.listen({ host: "127.0.0.1", port: 0 });
  parentPort.on("message", async (message) => {
    if (message !== "close") return;
    await Promise.all([emulator.close(), bare.close()]);
    parentPort.postMessage("closed");
  });
  parentPort.postMessage({ emulatorUrl: emulator.baseUrl, pat: emulator.seed.CLOUD_PAT, bareUrl });
}

/** Keeps `CONNECTIONS` requests in flight for `ms`; returns completed requests and errors. */
async function load(origin, path, headers, ms) {
  const { Pool } = await import("undici");
  const pool = new Pool(origin, { connections: CONNECTIONS, pipelining: 1 });
  let done = 0;
  let errors = 0;
  const deadline = performance.now() + ms;
  const loop = async () => {
    while (performance.now() < deadline) {
      try {
        const { statusCode, body } = await pool.request({ path, method: "GET", headers });
        await body.dump();
        if (statusCode === 200) done++;
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return { rps: done / seconds, errors };
}

async function measure(origin, path, headers) {
  await load(origin, path, headers, WARMUP_MS);
  return load(origin, path, headers, MEASURE_MS);
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");

export async function benchEmulator() {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { role: SERVER_ROLE } });
  const ready = await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  try {
    const bare = await measure(ready.bareUrl, "/bare", {});
    const team = await measure(ready.emulatorUrl, "/api/v1/team", { authorization: `Bearer ${ready.pat}` });
    const seconds = MEASURE_MS / 1000;
    return [
      `emulator: GET /api/v1/team with PAT auth, ${CONNECTIONS} connections, ${seconds} s: ${fmt(team.rps)} req/s (${team.errors} errors)`,
      `emulator: bare fastify route, same run and settings: ${fmt(bare.rps)} req/s (${bare.errors} errors)`,
      `emulator: ratio ${(team.rps / bare.rps).toFixed(2)} of the bare route`,
    ];
  } finally {
    const closed = new Promise((resolve) => worker.once("message", resolve));
    worker.postMessage("close");
    await closed;
    await worker.terminate();
  }
}

if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const line of await benchEmulator()) console.log(line);
}
