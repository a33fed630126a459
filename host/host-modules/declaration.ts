// Validates the `modules` option (createSandbox, sandbox.run, runScript) on the embedder's
// thread and turns it into two things: the embedder's own table of host functions (kept
// here, never sent anywhere) and a manifest of the modules' shape and copied values (sent
// to the worker and, from there, to the guest).
import { encodeForGuest, toCrossable } from "../marshal/crossing-values.js";
import { PUBLIC_MODULES } from "../worker/guest-bundle.js";
import { isSyncHostFunction } from "./host-sync.js";
import type { HostModuleManifest, HostModulesManifest, ShapeNode } from "./manifest.js";

export interface HostFunctionEntry {
  readonly fn: (...args: unknown[]) => unknown;
  readonly sync: boolean;
  /** "app.store.get" */
  readonly label: string;
}

export interface DeclaredModules {
  readonly manifest: HostModulesManifest;
  /** Functions numbered from the `firstId` given to declareHostModules. */
  readonly functions: readonly HostFunctionEntry[];
}

export const NO_MODULES: DeclaredModules = Object.freeze({ manifest: {}, functions: [] });

/** Nesting of plain objects in a module (a deeper declaration is a mistake, or a cycle). */
const MAX_DEPTH = 16;
const MAX_FUNCTIONS = 10_000;
const NAME = /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9_$][a-z0-9._$-]*$/i;

export function checkModuleName(name: string, what: string): void {
  const where = `${what}: module name "${name}"`;
  if (name.startsWith(".") || name.startsWith("/")) throw new TypeError(`${where} is a relative path; host modules are imported by bare name ("app", "@acme/app")`);
  if (name.includes(":")) throw new TypeError(`${where} has a scheme; names such as node:… and scriptbox:… are reserved`);
  if ((PUBLIC_MODULES as readonly string[]).includes(name) || name === "scriptbox") {
    throw new TypeError(`${where} clashes with a builtin module (${PUBLIC_MODULES.join(", ")})`);
  }
  if (name.length > 128 || !NAME.test(name)) throw new TypeError(`${where} is not a valid module name (letters, digits, _ $ . -, optionally @scope/)`);
  // A name the guest's module table (a plain object) cannot hold as an own key: a module
  // named so was accepted and its import failed with "Cannot find module" (found by review).
  if (name === "__proto__") throw new TypeError(`${where} is reserved (it names an object's prototype)`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Validates `modules` (undefined: none) and numbers its functions from `firstId` (a run's
 * modules continue the sandbox's numbering, so one table serves the run).
 */
export function declareHostModules(modules: unknown, what: string, firstId = 0): DeclaredModules {
  if (modules === undefined) return NO_MODULES;
  if (!isPlainObject(modules)) throw new TypeError(`${what} must be an object of modules (name → module object)`);
  const functions: HostFunctionEntry[] = [];
  const manifest: HostModulesManifest = {};
  for (const name of Object.keys(modules)) {
    checkModuleName(name, what);
    const module = modules[name];
    if (!isPlainObject(module)) throw new TypeError(`${what}.${name} must be a plain object of functions, objects and values`);
    const values: unknown[] = [];
    const described: Record<number, [string, 0 | 1]> = {};
    const walk = (object: Record<string, unknown>, path: string, ancestors: object[]): Record<string, ShapeNode> => {
      if (ancestors.length >= MAX_DEPTH) throw new TypeError(`${what}: ${path} is nested more than ${MAX_DEPTH} levels deep`);
      if (ancestors.includes(object)) throw new TypeError(`${what}: ${path} refers to itself (a cycle)`);
      ancestors.push(object);
      const members: Record<string, ShapeNode> = {};
      for (const key of Object.keys(object)) {
        const value = object[key];
        const label = `${path}.${key}`;
        let node: ShapeNode;
        if (typeof value === "function") {
          if (functions.length >= MAX_FUNCTIONS) throw new TypeError(`${what}: more than ${MAX_FUNCTIONS} host functions`);
          const id = firstId + functions.length;
          const sync = isSyncHostFunction(value);
          functions.push({ fn: value as HostFunctionEntry["fn"], sync, label });
          described[id] = [label, sync ? 1 : 0];
          node = sync ? { f: id, s: 1 } : { f: id };
        } else if (isPlainObject(value)) {
          node = { o: walk(value, label, ancestors) };
        } else {
          values.push(toCrossable(value, `${what}: ${label}`));
          node = { v: values.length - 1 };
        }
        // A "__proto__" key is data here: assignment would set the prototype.
        if (key === "__proto__") Object.defineProperty(members, key, { value: node, enumerable: true, writable: true, configurable: true });
        else members[key] = node;
      }
      ancestors.pop();
      return members;
    };
    const members = walk(module, name, []);
    manifest[name] = {
      members: JSON.stringify(members),
      names: Object.keys(members),
      values: encodeForGuest(values),
      functions: JSON.stringify(described),
    } satisfies HostModuleManifest;
  }
  return { manifest, functions };
}
