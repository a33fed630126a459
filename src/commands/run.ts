// `scriptbox run <file>`: runs a script file (with its relative imports) in a sandbox and
// prints its logs and result. Exit codes: 0 success, 1 the script failed, 2 bad usage,
// 3 a limit stopped the script.
import { existsSync, readFileSync, statSync } from "node:fs";
import { createSandbox } from "../../host/sandbox.js";
import type { LogEntry, RunResult, SandboxError } from "../../host/types.js";
import { UsageError } from "../usage.js";
import { inFlagTerms, resolveSandboxFlags, type SandboxFlagValues } from "./sandbox-flags.js";

export interface RunCommandOptions extends SandboxFlagValues {
  input?: string;
  json: boolean;
}

const LIMIT_KINDS = new Set(["cpu", "memory", "timeout", "limit"]);

export function parseInput(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  let json = text;
  if (text.startsWith("@")) {
    const path = text.slice(1);
    if (!existsSync(path)) throw new UsageError(`--input file not found: ${path}`);
    json = readFileSync(path, "utf8");
  }
  try {
    return JSON.parse(json) as unknown;
  } catch (error) {
    throw new UsageError(`--input is not valid JSON: ${(error as Error).message}`);
  }
}

export function print(stream: NodeJS.WriteStream, text: string): void {
  stream.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** JSON for the result: bytes as { "$bytes": base64 }, undefined dropped as JSON does. */
export function resultJson(result: RunResult): string {
  return JSON.stringify(result, (_key, value: unknown) =>
    value instanceof Uint8Array ? { $bytes: Buffer.from(value).toString("base64") } : value,
  );
}

/** "scriptbox: the script failed (script): unhandled promise rejection" and the stack, once. */
function failureReport(error: SandboxError): string {
  const how = error.origin === "unhandled-rejection" ? ": unhandled promise rejection" : "";
  return `scriptbox: the script failed (${error.kind})${how}\n${error.stack || `${error.name}: ${error.message}`}`;
}

export async function runCommand(file: string, options: RunCommandOptions): Promise<number> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`cannot read ${file}: no such file`);
  const input = parseInput(options.input);
  const { options: sandboxOptions } = resolveSandboxFlags(options, { scriptPath: file });
  sandboxOptions.onLog = (entry: LogEntry) => printLog(entry, options.json);

  let sandbox;
  try {
    sandbox = await createSandbox(sandboxOptions);
  } catch (error) {
    // An invalid option value (a bad --allow-net entry, a limit out of range, …).
    throw new UsageError((error as Error).message);
  }
  let result: RunResult;
  try {
    result = await sandbox.runFile(file, { input });
  } finally {
    await sandbox.dispose();
  }

  return reportResult(result, options.json);
}

/** A console entry as `run` prints it (also `submit --wait`, from the job's logs). */
export function printLog(entry: LogEntry, json: boolean): void {
  // Without --json: console.log/info/debug on stdout, warn/error/trace on stderr.
  // With --json: stdout carries only the result, so every log line goes to stderr.
  const toStderr = json || entry.level === "warn" || entry.level === "error" || entry.level === "trace";
  print(toStderr ? process.stderr : process.stdout, entry.message);
}

/** Prints the result as `run` does and returns the exit code (0, 1, or 3 for a limit). */
export function reportResult(result: RunResult, json: boolean): number {
  if (!result.ok) {
    // The library's words for options ("net.allow") become the flags the user typed.
    result.error.message = inFlagTerms(result.error.message);
    result.error.stack = inFlagTerms(result.error.stack);
  }
  if (json) {
    print(process.stdout, resultJson(result));
  } else if (result.ok) {
    if (result.value !== undefined) print(process.stdout, JSON.stringify(result.value, null, 2) ?? String(result.value));
  } else {
    print(process.stderr, failureReport(result.error));
  }
  if (result.ok) return 0;
  return LIMIT_KINDS.has(result.error.kind) ? 3 : 1;
}
