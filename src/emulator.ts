// startEmulator, loaded on first use: the emulator pulls in fastify, graphql and SQLite,
// which an application that only embeds sandboxes should not pay for at import time.
import type { EmulatorOptions, RunningEmulator } from "../emulator/index.js";

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const emulator = await import("../emulator/index.js");
  return emulator.startEmulator(options);
}
