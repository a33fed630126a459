// `scriptbox emulator`: starts the emulator, prints the seed as KEY=value lines on stdout
// (so the output can be sourced or parsed) and where it listens on stderr, and runs until
// SIGINT or SIGTERM.
import { startEmulator, type RunningEmulator } from "./index.js";

export interface EmulatorCommandOptions {
  host: string;
  port: number;
  db?: string;
  seed: boolean;
  autoConsent: boolean;
  testClock: boolean;
  deviceInterval: number;
}

export async function runEmulatorCommand(options: EmulatorCommandOptions): Promise<number> {
  let emulator: RunningEmulator;
  try {
    emulator = await startEmulator({
      host: options.host,
      port: options.port,
      dbPath: options.db,
      seed: options.seed,
      autoConsent: options.autoConsent,
      testClock: options.testClock,
      deviceInterval: options.deviceInterval,
    });
  } catch (error) {
    process.stderr.write(`scriptbox emulator: ${(error as Error).message}\n`);
    return 1;
  }
  if (emulator.seed) {
    process.stdout.write(Object.entries(emulator.seed).map(([key, value]) => `${key}=${value}\n`).join(""));
  }
  const flags = [options.autoConsent && "auto-consent", options.testClock && "test-clock"].filter(Boolean).join(", ");
  process.stderr.write(
    `scriptbox emulator listening on ${emulator.baseUrl} (database: ${options.db ?? "in memory"}${flags ? `; ${flags}` : ""})\n`,
  );

  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    onSignal = resolve;
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  await emulator.close();
  process.stderr.write(`scriptbox emulator: stopped (${signal})\n`);
  return 0;
}
