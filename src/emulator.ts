// startEmulator, loaded on first use: the emulator pulls in fastify, graphql and SQLite
// (optional peer dependencies), which an application that only embeds sandboxes neither
// installs nor pays for at import time.
import type { EmulatorOptions, RunningEmulator } from "../emulator/index.js";
import { withEmulatorPackages } from "./emulator-peers.js";

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  return withEmulatorPackages(async () => {
    const emulator = await import("../emulator/index.js");
    return emulator.startEmulator(options);
  });
}
