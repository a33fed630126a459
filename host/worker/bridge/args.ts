// Argument checks for bridge functions. Guest code, ours or the script's, can call any
// bridge function with anything; every argument is checked here before it is used, and a
// bad one is a TypeError in the guest, never a host exception.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

export class BridgeArgumentError extends TypeError {}

export function stringArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string): string {
  if (handle === undefined || ctx.typeof(handle) !== "string") throw new BridgeArgumentError(`${what} must be a string`);
  return ctx.getString(handle);
}

/**
 * A string of at most `maxLength` characters; a longer one is refused by `tooLong(length)`
 * without being copied out of the guest (copying 1 MiB costs ~4 ms, beyond the reach of
 * the CPU limit's checks). The length is the string primitive's own, read by the engine:
 * no guest-defined accessor runs.
 */
export function stringArgUpTo(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string, maxLength: number, tooLong: (length: number) => Error): string {
  if (handle === undefined || ctx.typeof(handle) !== "string") throw new BridgeArgumentError(`${what} must be a string`);
  const lengthHandle = ctx.getProp(handle, "length");
  const length = ctx.getNumber(lengthHandle);
  lengthHandle.dispose();
  if (length > maxLength) throw tooLong(length);
  return ctx.getString(handle);
}

/** A string, or null for null/undefined. */
export function optionalStringArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string): string | null {
  const type = handle === undefined ? "undefined" : ctx.typeof(handle);
  if (type === "string") return ctx.getString(handle!);
  if (type === "undefined" || ctx.sameValue(handle!, ctx.null)) return null;
  throw new BridgeArgumentError(`${what} must be a string or null`);
}

export function booleanArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string): boolean {
  if (handle === undefined || ctx.typeof(handle) !== "boolean") throw new BridgeArgumentError(`${what} must be a boolean`);
  return ctx.dump(handle) === true;
}

export function integerArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string, min: number, max: number): number {
  if (handle === undefined || ctx.typeof(handle) !== "number") throw new BridgeArgumentError(`${what} must be a number`);
  const value = ctx.getNumber(handle);
  if (!Number.isInteger(value) || value < min || value > max) throw new BridgeArgumentError(`${what} must be an integer from ${min} to ${max}`);
  return value;
}

export function numberArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string, min: number, max: number): number {
  if (handle === undefined || ctx.typeof(handle) !== "number") throw new BridgeArgumentError(`${what} must be a number`);
  const value = ctx.getNumber(handle);
  if (!(value >= min && value <= max)) throw new BridgeArgumentError(`${what} must be a number from ${min} to ${max}`);
  return value;
}

/** Copies an ArrayBuffer argument out of the engine (null/undefined → null). */
export function optionalBytesArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string): Uint8Array | null {
  if (handle === undefined || ctx.typeof(handle) === "undefined") return null;
  if (ctx.sameValue(handle, ctx.null)) return null;
  let view;
  try {
    view = ctx.getArrayBuffer(handle);
  } catch {
    throw new BridgeArgumentError(`${what} must be an ArrayBuffer or null`);
  }
  // The view dies when the wasm heap grows: copy at once.
  return view.consume((bytes) => bytes.value.slice());
}

/** A guest function the host will call later: returned as an owned duplicate handle. */
export function functionArg(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string): QuickJSHandle {
  if (handle === undefined || ctx.typeof(handle) !== "function") throw new BridgeArgumentError(`${what} must be a function`);
  return handle.dup();
}

/**
 * Lends the bytes of an ArrayBuffer argument to `use` without copying them out of the
 * engine. `use` must not call into the engine (the view dies when the wasm heap grows).
 */
export function withBytesArg<T>(ctx: QuickJSContext, handle: QuickJSHandle | undefined, what: string, use: (bytes: Uint8Array) => T): T {
  if (handle === undefined || ctx.typeof(handle) !== "object" || ctx.sameValue(handle, ctx.null)) throw new BridgeArgumentError(`${what} must be an ArrayBuffer`);
  let view;
  try {
    view = ctx.getArrayBuffer(handle);
  } catch {
    throw new BridgeArgumentError(`${what} must be an ArrayBuffer`);
  }
  return view.consume((bytes) => use(bytes.value));
}
