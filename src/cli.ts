#!/usr/bin/env node
// The `scriptbox` command. Argument parsing is commander's; each subcommand hands its
// parsed options to the module that does the work. Usage mistakes exit 2 with one line.
import { Command, InvalidArgumentError } from "commander";
import { runCommand } from "./commands/run.js";
import { withEmulatorPackages } from "./emulator-peers.js";
import { UsageError } from "./usage.js";

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError("expected a port number 0-65535");
  return port;
}

function parsePositiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number");
  return n;
}

const SIZE_UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** "67108864", "64mb", "64MiB", "512k": binary units, as memory limits are usually meant. */
export function parseSize(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = match ? SIZE_UNITS[match[2]!.toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new InvalidArgumentError("expected a size such as 67108864, 64mb or 512k");
  return Math.floor(Number(match[1]) * unit);
}

const collect = (value: string, previous: string[]) => [...previous, value];
const collectList = (value: string, previous: string[]) => [...previous, ...value.split(",").map((s) => s.trim()).filter(Boolean)];

const program = new Command()
  .name("scriptbox")
  .description("Run untrusted scripts in a QuickJS sandbox; emulate the cloud API")
  .showSuggestionAfterError(true)
  .exitOverride();

program
  .command("run")
  .description("run a script file (.js or .ts, with its relative imports) in a sandbox")
  .argument("<file>", "the script")
  .option("--input <json>", "input for the default-exported function: JSON text, or @file.json")
  .option("--allow-net <hosts>", "allow network access to host[:port] entries (comma-separated, repeatable)", collectList, [])
  .option("--cpu-time <ms>", "guest CPU time limit", parsePositiveNumber)
  .option("--timeout <ms>", "wall-clock limit for the whole run", parsePositiveNumber)
  .option("--memory <size>", "memory limit (bytes, or 64mb, 512k, ...)", parseSize)
  .option("--env <K=V>", "an env value the script reads with `import { env } from \"runtime\"` (repeatable)", collect, [])
  .option("--secret <NAME=ENV_VAR@origin>", "a secret from an environment variable, usable only towards origin (repeatable)", collect, [])
  .option("--cloud-url <url>", "base URL of the cloud API for the preconfigured `cloud` client")
  .option("--cloud-token-secret <NAME>", "the secret holding the cloud API token (PAT)")
  .option("--cloud-session-secret <NAME>", "the secret holding the dashboard session (for PAT creation)")
  .option("--location <url>", "base URL for relative URLs in fetch (like Deno's --location)")
  .option("--json", "print exactly one JSON result on stdout (logs go to stderr)", false)
  .action(async (file: string, opts) => {
    process.exitCode = await runCommand(file, opts);
  });

program
  .command("emulator")
  .description("start the cloud API emulator")
  .option("--host <host>", "address to listen on", "127.0.0.1")
  .option("--port <port>", "port to listen on", parsePort, 8787)
  .option("--db <file>", "SQLite file to persist to (default: a private in-memory database)")
  .option("--seed", "create a user, team, workspace, keys and a PAT, and print them", false)
  .option("--auto-consent", "approve /oauth2/authorize for the requesting user without a consent page", false)
  .option("--test-clock", "enable POST /__emulator/clock to move the clock forward", false)
  .option("--device-interval <seconds>", "device flow polling interval", parsePositiveNumber, 5)
  .action(async (opts) => {
    // Loaded here: the emulator's dependencies (optional peers) are not needed to run a script.
    process.exitCode = await withEmulatorPackages(async () => (await import("../emulator/cli.js")).runEmulatorCommand(opts));
  });

program
  .command("demo")
  .description("start a seeded cloud API emulator and run two example scripts against it")
  .action(async () => {
    process.exitCode = await withEmulatorPackages(async () => (await import("./commands/demo.js")).runDemoCommand());
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  const err = error as { code?: string; exitCode?: number; message?: string };
  if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") {
    process.exitCode = 0;
  } else if (typeof err.code === "string" && err.code.startsWith("commander.")) {
    // commander has already printed its one-line message.
    process.exitCode = 2;
  } else if (error instanceof UsageError) {
    process.stderr.write(`scriptbox: ${error.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`scriptbox: internal error: ${err.message ?? String(error)}\n`);
    process.exitCode = 1;
  }
}
