// Issue 14 §1-3 and §6 against a real redis-server: scriptbox/queue's submit → worker →
// result round trip gives sandbox.run's RunResult; job options are clamped to the
// worker's; secrets travel by name only (every Redis key and value is scanned); scripts are
// bundled on the submitting side with their source map; script failures are not retried
// unless the job asks for attempts; cancel; retention defaults.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScriptQueue, DEFAULT_RETENTION, JobCancelledError, JobFailedError, startScriptWorker, type JobEvent, type ScriptQueue, type ScriptWorker, type ScriptWorkerOptions } from "../../dist/src/queue.js";
import { redisMissing, startRedis, type RedisServer } from "./redis-server.js";

const SECRET_VALUE = "tok-3c9f1e-never-in-redis";
let redis: RedisServer;
let server: Server;
let serverPort: number;
const received: IncomingHttpHeaders[] = [];
let queueCounter = 0;

const open: { close(): Promise<unknown> }[] = [];

async function setup(workerOptions: Omit<ScriptWorkerOptions, "connection" | "name" | "onJob"> = {}): Promise<{ queue: ScriptQueue; worker: ScriptWorker; events: JobEvent[] }> {
  const name = `lib-${process.pid}-${++queueCounter}`;
  const events: JobEvent[] = [];
  const worker = await startScriptWorker({ connection: redis.url, name, concurrency: 2, ...workerOptions, onJob: (e) => events.push(e) });
  const queue = createScriptQueue({ connection: redis.url, name });
  open.push({ close: () => worker.close({ graceMs: 5_000 }) }, queue);
  return { queue, worker, events };
}

describe.skipIf(redisMissing())("scriptbox/queue against a real Redis", () => {
  beforeAll(async () => {
    redis = await startRedis();
    server = createServer((req, res) => {
      received.push(req.headers);
      res.end("pong");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    serverPort = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const handle of open.reverse()) await handle.close().catch(() => undefined);
    await new Promise((resolve) => server?.close(resolve));
    await redis?.stop();
  });

  it("submit → result gives the RunResult sandbox.run gives: value, logs, stats", async () => {
    const { queue, events } = await setup();
    const job = await queue.submit('export default (n) => { console.log("got", n); return { next: n + 1, bytes: new Uint8Array([1, 2]) }; }', { input: 41 });
    expect(typeof job.id).toBe("string");
    const result = await job.result();
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toEqual({ next: 42, bytes: new Uint8Array([1, 2]) });
    expect(result.logs.map((l) => [l.level, l.message])).toEqual([["log", "got 41"]]);
    expect(Object.keys(result.stats).sort()).toEqual(["cpuTimeMs", "fetches", "memoryBytes", "queuedMs", "wallTimeMs"]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: job.id, outcome: "ok", attempt: 1 });
    expect(await job.state()).toBe("completed");
  });

  it("queue.job(id).result() from another handle, after the job finished, gives the same result", async () => {
    const { queue } = await setup();
    const job = await queue.submit("export default () => 'done'");
    const first = await job.result();
    const other = createScriptQueue({ connection: redis.url, name: queue.name });
    open.push(other);
    expect(await other.job(job.id).result()).toEqual(first);
    await expect(other.job("no-such-job").result()).rejects.toThrow(/no such job/);
  });

  it("a .ts file with relative imports is bundled at submit: the worker needs no files, and stacks point at the .ts lines", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scriptbox-queue-"));
    writeFileSync(join(dir, "job.ts"), 'import { check } from "./check.ts";\nexport default (n: number): number => check(n) + 1;\n');
    writeFileSync(join(dir, "check.ts"), 'interface Unused { a: string }\nexport function check(n: number): number {\n  if (n < 0) throw new RangeError("negative input");\n  return n;\n}\n');
    const queue = createScriptQueue({ connection: redis.url, name: `lib-bundle-${process.pid}` });
    open.push(queue);
    const good = await queue.submitFile(join(dir, "job.ts"), { input: 1 });
    const bad = await queue.submitFile(join(dir, "job.ts"), { input: -1 });
    rmSync(dir, { recursive: true }); // before any worker exists
    const worker = await startScriptWorker({ connection: redis.url, name: `lib-bundle-${process.pid}`, concurrency: 1 });
    open.push({ close: () => worker.close() });
    expect(await good.result()).toMatchObject({ ok: true, value: 2 });
    const failed = await bad.result();
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.error).toMatchObject({ kind: "script", name: "RangeError", message: "negative input" });
    expect(failed.error.stack).toMatch(/check\.ts:3:\d+/);
    expect(failed.error.stack).toMatch(/job\.ts:2:\d+/);
    // The map travels without the author's sources: positions are all a stack needs.
    const data = JSON.parse(redis.cli("hget", `scriptbox:lib-bundle-${process.pid}:${bad.id}`, "data").trim()) as { script: { map: string } };
    const map = JSON.parse(data.script.map) as Record<string, unknown>;
    expect(map).toMatchObject({ version: 3, sources: [expect.stringMatching(/check\.ts$/), expect.stringMatching(/job\.ts$/)] });
    expect(map).not.toHaveProperty("sourcesContent");
  });

  it("a TypeScript source string is transpiled at submit (filename .ts)", async () => {
    const { queue } = await setup();
    const job = await queue.submit("export default (n: number): number => n * 2;", { filename: "double.ts", input: 21 });
    expect(await job.result()).toMatchObject({ ok: true, value: 42 });
  });

  it("a syntax error is an error at submit, not a failed job", async () => {
    const { queue } = await setup();
    await expect(queue.submit("export default (", { filename: "broken.js" })).resolves.toBeDefined(); // plain JS is not parsed here…
    await expect(queue.submit("export default (: number", { filename: "broken.ts" })).rejects.toThrow(/broken\.ts:1/); // …TypeScript is
  });

  it("job limits are clamped to the worker's: a job cannot raise a limit", async () => {
    const { queue } = await setup({ sandbox: { limits: { wallTimeMs: 300 } } });
    const started = Date.now();
    const job = await queue.submit("await new Promise((r) => setTimeout(r, 5000)); export default 1;", { limits: { wallTimeMs: 60_000 } });
    const result = await job.result();
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.kind).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("a job can lower a limit below the worker's", async () => {
    const { queue } = await setup();
    const job = await queue.submit("await new Promise((r) => setTimeout(r, 5000)); export default 1;", { limits: { wallTimeMs: 100 } });
    const result = await job.result();
    expect(result.ok ? "ok" : result.error.kind).toBe("timeout");
  });

  it("net.allow: a job can narrow the worker's list to nothing, and cannot widen it", async () => {
    const { queue } = await setup({ sandbox: { net: { allow: [`127.0.0.1:${serverPort}`] } } });
    const script = `export default async () => (await fetch("http://127.0.0.1:${serverPort}/")).text();`;
    expect(await (await queue.submit(script)).result()).toMatchObject({ ok: true, value: "pong" });
    const narrowed = await (await queue.submit(script, { net: { allow: [] } })).result();
    expect(narrowed.ok ? "ok" : narrowed.error.kind).toBe("network-policy");
    const other = `export default async () => (await fetch("http://127.0.0.2:${serverPort}/")).text();`;
    const widened = await (await queue.submit(other, { net: { allow: [`127.0.0.2:${serverPort}`, "*"] } })).result();
    expect(widened.ok ? "ok" : widened.error.kind).toBe("network-policy");
  });

  it("env: job values are added to the worker's", async () => {
    const { queue } = await setup({ sandbox: { env: { REGION: "eu", TIER: "worker" } } });
    const job = await queue.submit('import { env } from "runtime"; export default () => [env.REGION, env.TIER];', { env: { TIER: "job" } });
    expect(await job.result()).toMatchObject({ ok: true, value: ["eu", "job"] });
  });

  it("secrets travel by name: the worker resolves them, and no Redis key or value ever holds the value", async () => {
    const origin = `http://127.0.0.1:${serverPort}`;
    const { queue } = await setup({ sandbox: { net: { allow: [`127.0.0.1:${serverPort}`] }, secrets: { API_TOKEN: { value: SECRET_VALUE, origins: [origin] } } } });
    received.length = 0;
    const script = `import { secret } from "runtime";
      export default async () => { console.log("token is", secret("API_TOKEN"));
        const r = await fetch("${origin}/x", { headers: { authorization: "Bearer " + secret("API_TOKEN") } }); return r.status; };`;
    const job = await queue.submit(script, { secrets: ["API_TOKEN"] });
    const result = await job.result();
    expect(result).toMatchObject({ ok: true, value: 200 });
    expect(received.at(-1)?.authorization).toBe(`Bearer ${SECRET_VALUE}`);
    // A failed job keeps its result in Redis too: fail one that names the secret.
    const failing = await queue.submit(`import { secret } from "runtime"; throw new Error("x" + secret("API_TOKEN"));`, { secrets: ["API_TOKEN"] });
    expect((await failing.result()).ok).toBe(false);

    const requireFromBullMQ = createRequire(createRequire(import.meta.url).resolve("bullmq"));
    const Redis = (requireFromBullMQ("ioredis") as typeof import("ioredis")).default;
    const client = new Redis(redis.port, "127.0.0.1");
    try {
      const keys = await client.keys("*");
      expect(keys.length).toBeGreaterThan(5);
      const dump: string[] = [];
      for (const key of keys) {
        dump.push(key);
        const type = await client.type(key);
        if (type === "string") dump.push(String(await client.get(key)));
        else if (type === "hash") dump.push(JSON.stringify(await client.hgetall(key)));
        else if (type === "list") dump.push(...(await client.lrange(key, 0, -1)));
        else if (type === "set") dump.push(...(await client.smembers(key)));
        else if (type === "zset") dump.push(...(await client.zrange(key, 0, -1)));
        else if (type === "stream") dump.push(JSON.stringify(await client.xrange(key, "-", "+")));
        else throw new Error(`unexpected key type ${type} for ${key}`);
      }
      const everything = dump.join("\n");
      expect(everything).toContain("API_TOKEN"); // the scan does see the job data…
      expect(everything).not.toContain(SECRET_VALUE); // …and the value is nowhere
      expect(everything).not.toContain(Buffer.from(SECRET_VALUE).toString("base64"));
    } finally {
      client.disconnect();
    }
  });

  it("a job naming a secret the worker lacks fails with a clear message, without a run", async () => {
    const { queue, events } = await setup();
    const job = await queue.submit("export default 1", { secrets: ["NOPE"] });
    await expect(job.result()).rejects.toThrow(JobFailedError);
    await expect(job.result()).rejects.toThrow(/secrets this worker does not have: NOPE/);
    expect(events.map((e) => e.outcome)).toEqual(["error"]);
  });

  it("a script that fails is not retried by default; with attempts it runs again", async () => {
    const { queue, events } = await setup();
    const once = await queue.submit('throw new TypeError("boom")');
    const result = await once.result();
    expect(result.ok ? "ok" : result.error).toMatchObject({ kind: "script", name: "TypeError", message: "boom" });
    expect(events.filter((e) => e.id === once.id)).toHaveLength(1);
    expect(await once.state()).toBe("failed");

    const thrice = await queue.submit('throw new TypeError("boom")', { attempts: 3, backoffMs: 10 });
    const last = await thrice.result();
    expect(last.ok).toBe(false);
    expect(events.filter((e) => e.id === thrice.id).map((e) => e.attempt)).toEqual([1, 2, 3]);
  });

  it("a huge error message is kept once, in the result: the failed reason, stack trace and event hold a summary", async () => {
    const { queue } = await setup();
    const job = await queue.submit('export default () => { throw new Error("x".repeat(2_000_000)); }');
    const result = await job.result();
    // The sandbox reports the message cut at 16 KiB (docs/limits.md); the result keeps that whole.
    expect(result.ok ? "" : result.error.message).toBe(`${"x".repeat(16 * 1024)}... ${2_000_000 - 16 * 1024} more characters`);
    const key = `scriptbox:${queue.name}:${job.id}`;
    const reason = redis.cli("hget", key, "failedReason");
    expect(reason).toMatch(/^script: Error: x{100}/);
    expect(reason.length).toBeLessThan(1_100);
    expect(redis.cli("hget", key, "stacktrace").length).toBeLessThan(10_000);
    expect(redis.cli("xrange", `scriptbox:${queue.name}:events`, "-", "+").length).toBeLessThan(100_000);
  });

  it("limit failures (cpu) are script failures: not retried", async () => {
    const { queue, events } = await setup({ sandbox: { limits: { cpuTimeMs: 50 } } });
    const job = await queue.submit("for (;;) {}");
    const result = await job.result();
    expect(result.ok ? "ok" : result.error.kind).toBe("cpu");
    expect(events.filter((e) => e.id === job.id)).toHaveLength(1);
  });

  it("cancel removes a job that has not started, and stops a running one", async () => {
    const { queue, events } = await setup();
    const delayed = await queue.submit("export default 1", { delay: 60_000 });
    expect(await delayed.state()).toBe("delayed");
    expect(await delayed.cancel()).toBe("removed");
    expect(await delayed.state()).toBe("unknown");

    const running = await queue.submit("await new Promise((r) => setTimeout(r, 20_000)); export default 1;");
    const deadline = Date.now() + 10_000;
    while ((await running.state()) !== "active" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await running.cancel()).toBe("signalled");
    await expect(running.result()).rejects.toThrow(JobCancelledError);
    expect(events.find((e) => e.id === running.id)?.outcome).toBe("cancelled");
    expect(await running.cancel()).toBe("finished");
  });

  it("a job cancelled before it started: result() rejects with JobCancelledError, for a waiter and later; its id can be used again", async () => {
    const { queue } = await setup();
    const delayed = await queue.submit("export default 1", { delay: 60_000, jobId: "cancel-me" });
    const waiting = delayed.result(); // waiting before the cancel: answered by the removed event
    expect(await delayed.cancel()).toBe("removed");
    await expect(waiting).rejects.toThrow(JobCancelledError);
    await expect(delayed.result()).rejects.toThrow(JobCancelledError);
    await expect(queue.job("never-submitted").result()).rejects.toThrow(/no such job/);
    const again = await queue.submit("export default () => 2", { jobId: "cancel-me" });
    expect(await again.result()).toMatchObject({ ok: true, value: 2 });
  });

  it("a retried job cancelled in its second run: result() says cancelled, not the first run's failure", async () => {
    let calls = 0;
    const flaky = createServer((_req, res) => {
      calls++;
      if (calls === 1) res.end("fail");
      else setTimeout(() => res.end("late"), 20_000).unref();
    });
    await new Promise<void>((resolve) => flaky.listen(0, "127.0.0.1", resolve));
    const port = (flaky.address() as AddressInfo).port;
    try {
      const { queue, events } = await setup({ sandbox: { net: { allow: [`127.0.0.1:${port}`] } } });
      const job = await queue.submit(`export default async () => { const t = await (await fetch("http://127.0.0.1:${port}/")).text(); if (t === "fail") throw new Error("first run failed"); return t; }`, { attempts: 3, backoffMs: 10 });
      const deadline = Date.now() + 10_000;
      while (calls < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(events.filter((e) => e.id === job.id).map((e) => e.outcome)).toEqual(["script"]);
      expect(await job.cancel()).toBe("signalled");
      await expect(job.result()).rejects.toThrow(JobCancelledError);
    } finally {
      flaky.closeAllConnections();
      await new Promise((resolve) => flaky.close(resolve));
    }
  });

  it("a cancel whose signal came before the worker took the job is not lost: the job does not run", async () => {
    // cancel() marks the job, then signals it; a worker that takes the job after the signal
    // went by (it had not tracked it yet, or was disconnected) finds the mark.
    const name = `lib-early-cancel-${process.pid}`;
    const queue = createScriptQueue({ connection: redis.url, name });
    open.push(queue);
    received.length = 0;
    const job = await queue.submit(`export default async () => (await fetch("http://127.0.0.1:${serverPort}/ran")).status`);
    redis.cli("set", `scriptbox:${name}:cancelled:${job.id}`, "1", "EX", "60");
    const events: JobEvent[] = [];
    const worker = await startScriptWorker({ connection: redis.url, name, concurrency: 1, sandbox: { net: { allow: [`127.0.0.1:${serverPort}`] } }, onJob: (e) => events.push(e) });
    open.push({ close: () => worker.close() });
    await expect(job.result()).rejects.toThrow(JobCancelledError);
    expect(events.map((e) => e.outcome)).toEqual(["cancelled"]);
    expect(received).toHaveLength(0);
  });

  it("close() with a grace period too short: returns after it, and the unfinished job stops running here", async () => {
    const name = `lib-close-${process.pid}`;
    const queue = createScriptQueue({ connection: redis.url, name });
    open.push(queue);
    const events: JobEvent[] = [];
    const worker = await startScriptWorker({ connection: redis.url, name, concurrency: 1, sandbox: { net: { allow: [`127.0.0.1:${serverPort}`] } }, onJob: (e) => events.push(e) });
    received.length = 0;
    const job = await queue.submit(`export default async () => { for (let i = 0; i < 100; i++) { await fetch("http://127.0.0.1:${serverPort}/tick"); await new Promise((r) => setTimeout(r, 50)); } return "done"; }`);
    const deadline = Date.now() + 10_000;
    while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await worker.close({ graceMs: 100 })).toEqual({ drained: false });
    const atClose = received.length;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(received.length - atClose).toBeLessThanOrEqual(1); // a fetch already in flight may land
    expect(await job.state()).toBe("active"); // locked until its lock expires, then taken over
    expect(events.map((e) => e.outcome)).not.toContain("ok");
  });

  it("priority: of two waiting jobs the one with the higher priority runs first", async () => {
    const name = `lib-prio-${process.pid}`;
    const queue = createScriptQueue({ connection: redis.url, name });
    open.push(queue);
    const low = await queue.submit("export default 'low'", { priority: 10 });
    const high = await queue.submit("export default 'high'", { priority: 1 });
    const order: string[] = [];
    const worker = await startScriptWorker({ connection: redis.url, name, concurrency: 1, onJob: (e) => order.push(e.id) });
    open.push({ close: () => worker.close() });
    await Promise.all([low.result(), high.result()]);
    expect(order).toEqual([high.id, low.id]);
  });

  it("jobId is an idempotency key: submitting it twice is one job", async () => {
    const { queue, events } = await setup();
    const a = await queue.submit("export default () => 1", { jobId: "nightly-2026-11-23" });
    const b = await queue.submit("export default () => 2", { jobId: "nightly-2026-11-23" });
    expect(b.id).toBe(a.id);
    expect(await b.result()).toMatchObject({ ok: true, value: 1 });
    expect(events).toHaveLength(1);
  });

  it("finished jobs carry the retention defaults that keep Redis bounded", async () => {
    const { queue } = await setup();
    const job = await queue.submit("export default 1");
    await job.result();
    const opts = JSON.parse(redis.cli("hget", `scriptbox:${queue.name}:${job.id}`, "opts").trim()) as Record<string, unknown>;
    expect(opts.removeOnComplete).toEqual(DEFAULT_RETENTION.completed);
    expect(opts.removeOnFail).toEqual(DEFAULT_RETENTION.failed);
  });

  it("a job that is not a scriptbox job (written to Redis by something else) fails cleanly; the worker goes on", async () => {
    const { queue, events } = await setup();
    const { Queue } = await import("bullmq");
    const raw = new Queue(queue.name, { connection: { host: "127.0.0.1", port: redis.port }, prefix: "scriptbox" });
    try {
      const foreign = await raw.add("x", { hello: "world" });
      const badMap = await raw.add("y", { format: 1, script: { code: "throw new Error('e')", filename: "y.js", map: "not a source map" } });
      // Refused before it runs, whether or not the run would fail (only a failure reads the map).
      const badMapOk = await raw.add("z", { format: 1, script: { code: "export default () => 1", filename: "z.js", map: '{"version":3}' } });
      await expect(queue.job(foreign.id!).result()).rejects.toThrow(/not a scriptbox job/);
      const mapped = queue.job(badMap.id!).result();
      await expect(mapped).rejects.toThrow(JobFailedError);
      await expect(queue.job(badMap.id!).result()).rejects.toThrow(/malformed job: prepared\.map is not a source map/);
      await expect(queue.job(badMapOk.id!).result()).rejects.toThrow(/malformed job: prepared\.map is not a version 3 source map/);
      expect(await (await queue.submit("export default () => 'still working'")).result()).toMatchObject({ ok: true, value: "still working" });
      expect(events.map((e) => e.outcome)).toEqual(["error", "error", "error", "ok"]);
    } finally {
      await raw.close();
    }
  });

  it("a return value that is not a script result (written by something else) is a JobFailedError, not a bogus RunResult", async () => {
    const name = `lib-forged-${process.pid}`;
    const { Queue, Worker } = await import("bullmq");
    const connection = { host: "127.0.0.1", port: redis.port };
    const raw = new Queue(name, { connection, prefix: "scriptbox" });
    const values = ["not json {", '{"ok":true}', '{"ok":false,"logs":[],"stats":{}}', "42"];
    const forger = new Worker(name, async (job) => values[Number(job.data.i)], { connection: { ...connection, maxRetriesPerRequest: null }, prefix: "scriptbox" });
    const queue = createScriptQueue({ connection: redis.url, name });
    open.push(queue);
    try {
      const jobs = await Promise.all(values.map((_, i) => raw.add("x", { i })));
      for (const job of jobs) await expect(queue.job(job.id!).result()).rejects.toThrow(/its return value is not a script result/);
    } finally {
      await forger.close();
      await raw.close();
    }
  });

  it("bad job options are errors at submit", async () => {
    const queue = createScriptQueue({ connection: redis.url, name: "lib-bad-options" });
    open.push(queue);
    await expect(queue.submit("export default 1", { limits: { wallTimeMs: -1 } })).rejects.toThrow(/limits\.wallTimeMs/);
    await expect(queue.submit("export default 1", { net: { allow: ["http://x/y"] } })).rejects.toThrow(/net\.allow/);
    await expect(queue.submit("export default 1", { secrets: ["A=b"] })).rejects.toThrow(/secret names/);
    await expect(queue.submit("export default 1", { attempts: 0 })).rejects.toThrow(/attempts/);
    await expect(queue.submit("export default 1", { input: () => 1 })).rejects.toThrow(/cannot cross/);
    await expect(queue.submit("export default 1", { bogus: 1 } as never)).rejects.toThrow(/unknown job option "bogus"/);
    // What a worker would refuse is refused here, with the sandbox's own rules, not a failed job later.
    await expect(queue.submit("export default 1", { filename: "a\nb.js" })).rejects.toThrow(/filename must be a non-empty single-line string/);
    await expect(queue.submit("export default 1", { env: JSON.parse('{"__proto__": "x"}') as Record<string, string> })).rejects.toThrow(/env key "__proto__" is not allowed/);
    await expect(queue.submit("export default 1", { env: { A: 1 } as never })).rejects.toThrow(/env\.A must be a string/);
    await expect(queue.submit("export default 1", { net: { allowed: [] } as never })).rejects.toThrow(/unknown net option "allowed"/);
    await expect(queue.addSchedule("s", "* * * * *", "job.js", { jobId: "fixed" } as never)).rejects.toThrow(/jobId does not apply to a schedule/);
    await expect(queue.addSchedule("s", "* * * * *", "job.js", { delay: 5 } as never)).rejects.toThrow(/delay does not apply to a schedule/);
    expect(await queue.stats()).toMatchObject({ waiting: 0, delayed: 0, prioritized: 0 });
  });
});
