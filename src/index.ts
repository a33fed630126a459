// Public library API of scriptbox. Thin re-exports: the work is done in host/ and emulator/.
export { createSandbox, runScript, Sandbox, Plugin } from "../host/sandbox.js";
export { SandboxDisposedError, ScriptError } from "../host/errors.js";
export { DEFAULT_LIMITS } from "../host/limits.js";
export { configurePool, poolStats, warmPool, type PoolOptions, type PoolStats } from "../host/pool.js";
export { HostError } from "../host/host-modules/host-error.js";
export { hostSync, type SyncHostFunction } from "../host/host-modules/host-sync.js";
export type { GuestModule, GuestValue, HostCallContext, HostModule, HostModules } from "../host/host-modules/types.js";
export type {
  CallOptions,
  CloudOption,
  ErrorKind,
  Limits,
  LoadOptions,
  LogEntry,
  LogLevel,
  RunOptions,
  RunResult,
  RunScriptOptions,
  RunStats,
  SandboxError,
  SandboxOptions,
  SecretOption,
} from "../host/types.js";
export { startEmulator } from "./emulator.js";
export type { EmulatorOptions, RunningEmulator, EmulatorSeed, SeededUser } from "../emulator/index.js";
// The token prefixes only (node:crypto): the emulator's server stack is not loaded by this.
export { TOKEN_PREFIXES } from "../emulator/secrets.js";
