// Public types of host modules (re-exported by src/index.ts).
import type { AbortSignalType } from "../types.js";
import type { SyncHostFunction } from "./host-sync.js";

/** `this` of every host function call. */
export interface HostCallContext {
  /** Aborts when the run (or plugin load or call) that made the call ends, for any reason. */
  readonly signal: AbortSignalType;
  /** The sandbox's id (unique in this process). */
  readonly sandboxId: number;
  /** The run's (or plugin's) filename. */
  readonly filename: string;
}

/** A host module: functions (async by default, or marked with hostSync), nested plain objects, and copied values. */
export interface HostModule {
  [member: string]: unknown;
}

/** `modules` of createSandbox and sandbox.run: module name → host module. */
export type HostModules = Record<string, HostModule>;

/** How a value the host hands over looks in the guest (Dates as ISO strings, bytes as Uint8Array). */
export type GuestValue<T> = T extends Date
  ? string
  : T extends ArrayBuffer | ArrayBufferView
    ? Uint8Array
    : T extends readonly (infer Item)[]
      ? GuestValue<Item>[]
      : T extends (...args: never[]) => unknown
        ? never
        : T extends object
          ? { [K in keyof T]: GuestValue<T[K]> }
          : T;

/**
 * The guest's view of a host module: what a script gets from `import … from "app"`.
 * Synchronous functions (hostSync) return their value; the others return a promise.
 * Use it in the `declare module "app"` file you give your script authors, so that the
 * declaration and the host module cannot drift (see docs/host-modules.md).
 */
export type GuestModule<T> = {
  readonly [K in keyof T]: T[K] extends SyncHostFunction<infer F>
    ? (...args: Parameters<F>) => GuestValue<ReturnType<F>>
    : T[K] extends (...args: infer A) => infer R
      ? (...args: A) => Promise<GuestValue<Awaited<R>>>
      : T[K] extends Date | ArrayBuffer | ArrayBufferView | readonly unknown[]
        ? GuestValue<T[K]>
        : T[K] extends object
          ? GuestModule<T[K]>
          : T[K];
};
