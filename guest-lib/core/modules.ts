// The guest's internal module registry. Guest modules are bundled separately and enter a
// realm only when first required: the host evaluates the module's factory on request
// (bridge.loadModule) and we call it with this require, so sibling modules share one
// instance of every class.
import bridge from "scriptbox:bridge";
import { MapCtor, TypeErrorCtor } from "./intrinsics.js";

const cache = new MapCtor<string, unknown>();
const loading = new MapCtor<string, true>();

export function registerModule(name: string, exports: unknown): void {
  cache.set(name, exports);
}

export function requireModule(name: string): unknown {
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  if (typeof name !== "string" || name.slice(0, 10) !== "scriptbox:") throw new TypeErrorCtor(`unknown internal module ${String(name)}`);
  if (loading.has(name)) throw new TypeErrorCtor(`circular guest module dependency on ${name}`);
  loading.set(name, true);
  try {
    const factory = bridge.loadModule(name.slice(10)) as (require: (name: string) => unknown) => unknown;
    const exports = factory(requireModule);
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
  const internal = typeof name === "string" ? PUBLIC_MODULES[name] : undefined;
  if (internal === undefined) throw new TypeErrorCtor(`no builtin module named ${String(name)}`);
  return requireModule(internal);
}
