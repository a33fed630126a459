// Issue 14 §4: the queue commands of the built CLI against a real redis-server and a real
// worker process: `submit` (job id; --wait behaving like `run`, same exit codes; --json),
// `schedule add|list|remove` with a schedule that really fires, `queue stats`, and an
// unreachable Redis as one line with exit 2 for every command.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, WorkerProcess } from "./cli-process.js";
import { redisMissing, startRedis, type RedisServer } from "./redis-server.js";

const SECRET_VALUE = "cli-secret-5d2a-9f3b7e1c04aa";
let redis: RedisServer;
let dir: string;
let worker: WorkerProcess;
let server: Server;
let origin: string;
const authorizations: (string | undefined)[] = [];
const QUEUE = `cli-${process.pid}`;

const conn = () => ["--redis", redis.url, "--queue", QUEUE];

describe.skipIf(redisMissing())("queue commands of the CLI", () => {
  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "scriptbox-queue-cli-"));
    server = createServer((req, res) => {
      authorizations.push(req.headers.authorization);
      res.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(join(dir, "add.ts"), 'import { log } from "./log.ts";\nexport default (n: number) => { log(`adding to ${n}`); return n + 1; };\n');
    writeFileSync(join(dir, "log.ts"), "export function log(text: string): void { console.log(text); console.warn(\"warned\"); }\n");
    writeFileSync(join(dir, "fail.ts"), 'export default () => {\n  throw new Error("it broke");\n};\n');
    writeFileSync(join(dir, "spin.js"), "for (;;) {}\n");
    writeFileSync(join(dir, "call.js"), `import { secret } from "runtime";\nexport default async () => (await fetch("${origin}/", { headers: { authorization: secret("TOKEN") } })).status;\n`);
    worker = await new WorkerProcess([...conn(), "--concurrency", "2", "--cpu-time", "200", "--allow-net", origin.replace("http://", ""), "--secret", `TOKEN=CLI_TEST_TOKEN@${origin}`], {
      cwd: dir,
      env: { CLI_TEST_TOKEN: SECRET_VALUE },
    }).ready();
  });

  afterAll(async () => {
    worker?.kill("SIGTERM");
    await worker?.exited;
    await new Promise((resolve) => server?.close(resolve));
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("submit prints the job id; the worker logs one line for the job (id, file, outcome, ms)", async () => {
    const out = await cli(["submit", "add.ts", "--input", "1", ...conn()], { cwd: dir });
    expect(out).toMatchObject({ code: 0, stderr: "" });
    const id = out.stdout.trim();
    expect(id).toMatch(/^\d+$/);
    await worker.waitFor(() => worker.jobLines(id).length > 0, 10_000, "the job line");
    expect(worker.jobLines(id)[0]).toMatch(new RegExp(`^job ${id} add\\.ts ok \\d+ms$`));
  });

  it("submit --wait behaves like run: logs, the value, exit 0", async () => {
    const out = await cli(["submit", "add.ts", "--input", "41", "--wait", ...conn()], { cwd: dir });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe("adding to 41\n42\n");
    expect(out.stderr).toMatch(/warned/);
  });

  it("submit --wait --json prints one JSON result on stdout, logs on stderr", async () => {
    const out = await cli(["submit", "add.ts", "--input", "1", "--wait", "--json", ...conn()], { cwd: dir });
    expect(out.code).toBe(0);
    const result = JSON.parse(out.stdout) as { ok: boolean; value: number; logs: unknown[] };
    expect(result).toMatchObject({ ok: true, value: 2 });
    expect(out.stderr).toContain("adding to 1");
  });

  it("submit --wait: a failing script exits 1 with its stack at the .ts line; a limit exits 3", async () => {
    const failed = await cli(["submit", "fail.ts", "--wait", ...conn()], { cwd: dir });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/the script failed \(script\)\nError: it broke\n\s+at .*fail\.ts:2:\d+/);
    const limited = await cli(["submit", "spin.js", "--wait", ...conn()], { cwd: dir });
    expect(limited.code).toBe(3);
    expect(limited.stderr).toMatch(/the script failed \(cpu\)/);
  });

  it("submit --secret names a secret the worker holds; a value on the command line is refused", async () => {
    const out = await cli(["submit", "call.js", "--secret", "TOKEN", "--wait", ...conn()], { cwd: dir });
    expect(out).toMatchObject({ code: 0, stdout: "200\n" });
    expect(authorizations.at(-1)).toBe(SECRET_VALUE);
    const refused = await cli(["submit", "call.js", "--secret", "TOKEN=X@http://a", ...conn()], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^scriptbox: --secret TOKEN=X@http:\/\/a: a job names a secret/);
    expect(refused.stderr.split("\n").filter(Boolean)).toHaveLength(1);
  });

  it("submit of a missing file or with bad --input is a usage error (exit 2)", async () => {
    expect((await cli(["submit", "nope.ts", ...conn()], { cwd: dir })).code).toBe(2);
    const bad = await cli(["submit", "add.ts", "--input", "{", ...conn()], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--input is not valid JSON/);
  });

  it("schedule add, list and remove; a schedule runs the script on its cron pattern", async () => {
    const added = await cli(["schedule", "add", "every-second", "* * * * * *", "add.ts", "--input", "99", ...conn()], { cwd: dir });
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^schedule every-second: \* \* \* \* \* \* add\.ts, next run \d{4}-/);
    const listed = await cli(["schedule", "list", "--json", ...conn()]);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ name: "every-second", cron: "* * * * * *", filename: "add.ts" })]);
    const before = worker.jobLines().length;
    await worker.waitFor(() => worker.jobLines().length >= before + 2, 10_000, "two scheduled runs");
    expect(worker.jobLines().slice(before).every((line) => / add\.ts ok /.test(line))).toBe(true);
    expect((await cli(["schedule", "remove", "every-second", ...conn()])).code).toBe(0);
    const again = await cli(["schedule", "remove", "every-second", ...conn()]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no schedule named every-second/);
    expect((await cli(["schedule", "list", "--json", ...conn()])).stdout.trim()).toBe("[]");
  });

  it("schedule add with an invalid cron pattern is a usage error", async () => {
    const out = await cli(["schedule", "add", "bad", "every day", "add.ts", ...conn()], { cwd: dir });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^scriptbox: not a cron expression: "every day"/);
  });

  it("queue stats counts jobs by state", async () => {
    const out = await cli(["queue", "stats", "--json", ...conn()]);
    expect(out.code).toBe(0);
    const stats = JSON.parse(out.stdout) as Record<string, number>;
    expect(Object.keys(stats).sort()).toEqual(["active", "completed", "delayed", "failed", "prioritized", "waiting"]);
    expect(stats.completed).toBeGreaterThanOrEqual(4);
    expect(stats.failed).toBeGreaterThanOrEqual(2);
    const text = await cli(["queue", "stats", ...conn()]);
    expect(text.stdout).toMatch(/^waiting\s+\d+\nactive\s+\d+\n/);
  });

  it("a job's file name or message cannot add lines to the worker's log or send terminal escapes", async () => {
    const { Queue } = await import("bullmq");
    const raw = new Queue(QUEUE, { connection: { host: "127.0.0.1", port: redis.port }, prefix: "scriptbox" });
    try {
      const forged = await raw.add("evil\njob 999 forged.js ok 1ms\u001b[2J", { format: 0, note: "\u001b]0;title\u0007" });
      await worker.waitFor(() => worker.jobLines(forged.id!).length > 0, 10_000, "the forged job's line");
      expect(worker.jobLines(forged.id!)[0]).toMatch(new RegExp(`^job ${forged.id} evil job 999 forged\\.js ok 1ms\\\\x1b\\[2J error \\d+ms not a scriptbox job`));
      expect(worker.jobLines("999")).toEqual([]);
      expect(worker.stdout).not.toContain("\u001b");
    } finally {
      await raw.close();
    }
  });

  it("the worker's log does not show the Redis password", async () => {
    const password = "pw-7f3e9a1c";
    const w = new WorkerProcess(["--redis", `redis://default:${password}@127.0.0.1:${redis.port}`, "--queue", `${QUEUE}-pw`, "--concurrency", "1"], { cwd: dir });
    try {
      await w.ready();
      expect(w.stderr).toContain(`at redis://127.0.0.1:${redis.port} `);
      expect(w.stderr + w.stdout).not.toContain(password);
    } finally {
      w.kill("SIGTERM");
      await w.exited;
    }
    const bad = await cli(["queue", "stats", "--redis", `redis://default:${password}@127.0.0.1:${redis.port}/x`]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^scriptbox: --redis: the database in redis:\/\/default:\*\*\*@127\.0\.0\.1:\d+\/x must be a number\n$/);
  });

  it("an unreachable Redis is one line and exit 2, for every queue command", async () => {
    const down = ["--redis", "redis://127.0.0.1:1"];
    for (const args of [["submit", "add.ts"], ["worker"], ["schedule", "list"], ["schedule", "remove", "x"], ["queue", "stats"], ["schedule", "add", "x", "* * * * *", "add.ts"]]) {
      const out = await cli([...args, ...down], { cwd: dir });
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toMatch(/^scriptbox: cannot reach Redis at redis:\/\/127\.0\.0\.1:1: connect ECONNREFUSED 127\.0\.0\.1:1\n$/);
      expect(out.stdout).toBe("");
    }
  });
});
