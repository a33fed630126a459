// Marks a host function as synchronous: the guest gets its return value directly instead
// of a promise, and its worker thread waits (Atomics.wait) while the function runs on the
// embedder's thread. For hot, quick functions only (an in-memory store lookup).
declare const syncBrand: unique symbol;

/** A host function marked with hostSync (the brand is a type only; see GuestModule). */
export type SyncHostFunction<F extends (...args: never[]) => unknown> = F & { readonly [syncBrand]: true };

const marked = new WeakSet<object>();

export function hostSync<F extends (...args: never[]) => unknown>(fn: F): SyncHostFunction<F> {
  if (typeof fn !== "function") throw new TypeError("hostSync(fn): fn must be a function");
  if (fn.constructor?.name === "AsyncFunction") throw new TypeError(`hostSync(fn): ${fn.name || "the function"} is async; a synchronous host function must return its value`);
  marked.add(fn);
  return fn as SyncHostFunction<F>;
}

export function isSyncHostFunction(fn: unknown): boolean {
  return typeof fn === "function" && marked.has(fn);
}
