// guest-lib is TypeScript strict like the host, under its own tsconfig (ECMAScript library
// only: QuickJS has no DOM and no Node). esbuild bundles it without checking types, so
// this is where a type error in the guest library shows.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

test("guest-lib type-checks under guest-lib/tsconfig.json", async () => {
  const result = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "guest-lib/tsconfig.json", "--pretty", "false"], { cwd: ROOT, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
  expect(result.output).toBe("");
  expect(result.code).toBe(0);
}, 120_000);
