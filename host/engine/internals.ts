// The only place that reaches into quickjs-emscripten-core's non-public fields. We pin
// the library to an exact version (package.json) and the startup self-test in
// rejection-tracker.ts fails loudly if these shapes change.
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";

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
