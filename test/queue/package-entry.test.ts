// `scriptbox/queue` is a package entry point with types (issue 14 §1): an embedder project
// (node_modules/scriptbox → this repository) imports it by name at run time, and its types
// check a correct use and catch a wrong one. Needs the built package (npm test builds).
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
let dir: string;

const GOOD = `import { createScriptQueue, startScriptWorker, JobCancelledError, type RunResult, type ScriptJobOptions } from "scriptbox/queue";
const options: ScriptJobOptions = { input: { n: 1 }, limits: { cpuTimeMs: 100 }, net: { allow: ["api.example.com"] }, secrets: ["API_TOKEN"], attempts: 2, priority: 1, delay: 0 };
export async function main(): Promise<number> {
  const worker = await startScriptWorker({ connection: "redis://127.0.0.1:6379", name: "scripts", concurrency: 2, sandbox: { limits: { memoryBytes: 64 * 1024 * 1024 } } });
  const queue = createScriptQueue({ connection: { host: "127.0.0.1", port: 6379 }, name: "scripts" });
  const job = await queue.submit("export default (x) => x", options);
  const result: RunResult = await job.result();
  const outcome: "removed" | "signalled" | "finished" = await job.cancel();
  await queue.close();
  const { drained } = await worker.close({ graceMs: 1000 });
  void outcome; void JobCancelledError;
  return result.ok ? result.stats.wallTimeMs : drained ? 1 : result.error.kind.length;
}
`;
const BAD = `import { createScriptQueue } from "scriptbox/queue";
export async function main(): Promise<string> {
  const job = await createScriptQueue().submit("x", { priority: "high" });
  return (await job.result()).ok;
}
`;

function tsc(): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, "-p", dir, "--pretty", "false"], { cwd: dir, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

describe("the scriptbox/queue package entry", () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "scriptbox-queue-entry-"));
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(ROOT, join(dir, "node_modules", "scriptbox"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    const compilerOptions = { target: "ES2022", lib: ["ES2023"], module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: false, types: [] };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("imports by name at run time", () => {
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", 'const q = await import("scriptbox/queue"); console.log(typeof q.createScriptQueue, typeof q.startScriptWorker, typeof q.QueueDependencyError)'], { cwd: dir, encoding: "utf8" });
    expect(out.stderr).toBe("");
    expect(out.stdout).toBe("function function function\n");
  });

  it("its types accept a correct use (without Node types) and reject a wrong one", async () => {
    writeFileSync(join(dir, "good.ts"), GOOD);
    const good = await tsc();
    expect(good.output).toBe("");
    expect(good.code).toBe(0);
    writeFileSync(join(dir, "bad.ts"), BAD);
    const bad = await tsc();
    expect(bad.code).not.toBe(0);
    expect(bad.output).toMatch(/bad\.ts\(3,.*'string' is not assignable to type 'number'/);
    expect(bad.output).toMatch(/bad\.ts\(4,.*'boolean' is not assignable to type 'string'/);
  });
});
