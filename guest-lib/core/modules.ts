// The guest's internal module registry. Guest modules are bundled separately and enter a
// realm only when first required: the host evaluates the module's factory on request
// (bridge.loadModule) and we call it with this require, so sibling modules share one
// instance of every class.
import bridge from "scriptbox:bridge";
import { MapCtor, TypeErrorCtor, defineProperty } from "./intrinsics.js";

// What a guest module's top-level code (and esbuild's module prelude) relies on, captured
// before any script runs. A script may have replaced or deleted these by the time a module
// is first needed; the originals are put back only while the module's factory runs.
const getDescriptor = Object.getOwnPropertyDescriptor;
const deleteProperty = Reflect.deleteProperty;
const pristine: [holder: object, key: string, descriptor: PropertyDescriptor][] = [];
const capture = (holder: object, keys: string) => {
  const names = keys.split(" ");
  for (let i = 0; i < names.length; i++) pristine[pristine.length] = [holder, names[i]!, getDescriptor(holder, names[i]!)!];
};
capture(
  globalThis,
  "Object Array Function Symbol Reflect Map Set WeakMap WeakSet Promise JSON Error TypeError RangeError String Number Boolean RegExp Uint8Array ArrayBuffer DataView Date Math parseInt parseFloat",
);
capture(Object, "defineProperty defineProperties getOwnPropertyDescriptor getOwnPropertyNames getOwnPropertySymbols getPrototypeOf setPrototypeOf create keys freeze assign");
capture(Object.prototype, "hasOwnProperty toString");
capture(Function.prototype, "call apply bind");
capture(Array.prototype, "push pop slice indexOf map forEach join");

function withPristineBuiltins<T>(run: () => T): T {
  const changed: [object, string, PropertyDescriptor | undefined][] = [];
  for (let i = 0; i < pristine.length; i++) {
    const [holder, key, original] = pristine[i]!;
    const current = getDescriptor(holder, key);
    if (current !== undefined && current.value === original.value && current.get === original.get) continue;
    changed[changed.length] = [holder, key, current];
    defineProperty(holder, key, original);
  }
  try {
    return run();
  } finally {
    for (let i = 0; i < changed.length; i++) {
      const [holder, key, previous] = changed[i]!;
      if (previous === undefined) deleteProperty(holder, key);
      else defineProperty(holder, key, previous);
    }
  }
}

const cache = new MapCtor<string, unknown>();
const loading = new MapCtor<string, true>();

export function registerModule(name: string, exports: unknown): void {
  cache.set(name, exports);
}

/** Modules required since the last takeUsed(): what a run actually touched, loaded before or not. */
const used = new MapCtor<string, true>();

export function takeUsed(): string[] {
  const names: string[] = [];
  used.forEach((_value, name) => {
    names[names.length] = name;
  });
  used.clear();
  return names;
}

export function requireModule(name: string): unknown {
  used.set(name, true);
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  if (typeof name !== "string" || name.slice(0, 10) !== "scriptbox:") throw new TypeErrorCtor(`unknown internal module ${String(name)}`);
  if (loading.has(name)) throw new TypeErrorCtor(`circular guest module dependency on ${name}`);
  loading.set(name, true);
  try {
    const factory = bridge.loadModule(name.slice(10)) as (require: (name: string) => unknown) => unknown;
    const exports = withPristineBuiltins(() => factory(requireModule));
    cache.set(name, exports);
    return exports;
  } finally {
    loading.delete(name);
  }
}

/** The modules a script may import by bare name. */
const PUBLIC_MODULES: Record<string, string> = { http: "scriptbox:http", cloud: "scriptbox:cloud", runtime: "scriptbox:runtime" };

/** Serves `import … from "http"`: the host's module loader emits `__scriptbox.import("http")`. */
export function importPublicModule(name: string): unknown {
  // "host:app": the embedder's host module "app" (the host's loader serves `import … from "app"` so).
  if (typeof name === "string" && name.slice(0, 5) === "host:") {
    return (requireModule("scriptbox:host-modules") as { hostModule(name: string): unknown }).hostModule(name.slice(5));
  }
  const internal = typeof name === "string" ? PUBLIC_MODULES[name] : undefined;
  if (internal === undefined) throw new TypeErrorCtor(`no builtin module named ${String(name)}`);
  return requireModule(internal);
}
