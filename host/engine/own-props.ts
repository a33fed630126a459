// Reads named properties of a guest object of our own (the guest core's exports and
// hooks) with the engine's own entry points instead of quickjs-emscripten's getProp.
//
// A realm is built per run and the host keeps ten values of its core (the hooks object and
// its nine functions). Through the library each read made its key from the name anew (a
// cwrap copy onto the C stack and a malloc'd JSValue with a Lifetime, then disposed): in a
// sampling heap profile of a worker in a create-run-dispose loop, the key strings alone
// were ~7% of the worker's JavaScript garbage. Here the key is made from the name written
// into the engine once per engine instance (fixed-names.ts), and only the value gets a
// handle, as the library's would.
//
// For objects our own code made (frozen, plain data properties): a read there runs no
// guest code, so an exception can only be QuickJS's heap at its cap, which fails with a
// RangeError (reported as the memory limit). The library would hand out the exception as
// the value.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { namePointer, ownedOrThrow, rawExports } from "./fixed-names.js";
import type { EngineInstance } from "./instance.js";
import { contextPointer, handleValuePointer, ownedHandle } from "./internals.js";

/** `object[name]` for each name, as owned handles (each to be disposed), or none at all. */
export function readOwnProps<Name extends string>(context: QuickJSContext, engine: EngineInstance, object: QuickJSHandle, names: readonly Name[]): Record<Name, QuickJSHandle> {
  const raw = rawExports(engine);
  const ctx = contextPointer(context);
  const objectPointer = handleValuePointer(object);
  const read = {} as Record<Name, QuickJSHandle>;
  const made: QuickJSHandle[] = [];
  try {
    for (const name of names) {
      const key = ownedOrThrow(raw, ctx, raw._QTS_NewString(ctx, namePointer(engine, name)), "the key", name);
      let value: number;
      try {
        value = ownedOrThrow(raw, ctx, raw._QTS_GetProp(ctx, objectPointer, key), "the value of", name);
      } finally {
        raw._QTS_FreeValuePointer(ctx, key);
      }
      const handle = ownedHandle(context, value);
      made.push(handle);
      read[name] = handle;
    }
  } catch (error) {
    for (const handle of made) handle.dispose();
    throw error;
  }
  return read;
}
