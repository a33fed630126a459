// examples/embed-plugin.ts, the Node program: called as a function, and built and run the
// way its header (and docs/cloud.md) says, with esbuild and node, against the built package.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { expect, test } from "vitest";
import { main } from "../../examples/embed-plugin.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

test("loads a plugin once, calls it a thousand times with its state kept, and a CPU limit stops a runaway plugin", async () => {
  const lines: string[] = [];
  const report = await main((line) => lines.push(line));
  expect(report.calls).toBe(1000);
  expect(report.pluginStats).toEqual({ calls: 1000 });
  expect(report.totalCents).toBeGreaterThan(0);
  expect(report.unknownSku).toBe("RangeError: unknown sku sprocket");
  expect(report.runaway).toEqual({ kind: "cpu", message: "cpuTimeMs limit (500 ms) exceeded; the plugin was unloaded" });
  expect(report.afterRunaway).toEqual({ sku: "gadget", quantity: 2, total: 3998 });
  expect(lines[0]).toBe("loaded pricing-plugin.js, exports: configure, quote, stats");
});

test("runs as a program: esbuild to dist/examples/embed-plugin.mjs, then node", { timeout: 60_000 }, async () => {
  const outfile = `${ROOT}dist/examples/embed-plugin.mjs`;
  await build({ entryPoints: [`${ROOT}examples/embed-plugin.ts`], format: "esm", platform: "node", outfile, logLevel: "silent" });
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [outfile], { cwd: ROOT, timeout: 50_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(stdout).toMatch(/1000 quote\(\) calls in \d+ ms/);
  expect(stdout).toContain("runaway-plugin.js stopped: cpu: cpuTimeMs limit (500 ms) exceeded");
  expect(stdout).toContain('pricing-plugin.js still answers: {"sku":"gadget","quantity":2,"total":3998}');
});
