// Usage mistakes and what the CLI says about itself.
import { readFileSync } from "node:fs";

/** A mistake on the command line: reported as one line, exit code 2, never a stack trace. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * Prints a usage mistake: one `scriptbox: …` line on stderr, and with --json also one
 * JSON object on stdout shaped like a failed run's result (`error.kind` "usage").
 */
export function reportUsageError(message: string, how: { json: boolean; stderr: boolean }): void {
  if (how.stderr) process.stderr.write(`scriptbox: ${message}\n`);
  if (how.json) process.stdout.write(`${JSON.stringify({ ok: false, error: { kind: "usage", name: "UsageError", message } })}\n`);
}

/** The installed package's version (package.json two folders above dist/src/). */
export function packageVersion(): string {
  for (const relative of ["../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "scriptbox" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return "unknown";
}
