#!/usr/bin/env node
// The `scriptbox` command. Argument parsing is commander's; each subcommand hands its
// parsed options to the module that does the work. Usage mistakes exit 2 with one line.
import { Command, InvalidArgumentError } from "commander";
import { runCommand } from "./commands/run.js";
import { registerQueueCommands } from "./commands/queue-cli.js";
import { addSandboxFlags } from "./commands/sandbox-flags.js";
import { packageVersion, reportUsageError, UsageError } from "./usage.js";
import { withEmulatorPackages } from "./emulator-peers.js";

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

const program = new Command()
  .name("scriptbox")
  .description("Run untrusted scripts in a QuickJS sandbox; emulate the cloud API")
  .version(packageVersion(), "-V, --version", "print the version of scriptbox")
  .showSuggestionAfterError(true)
  .exitOverride();

const run = program
  .command("run")
  .description("run a script file (.js or .ts, with its relative imports) in a sandbox")
  .argument("<file>", "the script")
  .option("--input <json>", "input for the default-exported function: JSON text, or @file.json");
addSandboxFlags(run)
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

registerQueueCommands(program);

// With --json anywhere on the command line, a usage error is also one JSON object on
// stdout, so that a caller parsing stdout always gets JSON.
const jsonRequested = process.argv.includes("--json");

try {
  await program.parseAsync(process.argv);
} catch (error) {
  const err = error as { code?: string; exitCode?: number; message?: string };
  if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") {
    process.exitCode = 0;
  } else if (typeof err.code === "string" && err.code.startsWith("commander.")) {
    // commander has already printed its message on stderr.
    if (jsonRequested) reportUsageError(String(err.message ?? "").replace(/^error: /, ""), { json: true, stderr: false });
    process.exitCode = 2;
  } else if (error instanceof UsageError) {
    reportUsageError(error.message, { json: jsonRequested, stderr: true });
    process.exitCode = 2;
  } else {
    process.stderr.write(`scriptbox: internal error: ${err.message ?? String(error)}\n`);
    process.exitCode = 1;
  }
}
