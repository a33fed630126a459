// Spawning the built CLI for the queue tests: one-shot commands, and long-running
// workers the tests signal (SIGTERM, SIGKILL) and whose output lines they watch.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function cli(args: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 25_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export class WorkerProcess {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
    this.child = spawn(process.execPath, [CLI, "worker", ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (this.stdout += chunk));
    this.child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }

  /** Resolves once the worker said it takes jobs. */
  async ready(timeoutMs = 20_000): Promise<this> {
    await this.waitFor(() => this.stderr.includes("taking jobs"), timeoutMs, "the worker to start");
    return this;
  }

  /** Lines "job <id> <file> <outcome> <ms>ms…" the worker printed. */
  jobLines(id?: string): string[] {
    return this.stdout.split("\n").filter((line) => line.startsWith(id === undefined ? "job " : `job ${id} `));
  }

  async waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`the worker exited while waiting for ${what}: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; worker stderr: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

export async function until(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
