#!/usr/bin/env node
// The `scriptbox` command. Argument parsing is commander's; each subcommand hands its
// parsed options to the folder that does the work.
import { Command, InvalidArgumentError } from "commander";
import { runEmulatorCommand } from "../emulator/cli.js";

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
  .showHelpAfterError(false)
  .exitOverride();

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
    process.exitCode = await runEmulatorCommand(opts);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // commander reports usage errors (unknown flag, missing argument) by throwing after
  // printing its one-line message; help and version exit 0.
  const err = error as { code?: string; exitCode?: number };
  if (err.code === "commander.helpDisplayed" || err.code === "commander.version") process.exit(0);
  if (typeof err.code === "string" && err.code.startsWith("commander.")) process.exit(2);
  throw error;
}
