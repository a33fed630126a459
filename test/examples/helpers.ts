// Running the example scripts the way `scriptbox run` does (sandbox.runFile: the file and
// its relative imports, bundled), against a seeded emulator, with the cloud option's token
// and session held as secrets.
import { fileURLToPath } from "node:url";
import { createSandbox, type LogEntry, type RunResult, type SandboxOptions } from "scriptbox";
import { expect } from "vitest";
import { cloudOptions, type Emulator } from "../cloud/helpers.js";

export const EXAMPLES = fileURLToPath(new URL("../../examples/", import.meta.url));

export async function runExample<T = any>(emulator: Emulator, name: string, input?: unknown, extra: SandboxOptions = {}): Promise<RunResult<T> & { lines: string[] }> {
  const lines: string[] = [];
  const sandbox = await createSandbox({ ...cloudOptions(emulator), onLog: (entry: LogEntry) => lines.push(entry.message), ...extra });
  try {
    const result = await sandbox.runFile<T>(`${EXAMPLES}${name}`, { input });
    return { ...result, lines };
  } finally {
    await sandbox.dispose();
  }
}

export function expectOk<T>(result: RunResult<T>): T {
  if (!result.ok) expect.fail(`the example failed: ${result.error.stack || result.error.message}\nlogs:\n${result.logs.map((l) => l.message).join("\n")}`);
  return result.value;
}
