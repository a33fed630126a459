// `scriptbox run <file>`: runs a script file (with its relative imports) in a sandbox and
// prints its logs and result. Exit codes: 0 success, 1 the script failed, 2 bad usage,
// 3 a limit stopped the script.
import { existsSync, readFileSync, statSync } from "node:fs";
import { createSandbox } from "../../host/sandbox.js";
import type { Limits, LogEntry, RunResult, SandboxOptions } from "../../host/types.js";
import { UsageError } from "../usage.js";

export interface RunCommandOptions {
  input?: string;
  allowNet: string[];
  cpuTime?: number;
  timeout?: number;
  memory?: number;
  env: string[];
  secret: string[];
  /** Names of --secret values accepted although weak (short or low-entropy). */
  weakSecret?: string[];
  cloudUrl?: string;
  cloudTokenSecret?: string;
  cloudSessionSecret?: string;
  location?: string;
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

export function parsePairs(entries: string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new UsageError(`${flag} expects NAME=VALUE, got "${entry}"`);
    out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
}

/**
 * --secret NAME=ENV_VAR@origin: the value comes from the environment, never from argv.
 * --weak-secret NAME: the opt-in for a value the weak-secret rule refuses.
 */
export function parseSecrets(entries: string[], weakNames: string[] = []): NonNullable<SandboxOptions["secrets"]> {
  const secrets: NonNullable<SandboxOptions["secrets"]> = {};
  for (const entry of entries) {
    const match = /^([^=]+)=([^@]+)@(.+)$/.exec(entry);
    if (!match) throw new UsageError(`--secret expects NAME=ENV_VAR@origin, got "${entry}"`);
    const [, name, variable, origin] = match as unknown as [string, string, string, string];
    const value = process.env[variable];
    if (value === undefined) throw new UsageError(`--secret ${name}: environment variable ${variable} is not set`);
    const existing = secrets[name];
    if (existing && existing.value !== value) throw new UsageError(`--secret ${name} is given twice with different values`);
    secrets[name] = { value, origins: [...(existing?.origins ?? []), origin] };
  }
  for (const name of weakNames) {
    const secret = secrets[name];
    if (!secret) throw new UsageError(`--weak-secret ${name}: no --secret ${name}=… was given`);
    secret.weak = true;
  }
  return secrets;
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

/** --cpu-time, --timeout, --memory as sandbox limits (only those given). */
export function limitsFromFlags(options: Pick<RunCommandOptions, "cpuTime" | "timeout" | "memory">): Partial<Limits> {
  return {
    ...(options.cpuTime !== undefined ? { cpuTimeMs: options.cpuTime } : {}),
    ...(options.timeout !== undefined ? { wallTimeMs: options.timeout } : {}),
    ...(options.memory !== undefined ? { memoryBytes: options.memory } : {}),
  };
}

/** --cloud-url, --cloud-token-secret, --cloud-session-secret as the `cloud` sandbox option. */
export function cloudFromFlags(options: Pick<RunCommandOptions, "cloudUrl" | "cloudTokenSecret" | "cloudSessionSecret">): SandboxOptions["cloud"] {
  if (options.cloudUrl !== undefined) {
    return {
      baseUrl: options.cloudUrl,
      ...(options.cloudTokenSecret ? { token: { secret: options.cloudTokenSecret } } : {}),
      ...(options.cloudSessionSecret ? { session: { secret: options.cloudSessionSecret } } : {}),
    };
  }
  if (options.cloudTokenSecret || options.cloudSessionSecret) throw new UsageError("--cloud-token-secret and --cloud-session-secret need --cloud-url");
  return undefined;
}

export async function runCommand(file: string, options: RunCommandOptions): Promise<number> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`cannot read ${file}: no such file`);
  const input = parseInput(options.input);
  const secrets = parseSecrets(options.secret, options.weakSecret);
  const sandboxOptions: SandboxOptions = {
    limits: limitsFromFlags(options),
    net: { allow: options.allowNet },
    env: parsePairs(options.env, "--env"),
    secrets,
    ...(options.location !== undefined ? { location: options.location } : {}),
    onLog: (entry: LogEntry) => printLog(entry, options.json),
  };
  const cloud = cloudFromFlags(options);
  if (cloud) sandboxOptions.cloud = cloud;

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
  if (json) {
    print(process.stdout, resultJson(result));
  } else if (result.ok) {
    if (result.value !== undefined) print(process.stdout, JSON.stringify(result.value, null, 2) ?? String(result.value));
  } else {
    print(process.stderr, `scriptbox: the script failed (${result.error.kind})\n${result.error.stack || `${result.error.name}: ${result.error.message}`}`);
  }
  if (result.ok) return 0;
  return LIMIT_KINDS.has(result.error.kind) ? 3 : 1;
}
