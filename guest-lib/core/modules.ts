// The guest's internal module registry. Guest modules are bundled separately and enter a
// realm only when first required: the host evaluates the module's factory on request
// (bridge.loadModule) and we call it with this require, so sibling modules share one
// instance of every class.
import bridge from "scriptbox:bridge";
import { MapCtor, TypeErrorCtor, defineProperty, mapClear, mapDelete, mapGet, mapHas, mapIteratorNext, mapKeys, mapSet, stringSlice, defineData } from "./intrinsics.js";

// What a guest module's top-level code (and esbuild's module prelude) relies on, captured
// before any script runs. A script may have replaced or deleted these by the time a module
// is first needed; the originals are put back only while the module's factory runs.
const getDescriptor = Object.getOwnPropertyDescriptor;
const deleteProperty = Reflect.deleteProperty;
const setPrototype = Object.setPrototypeOf;
// Parallel lists, read by index only: destructuring would run the array iterator, and a
// descriptor object with a prototype would make defineProperty consult Object.prototype
// (where a script may have put a "get" accessor). Everything here is prototype-free.
const holders: object[] = [];
const keysOf: PropertyKey[] = [];
/**
 * The original values: every captured builtin is a data property with the attributes the
 * spec gives built-in methods and constructors (writable, configurable, not enumerable),
 * so the value is all there is to keep (no descriptor object per builtin in every realm).
 * ABSENT: the property must be absent (a descriptor key a script put on Object.prototype).
 */
const originals: unknown[] = [];
const ABSENT: object = setPrototype({}, null);

/** A property's own descriptor, copied into a prototype-free object (or undefined). */
function ownDescriptor(holder: object, key: PropertyKey): PropertyDescriptor | undefined {
  const descriptor = getDescriptor(holder, key);
  if (descriptor !== undefined) setPrototype(descriptor, null);
  return descriptor;
}

// Runs only while the core itself is evaluated, when the realm is built and no script has
// run yet: the builtins are still the engine's own, so plain index stores are safe here
// (and cheaper than defineData or push, which matters in a realm built for every run).
// Every captured key is then an own property whose value is never undefined, or absent
// (Object.prototype's descriptor keys): a plain read tells which, without a hasOwn call
// per key (~60 uncurried calls were a fifth of the core's top level).
let captured = 0;
const capture = (holder: object, keys: string | PropertyKey[]) => {
  const names = typeof keys === "string" ? keys.split(" ") : keys;
  for (let i = 0; i < names.length; i++) {
    const key = names[i]!;
    const value = (holder as Record<PropertyKey, unknown>)[key];
    holders[captured] = holder;
    keysOf[captured] = key;
    originals[captured++] = value === undefined ? ABSENT : value;
  }
};
capture(
  globalThis,
  "Object Array Function Symbol Reflect Map Set WeakMap WeakSet Promise JSON Error TypeError RangeError String Number Boolean RegExp Uint8Array ArrayBuffer DataView Date Math parseInt parseFloat",
);
capture(Object, "defineProperty defineProperties getOwnPropertyDescriptor getOwnPropertyNames getOwnPropertySymbols getPrototypeOf setPrototypeOf create keys freeze assign");
capture(Object.prototype, "hasOwnProperty toString");
capture(Function.prototype, "call apply bind");
capture(Array.prototype, "push pop slice indexOf map forEach join");
// esbuild's module prelude iterates arrays (for…of) and defines properties with descriptor
// literals, which inherit from Object.prototype: keys a script adds there must be absent.
capture(Array.prototype, [Symbol.iterator]);
capture(Object.getPrototypeOf([][Symbol.iterator]()) as object, ["next"]);
capture(Object.prototype, ["get", "set", "value", "writable", "enumerable", "configurable"]);
for (const list of [holders, keysOf, originals]) setPrototype(list, null);

function withPristineBuiltins<T>(run: () => T): T {
  const changedAt: number[] = [];
  const previous: (PropertyDescriptor | undefined)[] = [];
  setPrototype(changedAt, null);
  setPrototype(previous, null);
  for (let i = 0; i < holders.length; i++) {
    const original = originals[i];
    const current = ownDescriptor(holders[i]!, keysOf[i]!);
    if (original === ABSENT ? current === undefined : current !== undefined && current.value === original && current.get === undefined) continue;
    const at = changedAt.length;
    defineData(changedAt, at, i);
    defineData(previous, at, current);
    if (original === ABSENT) deleteProperty(holders[i]!, keysOf[i]!);
    else defineProperty(holders[i]!, keysOf[i]!, { __proto__: null, value: original, writable: true, enumerable: false, configurable: true } as PropertyDescriptor);
  }
  try {
    return run();
  } finally {
    for (let at = 0; at < changedAt.length; at++) {
      const i = changedAt[at]!;
      const before = previous[at];
      if (before === undefined) deleteProperty(holders[i]!, keysOf[i]!);
      else defineProperty(holders[i]!, keysOf[i]!, before);
    }
  }
}

const cache = new MapCtor<string, unknown>();
const loading = new MapCtor<string, true>();

// The registry's maps are used through methods captured at realm creation: the host calls
// takeUsed after every run, and a script may have replaced Map.prototype.forEach or get.
export function registerModule(name: string, exports: unknown): void {
  mapSet(cache, name, exports);
}

/** Modules required since the last takeUsed(): what a run actually touched, loaded before or not. */
const used = new MapCtor<string, true>();

export function takeUsed(): string[] {
  const names: string[] = [];
  const iterator = mapKeys(used);
  for (let step = mapIteratorNext(iterator); !step.done; step = mapIteratorNext(iterator)) defineData(names, names.length, step.value);
  mapClear(used);
  return names;
}

export function requireModule(name: string): unknown {
  // Checked before anything is recorded: the host reads `used` after every run, and a
  // non-string there (a script's __scriptbox.import("valueOf") once put a function in)
  // failed that read and disposed the sandbox.
  if (typeof name !== "string") throw new TypeErrorCtor("an internal module name must be a string");
  const cached = mapGet(cache, name);
  if (cached !== undefined) {
    mapSet(used, name, true);
    return cached;
  }
  if (stringSlice(name, 0, 10) !== "scriptbox:") throw new TypeErrorCtor(`unknown internal module ${name}`);
  mapSet(used, name, true);
  if (mapHas(loading, name)) throw new TypeErrorCtor(`circular guest module dependency on ${name}`);
  mapSet(loading, name, true);
  try {
    const factory = bridge.loadModule(stringSlice(name, 10)) as (require: (name: string) => unknown) => unknown;
    const exports = withPristineBuiltins(() => factory(requireModule));
    mapSet(cache, name, exports);
    return exports;
  } finally {
    mapDelete(loading, name);
  }
}

/** The modules a script may import by bare name. */
const PUBLIC_MODULES = { __proto__: null, http: "scriptbox:http", cloud: "scriptbox:cloud", runtime: "scriptbox:runtime" } as unknown as Record<string, string | undefined>;

/** Serves `import … from "http"`: the host's module loader emits `__scriptbox.import("http")`. */
export function importPublicModule(name: string): unknown {
  // "host:app": the embedder's host module "app" (the host's loader serves `import … from "app"` so).
  // The name comes from any script (the global is visible): only a string, read with the
  // captured builtins, and looked up in a table without a prototype ("valueOf" is no module).
  if (typeof name !== "string") throw new TypeErrorCtor("a module name must be a string");
  if (stringSlice(name, 0, 5) === "host:") {
    return (requireModule("scriptbox:host-modules") as { hostModule(name: string): unknown }).hostModule(stringSlice(name, 5));
  }
  const internal = PUBLIC_MODULES[name];
  if (typeof internal !== "string") throw new TypeErrorCtor(`no builtin module named ${name}`);
  return requireModule(internal);
}
