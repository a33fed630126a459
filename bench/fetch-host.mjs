// Host-side fetch baselines for the guest-vs-host fetch benchmark (issue 3): undici's own
// `fetch` called in the host, and the sandbox transport (host/fetch/transport.ts) called
// directly, without a guest. The lead's guest benchmark runs beside these against the same
// server in the same run.
//
// The server runs in a child process by default (issue 12): on a 2-core machine a server
// that shares the client's process also shares its heap, GC and allocator, which flattered
// the 8 MiB figure (the client's copies and the server's writes were timed together).
// `startBenchServer({ where: "thread" })` keeps the older worker-thread server for the
// same-process figure reported beside it. Uses the built host (`npm run build` first; npm
// run bench does); SCRIPTBOX_DIST=<dir> points at another build.
// Standalone: node bench/fetch-host.mjs [requests]
import { fork } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

const SERVER_ROLE = "scriptbox-fetch-bench-server";
const LARGE_BYTES = 8 * 1024 * 1024;
/** Unmeasured requests before each measured series, on every side (JIT and connection warm-up). */
export const WARM_UP_REQUESTS = 200;

if (!isMainThread && workerData?.role === SERVER_ROLE) await serve(parentPort);
else if (process.env.SCRIPTBOX_BENCH_SERVER === SERVER_ROLE && process.send) await serve(process);

/**
 * Server side (a worker thread or a child process; `port` is its message channel):
 * GET /small answers a short JSON body, GET /large 8 MiB of bytes.
 */
async function serve(port) {
  const http = await import("node:http");
  const small = Buffer.from(JSON.stringify({ id: "team_0", object: "team", name: "Bench", ok: true }));
  const large = Buffer.alloc(LARGE_BYTES, 0x5a);
  const server = http.createServer((req, res) => {
    const body = req.url === "/large" ? large : small;
    res.writeHead(200, { "content-type": req.url === "/large" ? "application/octet-stream" : "application/json", "content-length": body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () => {
    server.closeAllConnections();
    server.close(() => {
      port.postMessage ? port.postMessage("closed") : port.send("closed");
      if (port === process) process.disconnect();
    });
  };
  port.on("message", (message) => message === "close" && close());
  // A child whose parent died stops too (its IPC channel closes).
  if (port === process) process.on("disconnect", () => server.close(() => process.exit(0)));
  const ready = { origin: `http://127.0.0.1:${server.address().port}` };
  port.postMessage ? port.postMessage(ready) : port.send(ready);
}

/**
 * Starts the bench server: { origin, smallUrl, largeUrl, where, close() }. `where`:
 * "process" (default) a child process, "thread" a worker thread of this process.
 */
export async function startBenchServer({ where = "process" } = {}) {
  const script = fileURLToPath(import.meta.url);
  const child =
    where === "thread"
      ? new Worker(script, { workerData: { role: SERVER_ROLE } })
      : fork(script, [], { execArgv: [], env: { ...process.env, SCRIPTBOX_BENCH_SERVER: SERVER_ROLE }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const send = (message) => (where === "thread" ? child.postMessage(message) : child.send(message));
  const { origin } = await new Promise((resolve, reject) => {
    child.once("message", resolve);
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`bench server exited (${code}) before it listened`)));
  });
  return {
    origin,
    where,
    smallUrl: `${origin}/small`,
    largeUrl: `${origin}/large`,
    async close() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      send("close");
      await new Promise((resolve) => child.once("message", resolve));
      if (where === "thread") await child.terminate();
      else await exited;
    },
  };
}

function rate(n, ms) {
  return { requests: n, ms, requestsPerSecond: (n * 1000) / ms };
}

/** `n` sequential GETs with undici's fetch, each body read with arrayBuffer(). */
export async function benchHostFetchBaseline(url, n) {
  const { fetch } = await import("undici");
  for (let i = 0; i < Math.min(WARM_UP_REQUESTS, n); i++) await (await fetch(url)).arrayBuffer(); // warm-up
  const start = performance.now();
  for (let i = 0; i < n; i++) await (await fetch(url)).arrayBuffer();
  return rate(n, performance.now() - start);
}

/** `runs` sequential reads of a large body with undici's fetch + arrayBuffer(): MB/s. */
export async function benchHostFetchBody(url, runs = 5) {
  const { fetch } = await import("undici");
  await (await fetch(url)).arrayBuffer();
  let bytes = 0;
  const start = performance.now();
  for (let i = 0; i < runs; i++) bytes += (await (await fetch(url)).arrayBuffer()).byteLength;
  const ms = performance.now() - start;
  return { bytes, ms, megabytesPerSecond: bytes / 1e6 / (ms / 1000) };
}

async function transportFor(url, limits = {}) {
  const dist = process.env.SCRIPTBOX_DIST ? pathToFileURL(`${process.env.SCRIPTBOX_DIST}/`) : new URL("../dist/", import.meta.url);
  const { SandboxFetchTransport } = await import(new URL("host/fetch/transport.js", dist).href);
  const { host } = new URL(url);
  return new SandboxFetchTransport({ allow: [host], limits: { maxFetches: Infinity, maxResponseBytes: 64 * 1024 * 1024, ...limits } });
}

const record = (url) => ({ url, method: "GET", headers: [], redirect: "follow", body: null });

/** `n` sequential GETs through the sandbox transport alone (no guest, no bridge). */
export async function benchTransport(url, n) {
  const transport = await transportFor(url);
  for (let i = 0; i < Math.min(WARM_UP_REQUESTS, n); i++) await transport.fetch(record(url));
  const start = performance.now();
  for (let i = 0; i < n; i++) await transport.fetch(record(url));
  return rate(n, performance.now() - start);
}

/** `runs` sequential reads of a large body through the sandbox transport alone: MB/s. */
export async function benchTransportBody(url, runs = 5) {
  const transport = await transportFor(url);
  await transport.fetch(record(url));
  let bytes = 0;
  const start = performance.now();
  for (let i = 0; i < runs; i++) bytes += (await transport.fetch(record(url))).body.byteLength;
  const ms = performance.now() - start;
  return { bytes, ms, megabytesPerSecond: bytes / 1e6 / (ms / 1000) };
}

if (isMainThread && !process.env.SCRIPTBOX_BENCH_SERVER && process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = Number(process.argv[2] ?? 2000);
  const server = await startBenchServer();
  try {
    const host = await benchHostFetchBaseline(server.smallUrl, n);
    const transport = await benchTransport(server.smallUrl, n);
    const hostBody = await benchHostFetchBody(server.largeUrl);
    const transportBody = await benchTransportBody(server.largeUrl);
    const fmt = (x) => x.toFixed(0);
    console.log(`${n} sequential small GETs`);
    console.log(`  undici.fetch (host)      ${fmt(host.requestsPerSecond)} req/s`);
    console.log(`  SandboxFetchTransport    ${fmt(transport.requestsPerSecond)} req/s (${(transport.requestsPerSecond / host.requestsPerSecond).toFixed(2)}x)`);
    console.log(`8 MiB body`);
    console.log(`  undici.fetch (host)      ${fmt(hostBody.megabytesPerSecond)} MB/s`);
    console.log(`  SandboxFetchTransport    ${fmt(transportBody.megabytesPerSecond)} MB/s (${(transportBody.megabytesPerSecond / hostBody.megabytesPerSecond).toFixed(2)}x)`);
  } finally {
    await server.close();
  }
}
