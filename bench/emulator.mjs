// Benchmark of the cloud API emulator: requests per second for GET /api/v1/team with PAT
// auth at 32 concurrent connections, beside a bare fastify route in the same run (the
// ratio is what the emulator's work costs: auth, SQLite reads, serialization), with the
// latency of each request (p50/p90/p99) and the rate of each second (p50/p90/p99, the
// slow side).
//
// The servers run in a child process, as in real use, and the load generator (undici) in
// this one: on a 2-core machine each has a core instead of sharing one event loop.
// Uses the built emulator: `npm run build` first (npm run bench does).
// Standalone: node bench/emulator.mjs
import { fork } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { formatMs, formatRate, formatSpread, rateSpread, spread } from "./stats.mjs";

const CONNECTIONS = 32;
const WARMUP_MS = 1000;
const MEASURE_MS = 5000;
const SERVER_ROLE = "--serve";

if (process.argv[2] === SERVER_ROLE) await serve();

/** Child side: the emulator (seeded, in memory) and a bare fastify route, on loopback. */
async function serve() {
  const { startEmulator } = await import(new URL("../dist/emulator/index.js", import.meta.url).href);
  const { default: Fastify } = await import("fastify");
  const emulator = await startEmulator({ host: "127.0.0.1", port: 0, seed: true });
  const bare = Fastify({ logger: false });
  bare.get("/bare", async () => ({ id: "team_0", object: "team", name: "Bare", email: "bare@example.com", created_at: 0, updated_at: 0 }));
  const bareUrl = await bare.listen({ host: "127.0.0.1", port: 0 });
  process.on("message", async (message) => {
    if (message !== "close") return;
    await Promise.all([emulator.close(), bare.close()]);
    process.exit(0);
  });
  // The parent going away ends this process too (no orphaned servers).
  process.on("disconnect", () => process.exit(0));
  process.send({ emulatorUrl: emulator.baseUrl, pat: emulator.seed.CLOUD_PAT, bareUrl });
}

/**
 * Keeps `CONNECTIONS` requests in flight on `pool` for `ms`: requests per second, errors,
 * each request's latency and each whole second's rate.
 */
async function load(pool, path, headers, ms) {
  let done = 0;
  let errors = 0;
  const latencies = [];
  const started = performance.now();
  const perSecond = new Array(Math.ceil(ms / 1000)).fill(0);
  const deadline = started + ms;
  const loop = async () => {
    while (performance.now() < deadline) {
      const start = performance.now();
      try {
        const { statusCode, body } = await pool.request({ path, method: "GET", headers });
        await body.dump();
        const end = performance.now();
        if (statusCode !== 200) {
          errors++;
          continue;
        }
        done++;
        latencies.push(end - start);
        const second = Math.floor((end - started) / 1000);
        if (second < perSecond.length) perSecond[second]++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  const seconds = (performance.now() - started) / 1000;
  return { rps: done / seconds, errors, latency: spread(latencies), perSecond: rateSpread(perSecond) };
}

/** A warm-up, then the measured load, on the same connections (the first second does not open them). */
async function measure(origin, path, headers) {
  const { Pool } = await import("undici");
  const pool = new Pool(origin, { connections: CONNECTIONS, pipelining: 1 });
  try {
    await load(pool, path, headers, WARMUP_MS);
    return await load(pool, path, headers, MEASURE_MS);
  } finally {
    await pool.close();
  }
}

/** Both routes, one after the other, against servers in a child process. */
export async function benchEmulator() {
  const child = fork(fileURLToPath(import.meta.url), [SERVER_ROLE], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  // A child that could not be spawned emits "error" and never "exit".
  const exited = new Promise((resolve) => {
    child.once("exit", resolve);
    child.once("error", resolve);
  });
  try {
    const ready = await new Promise((resolve, reject) => {
      child.once("message", resolve);
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the emulator bench server exited (code ${code})`)));
    });
    const bare = await measure(ready.bareUrl, "/bare", {});
    const team = await measure(ready.emulatorUrl, "/api/v1/team", { authorization: `Bearer ${ready.pat}` });
    return { connections: CONNECTIONS, seconds: MEASURE_MS / 1000, team, bare };
  } finally {
    if (child.connected) child.send("close");
    const timer = setTimeout(() => child.kill(), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Lines for the console: rates, per-second rates and latencies of both routes. */
export function emulatorLines(r) {
  const rates = (x) => `${formatSpread(x.perSecond, (v) => formatRate(v, "req/s"))} (n=${x.perSecond.n})`;
  return [
    `emulator: GET /api/v1/team with PAT auth, ${r.connections} connections, ${r.seconds} s: ${formatRate(r.team.rps, "req/s")} (${r.team.errors} errors); per second p50 / p90 / p99 ${rates(r.team)}; latency ${formatSpread(r.team.latency)} (n=${r.team.latency.n})`,
    `emulator: bare fastify route, same run and settings: ${formatRate(r.bare.rps, "req/s")} (${r.bare.errors} errors); per second ${rates(r.bare)}; latency ${formatSpread(r.bare.latency)}`,
    `emulator: ratio ${(r.team.rps / r.bare.rps).toFixed(2)} of the bare route; latency p50 ${formatMs(r.team.latency.p50)} against ${formatMs(r.bare.latency.p50)}`,
  ];
}

if (process.argv[2] !== SERVER_ROLE && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const line of emulatorLines(await benchEmulator())) console.log(line);
}
