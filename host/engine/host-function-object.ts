// An object of host functions (the bridge a realm's guest core requires), made with the
// engine's own entry points instead of quickjs-emscripten's newFunction + setProp.
//
// A realm is built per run, and its bridge has 21 functions. Through the library each
// one cost a UTF-8 copy of its name onto the C stack (cwrap's "string" argument), a
// Lifetime for the function, another malloc'd copy of the name as a JSValue key with a
// Lifetime of its own, and their disposal: the bridge took 78-86 µs of every realm on
// this VM (42-47 µs this way), and was ~40% of the worker's JavaScript garbage in a
// create-run-dispose loop (a sampling heap profile). Here the names are written into the
// engine's memory once per engine instance, and each function is three calls into the
// engine with no JavaScript object per function.
//
// Semantics are the library's newFunction(name, fn) and setProp(object, name, fn): the
// function's host reference lives in the runtime's hostRefs (freed by the engine when
// the function is collected), and QTS_SetProp duplicates the value it stores.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { contextPointer, moduleHeap } from "./internals.js";

type HostFunction = (this: QuickJSHandle, ...args: QuickJSHandle[]) => unknown;

/** The engine's exports these calls use (the functions quickjs-emscripten's ffi wraps with cwrap). */
interface RawExports {
  _malloc(bytes: number): number;
  _QTS_NewFunction(ctx: number, name: number, length: number, isConstructor: number, hostRefId: number): number;
  _QTS_NewString(ctx: number, text: number): number;
  _QTS_SetProp(ctx: number, object: number, key: number, value: number): void;
  _QTS_FreeValuePointer(ctx: number, value: number): void;
}

interface ContextInternals {
  runtime: { hostRefs: { put(value: unknown): number; delete(id: number): void } };
}

/** Each engine instance's copies of the names, as NUL-terminated UTF-8 in its memory (never freed: they live as long as it). */
const namePointers = new WeakMap<EngineInstance, Map<string, number>>();

function namePointer(engine: EngineInstance, name: string): number {
  let names = namePointers.get(engine);
  if (names === undefined) namePointers.set(engine, (names = new Map()));
  let pointer = names.get(name);
  if (pointer !== undefined) return pointer;
  const bytes = new TextEncoder().encode(`${name}\0`);
  pointer = moduleHeap(engine.module)._malloc(bytes.length);
  if (pointer === 0) throw new WebAssembly.RuntimeError("out of memory for a host function's name");
  // A view made now: the malloc may have grown (and detached) the memory.
  new Uint8Array(engine.memory.buffer, pointer, bytes.length).set(bytes);
  names.set(name, pointer);
  return pointer;
}

/** A new guest object whose property `name` is a host function calling `fn`, for each entry. */
export function newHostFunctionObject(context: QuickJSContext, engine: EngineInstance, functions: Iterable<readonly [string, HostFunction]>): QuickJSHandle {
  const raw = moduleHeap(engine.module) as unknown as RawExports;
  const { hostRefs } = (context as unknown as ContextInternals).runtime;
  const ctx = contextPointer(context);
  const object = context.newObject();
  const objectPointer = object.value as unknown as number;
  try {
    for (const [name, fn] of functions) {
      const nameAt = namePointer(engine, name);
      const refId = hostRefs.put(fn);
      const value = raw._QTS_NewFunction(ctx, nameAt, 0, 0, refId);
      if (value === 0) {
        hostRefs.delete(refId);
        throw new WebAssembly.RuntimeError(`out of memory for host function ${name}`);
      }
      const key = raw._QTS_NewString(ctx, nameAt);
      try {
        raw._QTS_SetProp(ctx, objectPointer, key, value);
      } finally {
        raw._QTS_FreeValuePointer(ctx, key);
        raw._QTS_FreeValuePointer(ctx, value);
      }
    }
  } catch (error) {
    object.dispose();
    throw error;
  }
  return object;
}
