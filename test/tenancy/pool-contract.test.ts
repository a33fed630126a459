// Issue 10 §1, the run contract: run, load, call and runScript settle with a result for
// everything a script or another sandbox's script can cause. Bystanders of a worker the
// watchdog terminated (for another sandbox's native hog) are re-run on a fresh worker when
// they had no effect outside the sandbox yet, and end with kind "evicted" otherwise.
//
// One shared worker (configurePool) makes every ordinary run a bystander of every hog.
// Demotion is off: with it, the same hog's next runs would go to a demoted worker of their
// own and leave the bystanders alone (that is pool-demotion.test.ts).
import { createServer, type Server } from "node:http";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configurePool, createSandbox, runScript, type RunResult } from "scriptbox";

/** 200 indexOf calls over 16M characters: ~20 s of native work that ignores the interrupt. */
const NATIVE_HOG = `const s = "a".repeat(1 << 24); export default () => { let n = 0; for (let i = 0; i < 200; i++) n += s.indexOf("b"); return n }`;
const HOG_LIMITS = { cpuTimeMs: 100 };

beforeAll(() => {
  configurePool({ sharedWorkers: 1, demotedWorkers: 0 });
});

let server: Server;
let requests = 0;
let baseUrl = "";
beforeAll(async () => {
  server = createServer((_request, response) => {
    requests++;
    response.end("hello");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  baseUrl = `http://127.0.0.1:${address.port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const ordinary = (i: number) => `export default async (input) => { await new Promise((r) => setTimeout(r, ${20 + (i % 5) * 20})); return input.n * 2 }`;

describe("hostile scripts among ordinary ones", () => {
  it("3 native hogs among 45 ordinary runScript calls: every ordinary run resolves ok or evicted, none rejects", async () => {
    const ordinaryRuns: Promise<RunResult>[] = [];
    const hogRuns: Promise<RunResult>[] = [];
    for (let i = 0; i < 48; i++) {
      if (i % 16 === 5) hogRuns.push(runScript(NATIVE_HOG, { limits: HOG_LIMITS }));
      else ordinaryRuns.push(runScript(ordinary(i), { input: { n: i } }));
    }
    const settled = await Promise.allSettled(ordinaryRuns);
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
    const results = settled.map((s) => (s as PromiseFulfilledResult<RunResult>).value);
    for (const result of results) {
      if (!result.ok) expect(result.error.kind).toBe("evicted");
    }
    // None of these had effects outside the sandbox: every bystander was re-run and succeeded.
    expect(results.filter((r) => r.ok).length).toBe(results.length);
    const hogs = await Promise.all(hogRuns);
    for (const hog of hogs) {
      expect(hog.ok).toBe(false);
      if (!hog.ok) {
        expect(hog.error.kind).toBe("cpu");
        expect(hog.error.message).toContain("native call that ignored the interrupt");
      }
    }
  });

  it("a bystander without effects is re-run on a fresh worker; its sandbox stays usable", async () => {
    const sandbox = await createSandbox({});
    const bystander = sandbox.run("export default async () => { await new Promise((r) => setTimeout(r, 400)); return 'done' }");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const hog = await runScript(NATIVE_HOG, { limits: HOG_LIMITS });
    expect(hog).toMatchObject({ ok: false, error: { kind: "cpu" } });
    // Its stats come from the watchdog's view (the worker that would report them is gone):
    // past its 100 ms CPU limit, in CPU and wall time; they were zeros, and its running
    // time counted as queuedMs (found by review).
    expect(hog.stats.cpuTimeMs).toBeGreaterThanOrEqual(HOG_LIMITS.cpuTimeMs);
    expect(hog.stats.wallTimeMs).toBeGreaterThanOrEqual(hog.stats.cpuTimeMs);
    const result = await bystander;
    expect(result).toMatchObject({ ok: true, value: "done" });
    // It waited for the hog's worker to die and then ran again: that is queued time.
    expect(result.stats.queuedMs).toBeGreaterThan(0);
    expect(sandbox.disposed).toBe(false);
    expect(await sandbox.run("export default () => 'still here'")).toMatchObject({ ok: true, value: "still here" });
    await sandbox.dispose();
  });

  it("a bystander that had sent a fetch is evicted, not re-run: the server saw one request", async () => {
    const sandbox = await createSandbox({ net: { allow: [baseUrl.slice("http://".length)] } });
    const before = requests;
    const bystander = sandbox.run(
      `export default async () => { await (await fetch("${baseUrl}/once")).text(); await new Promise((r) => setTimeout(r, 1000)); return 'finished' }`,
    );
    while (requests === before) await new Promise((resolve) => setTimeout(resolve, 10));
    const hog = await runScript(NATIVE_HOG, { limits: HOG_LIMITS });
    expect(hog).toMatchObject({ ok: false, error: { kind: "cpu" } });
    // Its stats come from the watchdog's view (the worker that would report them is gone):
    // past its 100 ms CPU limit, in CPU and wall time; they were zeros, and its running
    // time counted as queuedMs (found by review).
    expect(hog.stats.cpuTimeMs).toBeGreaterThanOrEqual(HOG_LIMITS.cpuTimeMs);
    expect(hog.stats.wallTimeMs).toBeGreaterThanOrEqual(hog.stats.cpuTimeMs);
    const result = await bystander;
    expect(result).toMatchObject({ ok: false, error: { kind: "evicted", name: "EvictedError" } });
    if (!result.ok) expect(result.error.message).toContain("safe to retry");
    expect(requests - before).toBe(1);
    // The sandbox itself moved to a fresh worker and serves the retry.
    expect(await sandbox.run("export default () => 'retried'")).toMatchObject({ ok: true, value: "retried" });
    await sandbox.dispose();
  });

  it("a loaded plugin of a bystander sandbox is lost with the worker: calls end evicted, loading again works", async () => {
    const sandbox = await createSandbox({});
    const plugin = await sandbox.load("let count = 0; export function bump() { return ++count }");
    expect(await plugin.call("bump")).toBe(1);
    const hog = await runScript(NATIVE_HOG, { limits: HOG_LIMITS });
    expect(hog).toMatchObject({ ok: false, error: { kind: "cpu" } });
    const lost = await plugin.invoke("bump");
    expect(lost).toMatchObject({ ok: false, error: { kind: "evicted" } });
    await expect(plugin.call("bump")).rejects.toMatchObject({ name: "ScriptError", kind: "evicted" });
    const again = await sandbox.load("let count = 10; export function bump() { return ++count }");
    expect(await again.call("bump")).toBe(11);
    await sandbox.dispose();
  });
});

describe("a server-like loop without try/catch", () => {
  it("keeps serving through hostile requests: the process does not crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "scriptbox-server-"));
    const entry = fileURLToPath(new URL("../../dist/src/index.js", import.meta.url));
    const file = join(dir, "server.mjs");
    // As the README shows it: runScript per request, no try/catch, no rejection handler
    // (an unhandled rejection ends a Node 20 process with code 1).
    writeFileSync(
      file,
      `import { configurePool, runScript } from ${JSON.stringify(entry)};
configurePool({ sharedWorkers: 1 });
const hog = ${JSON.stringify(NATIVE_HOG)};
let served = 0;
async function handle(i) {
  const hostile = i % 10 === 3;
  const result = await runScript(hostile ? hog : "export default async (x) => { await new Promise((r) => setTimeout(r, 30)); return x }", { input: i, limits: { cpuTimeMs: 100 } });
  if (!hostile && !result.ok && result.error.kind !== "evicted") throw new Error("ordinary run failed: " + result.error.kind);
  served++;
}
const requests = [];
for (let i = 0; i < 40; i++) requests.push(handle(i));
await Promise.all(requests);
console.log("served", served);
`,
    );
    const child = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 60_000 });
    expect(child.stderr).not.toContain("Error");
    expect(child.stdout.trim()).toBe("served 40");
    expect(child.status).toBe(0);
  });
});
