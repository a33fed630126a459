// Issue 12 (targets 2 and 6), the behaviour behind the figures: importing scriptbox starts
// no thread; warmPool() starts the shared workers and settles once they are warm, and the
// first sandbox then uses one of them instead of starting another; a sandbox is usable
// and disposable before and after its first run, and dispose() leaves every later request
// to it refused while the worker frees it in the background. (Times are in
// bench/lifecycle.mjs, never asserted here.)
import { describe, expect, it } from "vitest";
import { configurePool, createSandbox, poolStats, runScript, SandboxDisposedError, warmPool } from "scriptbox";

describe("worker start-up", () => {
  it("import starts no worker; warmPool starts the shared workers; the first sandbox takes one of them", async () => {
    // vitest runs each file in a fresh process: nothing has created a sandbox yet.
    expect(poolStats().shared).toBe(0);
    configurePool({ sharedWorkers: 2 });
    const warm = warmPool();
    // One after another: the second starts once the first is warm.
    expect(poolStats().shared).toBe(1);
    const sandbox = await createSandbox();
    // The worker still starting takes the sandbox: no thread is started for it.
    expect(poolStats().shared).toBe(1);
    expect(await sandbox.run("export default () => 1 + 1")).toMatchObject({ ok: true, value: 2 });
    await warm;
    expect(poolStats().shared).toBe(2);
    await sandbox.dispose();
    // Settles at once when the workers are already warm.
    await warmPool();
    expect(poolStats().shared).toBe(2);
  });
});

describe("the embedder's process", () => {
  it("exits on its own after warmPool() with no sandbox ever created (idle workers keep nothing alive)", async () => {
    const { execFile } = await import("node:child_process");
    const code = `import { warmPool, poolStats } from "scriptbox"; await warmPool(); console.log(poolStats().shared > 0 ? "warm" : "cold");`;
    const outcome = await new Promise<{ exitCode: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", code], { cwd: process.cwd(), timeout: 20_000 }, (_error, stdout) =>
        resolve({ exitCode: child.exitCode, stdout }),
      );
    });
    expect(outcome).toEqual({ exitCode: 0, stdout: "warm\n" });
  }, 30_000);
});

describe("create, run, dispose", () => {
  it("a sandbox disposed before its first run never gets an engine and refuses runs", async () => {
    const sandbox = await createSandbox();
    await sandbox.dispose();
    await expect(sandbox.run("export default () => 1")).rejects.toBeInstanceOf(SandboxDisposedError);
  });

  it("many sandboxes created at once, then run in reverse order, each see their own input and globals", async () => {
    const sandboxes = await Promise.all(Array.from({ length: 40 }, (_, i) => createSandbox({ env: { N: String(i) } })));
    const results = await Promise.all(
      [...sandboxes].reverse().map((sandbox) =>
        sandbox.run(
          `import { env } from "runtime";
           globalThis.seen = (globalThis.seen ?? 0) + 1;
           export default async (input) => { await new Promise((r) => setTimeout(r, 5)); return [env.N, input, globalThis.seen] }`,
          { input: Number(sandbox.id) },
        ),
      ),
    );
    [...sandboxes].reverse().forEach((sandbox, i) => {
      expect(results[i]).toMatchObject({ ok: true, value: [String(sandboxes.indexOf(sandbox)), sandbox.id, 1] });
    });
    await Promise.all(sandboxes.map((sandbox) => sandbox.dispose()));
    for (const sandbox of sandboxes) await expect(sandbox.run("export default () => 1")).rejects.toBeInstanceOf(SandboxDisposedError);
  });

  // Which engines serve a wave is the worker's business (host/worker/warm-pool.ts keeps a
  // burst's engines for the next one: its unit test and the tenancy bench show it); what a
  // guest may rely on, and this asserts, is that no run sees anything of an earlier one.
  it("waves of one-shot runs, on engines the warm pool may have kept from the wave before, see nothing of an earlier run", async () => {
    const script = `const before = [typeof globalThis.mark, typeof Array.prototype.leak];
      globalThis.mark = new Array(1000).fill("x"); Array.prototype.leak = 1;
      export default async (n) => { await new Promise((r) => setTimeout(r, 2)); return [...before, n] }`;
    for (let wave = 0; wave < 3; wave++) {
      const results = await Promise.all(Array.from({ length: 40 }, (_, n) => runScript(script, { input: n })));
      results.forEach((result, n) => expect(result).toMatchObject({ ok: true, value: ["undefined", "undefined", n] }));
    }
  });

  it("back to back create, run, dispose reuses the workers' engines without leaking state between sandboxes", async () => {
    for (let i = 0; i < 30; i++) {
      const sandbox = await createSandbox();
      const result = await sandbox.run("const before = typeof globalThis.mark; globalThis.mark = 1; export default () => before");
      expect(result).toMatchObject({ ok: true, value: "undefined" });
      await sandbox.dispose();
    }
  });
});
