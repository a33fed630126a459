// What the engine-level helpers that bypass quickjs-emscripten's per-call conveniences
// share (host-function-object.ts makes the bridge object, own-props.ts reads the core's
// hooks): the engine exports they call, fixed names written into each engine instance's
// memory once, and the check of a value the engine returns.
//
// A realm is built per run. Through the library, every name used as a property key cost
// a UTF-8 copy onto the C stack (cwrap's "string" argument), a malloc'd JSValue with a
// Lifetime, and their disposal, per realm; here a name is copied into the engine once per
// engine instance and made into a key with one call.
import type { EngineInstance } from "./instance.js";
import { moduleHeap } from "./internals.js";
import { registerHeapCache } from "./memory-image.js";

/** The engine's exports these helpers use (the functions quickjs-emscripten's ffi wraps with cwrap). */
export interface RawExports {
  _malloc(bytes: number): number;
  _QTS_NewFunction(ctx: number, name: number, length: number, isConstructor: number, hostRefId: number): number;
  _QTS_NewString(ctx: number, text: number): number;
  _QTS_GetProp(ctx: number, object: number, key: number): number;
  _QTS_SetProp(ctx: number, object: number, key: number, value: number): void;
  _QTS_FreeValuePointer(ctx: number, value: number): void;
  _QTS_ResolveException(ctx: number, value: number): number;
}

export function rawExports(engine: EngineInstance): RawExports {
  return moduleHeap(engine.module) as unknown as RawExports;
}

/**
 * Each engine instance's copies of the names, as NUL-terminated UTF-8 in its memory, never
 * freed (they live as long as it): callers pass fixed sets of names (the bridge's, the
 * core's hooks), never names that come from a script or a configuration, which would grow
 * this without bound.
 */
const namePointers = new WeakMap<EngineInstance, Map<string, number>>();
// A memory image (memory-image.ts) puts back the heap as it was: names written since are gone.
registerHeapCache({
  save: (engine) => new Map(namePointers.get(engine)),
  restore: (engine, saved) => namePointers.set(engine, new Map(saved as Map<string, number>)),
});

export function namePointer(engine: EngineInstance, name: string): number {
  let names = namePointers.get(engine);
  if (names === undefined) namePointers.set(engine, (names = new Map()));
  let pointer = names.get(name);
  if (pointer !== undefined) return pointer;
  const bytes = new TextEncoder().encode(`${name}\0`);
  pointer = rawExports(engine)._malloc(bytes.length);
  if (pointer === 0) throw new RangeError(`out of memory for the name ${name}`);
  // A view made now: the malloc may have grown (and detached) the memory.
  new Uint8Array(engine.memory.buffer, pointer, bytes.length).set(bytes);
  names.set(name, pointer);
  return pointer;
}

/**
 * `pointer` as returned by an engine function that makes a value: 0 (no memory for the
 * JSValue holder) or a JSValue holding the exception (QuickJS's heap at its limit) fail
 * with a RangeError "out of memory for <what> <name>", which a realm's build reports as the
 * memory limit. (Two arguments, joined only on failure: a message built for every call
 * was garbage made per property per realm.)
 */
export function ownedOrThrow(raw: RawExports, ctx: number, pointer: number, what: string, name: string): number {
  if (pointer === 0) throw new RangeError(`out of memory for ${what} ${name}`);
  const exception = raw._QTS_ResolveException(ctx, pointer);
  if (exception === 0) return pointer;
  raw._QTS_FreeValuePointer(ctx, exception);
  raw._QTS_FreeValuePointer(ctx, pointer);
  throw new RangeError(`out of memory for ${what} ${name}`);
}
