// Web globals (URL, fetch, Blob, …) exist from the start but their module is only loaded
// when a script first touches one: an accessor on globalThis loads the module and
// replaces itself with a plain data property, as web IDL defines interface objects
// (writable, configurable, not enumerable). Assigning before touching also works.
import { defineProperty } from "./intrinsics.js";
import { requireModule } from "./modules.js";

/** Filled in at build time from the web and http modules' export lists: { name: "scriptbox:<module>" }. */
declare const __SCRIPTBOX_LAZY_GLOBALS__: Record<string, string>;

export function installLazyGlobals(global: typeof globalThis): void {
  const table = __SCRIPTBOX_LAZY_GLOBALS__;
  // One settle for all globals (a realm is built per run: two closures per global, not three).
  const settle = (name: string, value: unknown) => {
    // Prototype-free descriptor: a script may have put "get"/"set" on Object.prototype.
    defineProperty(global, name, { __proto__: null, value, writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
    return value;
  };
  // One descriptor object for all of them, its accessors replaced per global (defineProperty
  // copies what it reads): 32 fewer objects per realm. Prototype-free like settle's, though
  // no script has run yet when the core installs these.
  const descriptor = { __proto__: null, configurable: true, enumerable: false, get: undefined, set: undefined } as unknown as PropertyDescriptor;
  for (const name in table) {
    const moduleName = table[name]!; // prefixed at build time: no string built per global per realm
    descriptor.get = () => settle(name, (requireModule(moduleName) as Record<string, unknown>)[name]);
    descriptor.set = (value: unknown) => void settle(name, value);
    defineProperty(global, name, descriptor);
  }
}
