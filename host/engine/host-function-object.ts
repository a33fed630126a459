// An object of host functions (the bridge a realm's guest core requires), made with the
// engine's own entry points instead of quickjs-emscripten's newFunction + setProp.
//
// A realm is built per run, and its bridge has 21 functions. Through the library each
// one cost a UTF-8 copy of its name onto the C stack (cwrap's "string" argument), a
// Lifetime for the function, another malloc'd copy of the name as a JSValue key with a
// Lifetime of its own, and their disposal: the bridge took 78-86 µs of every realm on
// this VM (42-47 µs this way), and was ~40% of the worker's JavaScript garbage in a
// create-run-dispose loop (a sampling heap profile). Here the names are written into the
// engine's memory once per engine instance, and each function is five calls into the
// engine (make the function, make its key, set the property, free both holders) with no
// Lifetime and no copy of its name.
//
// Semantics are the library's newFunction(name, fn) and setProp(object, name, fn): a
// function named `name`, not a constructor, made with the arguments the library passes
// (fn.length as its length, which the engine does not apply: both make length 0); its
// host reference lives in the runtime's hostRefs (freed by the engine when the function
// is collected); QTS_SetProp duplicates the value it stores. Where the library would store
// QuickJS's out-of-memory exception as the property's value, this fails with a RangeError.
// Not checked, as in the library: QTS_SetProp's own failure (it returns nothing), the name
// QTS_NewFunction sets, and an exception whose holder QTS_ResolveException could not
// malloc (then read as no exception). Each needs the heap at its cap in the few bytes
// between two checks; a realm is only built with room for one (acquireRealm).
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { namePointer, ownedOrThrow, rawExports } from "./fixed-names.js";
import type { EngineInstance } from "./instance.js";
import { contextPointer } from "./internals.js";

type HostFunction = (this: QuickJSHandle, ...args: QuickJSHandle[]) => unknown;

interface ContextInternals {
  runtime: { hostRefs: { put(value: unknown): number } };
}

/** A new guest object whose property `name` is a host function calling `fn`, for each entry. */
export function newHostFunctionObject(context: QuickJSContext, engine: EngineInstance, functions: Iterable<readonly [string, HostFunction]>): QuickJSHandle {
  const raw = rawExports(engine);
  const { hostRefs } = (context as unknown as ContextInternals).runtime;
  const ctx = contextPointer(context);
  const object = context.newObject();
  const objectPointer = object.value as unknown as number;
  try {
    for (const [name, fn] of functions) {
      const nameAt = namePointer(engine, name);
      const refId = hostRefs.put(fn);
      // An owned JSValue*: 0 when malloc failed (then the host reference stays: the
      // function object, if it was made, holds it), or holding QuickJS's exception when its
      // heap is at the cap (the library stores that value as is; here it fails the build).
      const value = ownedOrThrow(raw, ctx, raw._QTS_NewFunction(ctx, nameAt, fn.length, 0, refId), "host function", name);
      let key = 0;
      try {
        key = ownedOrThrow(raw, ctx, raw._QTS_NewString(ctx, nameAt), "host function", name);
        raw._QTS_SetProp(ctx, objectPointer, key, value);
      } finally {
        if (key !== 0) raw._QTS_FreeValuePointer(ctx, key);
        raw._QTS_FreeValuePointer(ctx, value);
      }
    }
  } catch (error) {
    object.dispose();
    throw error;
  }
  return object;
}
