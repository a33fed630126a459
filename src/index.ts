// Public library API of scriptbox. Thin re-exports: the work is done in host/ and emulator/.
export { startEmulator } from "../emulator/index.js";
export type { EmulatorOptions } from "../emulator/index.js";
