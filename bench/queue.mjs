// Queue bench (issue 14): 2,000 tiny jobs through BullMQ on a real redis-server (another
// process) with one and with two `scriptbox worker` processes, submit → result latency
// with an idle queue, and Redis commands per job (INFO commandstats over 1,000 jobs, a
// count: no distribution); rates also per window of 200 jobs (p50/p90/p99, slow side);
// beside an in-process sandbox.run loop of the same script as the baseline.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { rateSpread, spread } from "./stats.mjs";

const CLI = fileURLToPath(new URL("../dist/src/cli.js", import.meta.url));
const SCRIPT = "export default (n) => n + 1";

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function redisCli(port, ...args) {
  const out = spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`redis-cli ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

async function startRedis() {
  if (spawnSync("sh", ["-c", "command -v redis-server"]).status !== 0) throw new Error("redis-server is not installed (apt-get install -y redis-server)");
  const dir = mkdtempSync(join(tmpdir(), "scriptbox-bench-redis-"));
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--loglevel", "warning"], { stdio: "ignore" });
  for (let i = 0; i < 200; i++) {
    if (spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" }).stdout.trim() === "PONG") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop() {
      spawnSync("redis-cli", ["-p", String(port), "shutdown", "nosave"]);
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function startWorker(url, queue, concurrency) {
  const child = spawn(process.execPath, [CLI, "worker", "--redis", url, "--queue", queue, "--concurrency", String(concurrency)], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
  const ready = new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (stderr.includes("taking jobs")) {
        clearInterval(timer);
        resolve();
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`worker exited: ${stderr}`));
      }
    }, 20);
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  return { ready, stop: async () => (child.kill("SIGTERM"), exited) };
}

const WINDOW = 200;

/**
 * Submits `n` jobs in windows of WINDOW in flight, waits for every result: jobs per second
 * overall, and per window (p50/p90/p99 over the windows, the slow side).
 */
async function throughput(queue, n) {
  const started = performance.now();
  const pending = [];
  const windowRates = [];
  let windowStart = started;
  for (let i = 0; i < n; i++) {
    pending.push(queue.submit(SCRIPT, { input: i }).then((job) => job.result()));
    if (pending.length % WINDOW === 0 || i === n - 1) {
      const size = pending.length % WINDOW || WINDOW;
      await Promise.all(pending.slice(-size));
      const now = performance.now();
      windowRates.push(size / ((now - windowStart) / 1000));
      windowStart = now;
    }
  }
  const results = await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  const bad = results.filter((r, i) => !r.ok || r.value !== i + 1).length;
  if (bad > 0) throw new Error(`${bad} of ${n} jobs came back wrong`);
  return { rate: n / seconds, windows: rateSpread(windowRates) };
}

function parseCommandStats(text) {
  const calls = {};
  for (const line of text.split("\n")) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match) calls[match[1]] = Number(match[2]);
  }
  return calls;
}

function redisCpuSeconds(port) {
  const info = redisCli(port, "info", "cpu");
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? NaN);
  return field("used_cpu_sys") + field("used_cpu_user");
}

export async function benchQueue({ quick = false } = {}) {
  const jobs = quick ? 400 : 2_000; // whole windows of WINDOW
  const latencySamples = quick ? 50 : 300;
  const statJobs = quick ? 200 : 1_000;
  const { createScriptQueue } = await import("../dist/src/queue.js");
  const { createSandbox } = await import("../dist/src/index.js");
  const redis = await startRedis();
  const concurrency = 8;
  const out = { jobs, latencySamples, statJobs, concurrency };
  try {
    // Baseline: the same script in this process, one sandbox, run after run.
    const sandbox = await createSandbox();
    for (let i = 0; i < 50; i++) await sandbox.run(SCRIPT, { input: i });
    const baseTimes = [];
    // Runs per second per window of WINDOW runs, as the queue's windows.
    const baseWindows = [];
    const baseStart = performance.now();
    let windowStart = baseStart;
    for (let i = 0; i < jobs; i++) {
      const t = performance.now();
      const r = await sandbox.run(SCRIPT, { input: i });
      baseTimes.push(performance.now() - t);
      if (!r.ok || r.value !== i + 1) throw new Error("baseline run failed");
      if ((i + 1) % WINDOW === 0 || i === jobs - 1) {
        const now = performance.now();
        baseWindows.push(((i % WINDOW) + 1) / ((now - windowStart) / 1000));
        windowStart = now;
      }
    }
    out.baselineRate = jobs / ((performance.now() - baseStart) / 1000);
    out.baselineWindows = rateSpread(baseWindows);
    out.baselineLatency = spread(baseTimes);
    await sandbox.dispose();

    for (const processes of [1, 2]) {
      const name = `bench-${processes}`;
      const workers = Array.from({ length: processes }, () => startWorker(redis.url, name, concurrency));
      await Promise.all(workers.map((w) => w.ready));
      const queue = createScriptQueue({ connection: redis.url, name });
      await throughput(queue, 100); // warm-up: connections, the workers' first jobs
      const measured = await throughput(queue, jobs);
      out[`rate${processes}`] = measured.rate;
      out[`windows${processes}`] = measured.windows;

      if (processes === 1) {
        // Latency with an idle queue: one job at a time.
        const times = [];
        for (let i = 0; i < latencySamples + 20; i++) {
          const t = performance.now();
          const job = await queue.submit(SCRIPT, { input: i });
          const r = await job.result();
          if (i >= 20) times.push(performance.now() - t);
          if (!r.ok) throw new Error("latency job failed");
        }
        out.latency = spread(times);

        // Redis commands per job, submit + run + result() included.
        redisCli(redis.port, "config", "resetstat");
        const cpuBefore = redisCpuSeconds(redis.port);
        await throughput(queue, statJobs);
        // Redis's own CPU per job: what bounds one (single-threaded) Redis instance.
        out.redisCpuMsPerJob = ((redisCpuSeconds(redis.port) - cpuBefore) * 1000) / statJobs;
        const calls = parseCommandStats(redisCli(redis.port, "info", "commandstats"));
        delete calls.info;
        delete calls.config;
        const total = Object.values(calls).reduce((a, b) => a + b, 0);
        out.commandsPerJob = total / statJobs;
        out.topCommands = Object.entries(calls)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 6)
          .map(([cmd, n]) => `${cmd} ${(n / statJobs).toFixed(1)}`);
      }
      await queue.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  } finally {
    redis.stop();
  }
  return out;
}
