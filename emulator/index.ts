// Placeholder until the emulator issue lands (being built now); replaced wholesale.
export interface EmulatorOptions {
  port?: number;
  host?: string;
  dbPath?: string;
  seed?: boolean;
  autoConsent?: boolean;
  testClock?: boolean;
  deviceInterval?: number;
}
export async function startEmulator(_options: EmulatorOptions = {}): Promise<never> {
  throw new Error("the cloud API emulator is not built yet");
}
