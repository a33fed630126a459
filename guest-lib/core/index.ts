// The guest core: the only guest code evaluated in every realm, when the realm is built.
// A realm is built for every run, so this file stays tiny: it arrives as bytecode (no
// parsing), but what its top level runs (captures, lazy globals, registrations) is paid
// per run: everything else (console, timers, crypto, value marshalling, web classes, fetch, cloud)
// is a module that enters the realm when a script first touches one of its globals or
// imports it.
//
// It installs the lazy globals and the hidden `__scriptbox.import` the host's module
// loader uses to serve `import … from "http"`, and returns the hooks the host calls.
import bridge from "scriptbox:bridge";
import { defineProperty, freeze, intrinsicsModule, jsonParse, jsonStringList, jsonStringify, objectKeys } from "./intrinsics.js";
import { installLazyGlobals } from "./lazy-globals.js";
import { importPublicModule, registerModule, requireModule, takeUsed } from "./modules.js";
import type * as Timers from "../timers/index.js";
import type * as Marshal from "../marshal/index.js";

type InspectModule = { inspect(value: unknown): string };
const timers = () => requireModule("scriptbox:timers") as typeof Timers;
const marshal = () => requireModule("scriptbox:marshal") as typeof Marshal;

registerModule("scriptbox:bridge", bridge);
registerModule("scriptbox:intrinsics", intrinsicsModule);
installLazyGlobals(globalThis);
defineProperty(globalThis, "self", { value: globalThis, writable: true, configurable: true, enumerable: false });
defineProperty(globalThis, "__scriptbox", {
  value: freeze({ import: importPublicModule }),
  writable: false,
  enumerable: false,
  configurable: false,
});

// What other guest modules get from `import … from "scriptbox:core"`.
export function setTimer(callback: () => void, delayMs: number, repeat: boolean, unref: boolean): number {
  return timers().setTimer(callback, delayMs, repeat, unref);
}
export function clearTimer(id: number): void {
  timers().clearTimer(id);
}
export function queueMicrotask(callback: () => void): void {
  timers().queueMicrotask(callback);
}
export function inspect(value: unknown): string {
  return (requireModule("scriptbox:inspect") as InspectModule).inspect(value);
}
export { requireModule as require };
registerModule("scriptbox:core", freeze({ setTimer, clearTimer, queueMicrotask, inspect, require: requireModule }));

const ERROR_TYPES: Record<string, ErrorConstructor> = { TypeError, RangeError, Error, SyntaxError };

/** Entry points for the host. */
export const hooks = freeze({
  dispatchTimer: (id: number) => timers().dispatchTimer(id),
  serialize: (value: unknown, rootName: string) => marshal().serialize(value, rootName),
  /** `plain`: the host found no marker in the JSON and sent no bytes, so parsing is all there is to do. */
  deserialize: (json: string, buffers: ArrayBuffer[], plain: boolean) => (plain ? jsonParse(json) : marshal().deserialize(json, buffers)),
  describeError: (error: unknown) => marshal().describeError(error),
  /** Lets the host throw real guest errors (instanceof TypeError works) from bridge functions. */
  makeError: (name: string, message: string) => new (ERROR_TYPES[name] ?? Error)(message),
  /**
   * String results as JSON (JSON keeps NULs and lone surrogates intact). A long one goes
   * through the marshal module, which writes it in parts (a string of millions of control
   * characters was one JSON.stringify call the interrupt does not reach; values.ts PART).
   */
  stringify: (text: string) => (text.length <= 32768 ? jsonStringify(text) : marshal().serialize(text, "result")[0]),
  /** A plugin module's export names, as JSON (no toJSON lookups: see jsonStringList). */
  exportNames: (namespace: object) => jsonStringList(objectKeys(namespace)),
  /** Loads a guest module ahead of use (spare realms, while the worker is idle). */
  preload: (name: string) => void requireModule(`scriptbox:${name}`),
  /** The guest modules required since the last call, as JSON (for the host's usage statistics). */
  usedModules: () => jsonStringList(takeUsed()),
});
