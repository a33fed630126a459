// Running the built CLI (`npm test` builds first) in a child process, and the shapes its
// output must have.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

export const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `scriptbox …args` in `cwd` with `env` added to the environment. */
export function runCli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 25_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `--json`'s stdout: exactly one line holding one JSON object. */
export function jsonResult(result: CliResult): Record<string, any> {
  const lines = result.stdout.split("\n").filter((line) => line.trim() !== "");
  expect(lines, `stdout: ${result.stdout}`).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!) as unknown;
  expect(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)).toBe(true);
  return parsed as Record<string, any>;
}

/** A usage mistake: exit 2, one line on stderr, nothing on stdout, no stack trace. */
export function expectUsageError(result: CliResult, pattern: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe("");
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}
