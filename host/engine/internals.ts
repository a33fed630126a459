// The only place that reaches into quickjs-emscripten-core's non-public fields. We pin
// the library to an exact version (package.json) and the startup self-test in
// rejection-tracker.ts fails loudly if these shapes change.
import { Lifetime, QuickJSRuntime, type QuickJSContext, type QuickJSHandle, type QuickJSWASMModule } from "quickjs-emscripten-core";

interface EmscriptenHeap {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}
interface FfiSubset {
  QTS_DupValuePointer(ctx: number, value: number): number;
  QTS_FreeValuePointer(ctx: number, value: number): void;
  QTS_ResolveException(ctx: number, value: number): number;
}

export function moduleHeap(module: QuickJSWASMModule): EmscriptenHeap {
  return (module as unknown as { module: EmscriptenHeap }).module;
}

export function runtimePointer(runtime: QuickJSRuntime): number {
  return (runtime as unknown as { rt: { value: number } }).rt.value;
}

export function contextPointer(context: QuickJSContext): number {
  return (context as unknown as { ctx: { value: number } }).ctx.value;
}

function contextFfi(context: QuickJSContext): FfiSubset {
  return (context as unknown as { ffi: FfiSubset }).ffi;
}

/**
 * Makes an owned handle from a JSValue held in wasm memory at `valuePointer` (8 bytes:
 * the wasm32 build NaN-boxes JSValue into an i64). The value is duplicated, so the
 * returned handle must be disposed like any other.
 */
export function dupValueAt(context: QuickJSContext, valuePointer: number): QuickJSHandle {
  const ownedPointer = contextFfi(context).QTS_DupValuePointer(contextPointer(context), valuePointer);
  return ownedHandle(context, ownedPointer);
}

/** A handle owning the JSValue* `ownedPointer` (freed when the handle is disposed), as the library makes them. */
export function ownedHandle(context: QuickJSContext, ownedPointer: number): QuickJSHandle {
  const memory = (context as unknown as { memory: { heapValueHandle(ptr: number): QuickJSHandle } }).memory;
  return memory.heapValueHandle(ownedPointer);
}

/**
 * An owned JSValue* returned by a function of the engine, as a handle; when it holds
 * JS_EXCEPTION, the pending exception instead (what quickjs-emscripten's own calls do).
 */
export function wrapValuePointer(context: QuickJSContext, ownedPointer: number): { value: QuickJSHandle; error?: undefined } | { error: QuickJSHandle } {
  const ffi = contextFfi(context);
  const errorPointer = ffi.QTS_ResolveException(contextPointer(context), ownedPointer);
  if (errorPointer) {
    ffi.QTS_FreeValuePointer(contextPointer(context), ownedPointer);
    return { error: ownedHandle(context, errorPointer) };
  }
  return { value: ownedHandle(context, ownedPointer) };
}

/** Address of the JSValue a handle points to (handles wrap JSValue* pointers). */
export function handleValuePointer(handle: QuickJSHandle): number {
  return handle.value as unknown as number;
}

interface HostRefMapInternals {
  nextId: number;
  freelist: number[];
  groups: Map<number, Map<number, object>>;
}

/** A runtime's host references (the library's HostRefMap: ids of the host functions its guest objects call). */
export interface HostRefState<T = object> {
  nextId: number;
  freelist: number[];
  entries: [id: number, value: T][];
}

function hostRefMap(runtime: QuickJSRuntime): HostRefMapInternals {
  return (runtime as unknown as { hostRefs: HostRefMapInternals }).hostRefs;
}

/** A copy of a runtime's host references, as they are now. */
export function hostRefState(runtime: QuickJSRuntime): HostRefState {
  const map = hostRefMap(runtime);
  const entries: [number, object][] = [];
  for (const group of map.groups.values()) for (const entry of group) entries.push(entry);
  return { nextId: map.nextId, freelist: [...map.freelist], entries };
}

/**
 * Gives a fresh runtime wrapper the host references `state` describes, each value mapped by
 * `valueFor` (the same ids, so the guest functions in a restored memory image call the new
 * realm's host functions). The library groups ids by `id >> 8`.
 */
export function setHostRefState<T>(runtime: QuickJSRuntime, state: HostRefState<T>, valueFor: (value: T) => object): void {
  const map = hostRefMap(runtime);
  map.nextId = state.nextId;
  map.freelist = [...state.freelist];
  map.groups.clear();
  for (const [id, value] of state.entries) {
    let group = map.groups.get(id >> 8);
    if (group === undefined) map.groups.set(id >> 8, (group = new Map()));
    group.set(id, valueFor(value));
  }
}

interface ModuleInternals {
  ffi: { QTS_FreeRuntime(rt: number): void };
  callbacks: { deleteRuntime(rt: number): void };
  module: unknown;
}

/**
 * A runtime wrapper around a JSRuntime that already exists in the engine's memory (one
 * restored from a memory image), made as the library's newRuntime makes one around a new
 * JSRuntime: disposing it frees the JSRuntime.
 */
export function runtimeAt(module: QuickJSWASMModule, pointer: number): QuickJSRuntime {
  const internals = module as unknown as ModuleInternals;
  const rt = new Lifetime(pointer, undefined, (rtPointer: number) => {
    internals.ffi.QTS_FreeRuntime(rtPointer);
    internals.callbacks.deleteRuntime(rtPointer);
  });
  return new QuickJSRuntime({ module: internals.module, callbacks: internals.callbacks, ffi: internals.ffi, rt } as unknown as ConstructorParameters<typeof QuickJSRuntime>[0]);
}
