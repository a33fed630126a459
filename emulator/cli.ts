// Placeholder until the emulator issue lands (being built now); replaced wholesale.
export interface EmulatorCommandOptions {
  host: string;
  port: number;
  db?: string;
  seed: boolean;
  autoConsent: boolean;
  testClock: boolean;
  deviceInterval: number;
}
export async function runEmulatorCommand(_options: EmulatorCommandOptions): Promise<number> {
  process.stderr.write("scriptbox emulator: not built yet\n");
  return 1;
}
