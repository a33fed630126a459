// Issue 14 §5, with real processes and a real redis-server: a worker killed with SIGKILL
// mid-job (another worker takes the job over and it completes exactly once as job.result()
// sees it); SIGTERM drains within --grace and exits 0; Redis restarting under a running
// worker loses no job.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createScriptQueue, type ScriptQueue } from "../../dist/src/queue.js";
import { until, WorkerProcess } from "./cli-process.js";
import { redisMissing, startRedis, type RedisServer } from "./redis-server.js";

const SLOW_JOB = "export default async (n) => { await new Promise((r) => setTimeout(r, 1500)); return n * 2; };";
let redis: RedisServer;
let dir: string;
const workers: WorkerProcess[] = [];
const queues: ScriptQueue[] = [];
let counter = 0;

function worker(queueName: string, ...extra: string[]): WorkerProcess {
  const w = new WorkerProcess(["--redis", redis.url, "--queue", queueName, "--lock-duration", "1000", ...extra], { cwd: dir });
  workers.push(w);
  return w;
}

function queue(): ScriptQueue {
  const q = createScriptQueue({ connection: redis.url, name: `fail-${process.pid}-${++counter}` });
  queues.push(q);
  return q;
}

describe.skipIf(redisMissing())("queue failure semantics with real processes", () => {
  beforeAll(async () => {
    redis = await startRedis({ persistent: true });
    dir = mkdtempSync(join(tmpdir(), "scriptbox-queue-fail-"));
    writeFileSync(join(dir, "slow.js"), SLOW_JOB);
  });

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      w.kill("SIGKILL");
      await w.exited;
    }
    for (const q of queues.splice(0)) await q.close();
  });

  afterAll(async () => {
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a worker killed with SIGKILL mid-job: another worker takes the job over, and it completes exactly once", async () => {
    const q = queue();
    const first = await worker(q.name).ready();
    const job = await q.submit(SLOW_JOB, { input: 21 });
    await until(async () => (await job.state()) === "active", 10_000, "the job to start");
    first.kill("SIGKILL");
    expect(await first.exited).toBe(null); // killed by the signal, not exited
    const second = await worker(q.name).ready();
    const result = await job.result();
    expect(result).toMatchObject({ ok: true, value: 42 });
    expect(first.jobLines()).toEqual([]);
    await second.waitFor(() => second.jobLines(job.id).length > 0, 5_000, "the job line");
    expect(second.jobLines(job.id)).toHaveLength(1);
    expect(second.jobLines(job.id)[0]).toMatch(new RegExp(`^job ${job.id} script\\.js ok \\d+ms$`));
    expect(await q.stats()).toMatchObject({ completed: 1, failed: 0, active: 0, waiting: 0 });
  });

  it("SIGTERM drains: the running job finishes within --grace, no new job is taken, exit 0", async () => {
    const q = queue();
    const w = await worker(q.name, "--concurrency", "1", "--grace", "10000").ready();
    const running = await q.submit(SLOW_JOB, { input: 1 });
    await until(async () => (await running.state()) === "active", 10_000, "the job to start");
    const queued = await q.submit(SLOW_JOB, { input: 2 });
    w.kill("SIGTERM");
    expect(await w.exited).toBe(0);
    expect(await running.result()).toMatchObject({ ok: true, value: 2 });
    expect(await queued.state()).toBe("waiting");
    expect(w.jobLines()).toHaveLength(1);
    expect(w.stderr).toMatch(/SIGTERM: draining \(1 running\)/);
  });

  it("SIGTERM with a grace period too short: exit 1 without waiting for the job, which runs again on another worker", async () => {
    // The job takes far longer than the grace period: the worker must leave without it
    // (bullmq's forced close used to wait for it anyway) and the job completes elsewhere.
    const q = queue();
    const w = await worker(q.name, "--grace", "100").ready();
    const job = await q.submit("export default async (n) => { await new Promise((r) => setTimeout(r, 6000)); return n * 2; };", { input: 5 });
    await until(async () => (await job.state()) === "active", 10_000, "the job to start");
    w.kill("SIGTERM");
    expect(await w.exited).toBe(1);
    expect(w.stderr).toMatch(/grace period over/);
    expect(w.jobLines(job.id).filter((line) => / ok /.test(line))).toEqual([]);
    const second = await worker(q.name).ready();
    expect(await job.result()).toMatchObject({ ok: true, value: 10 });
    await second.waitFor(() => second.jobLines(job.id).length > 0, 5_000, "the job line");
    expect(second.jobLines(job.id)).toEqual([expect.stringMatching(new RegExp(`^job ${job.id} script\\.js ok \\d+ms$`))]);
  });

  it("Redis restarting under a running worker: the worker reconnects and no job is lost", async () => {
    const q = queue();
    const w = await worker(q.name, "--concurrency", "2").ready();
    const quick = "export default async (n) => { await new Promise((r) => setTimeout(r, 200)); return n; };";
    const before = await Promise.all(Array.from({ length: 10 }, (_, i) => q.submit(quick, { input: i })));
    await new Promise((r) => setTimeout(r, 300));
    await redis.restart(1_000);
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => q.submit(quick, { input: 10 + i })));
    const results = await Promise.all([...before, ...after].map((job) => job.result()));
    expect(results.map((r) => (r.ok ? r.value : r.error.message))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect((await q.stats()).completed).toBe(20);
    // The worker that lived through the restart ran the jobs submitted after it.
    await w.waitFor(() => after.every((job) => w.jobLines(job.id).length > 0), 5_000, "the job lines");
  });
});
