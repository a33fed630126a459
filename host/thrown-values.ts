// Reading what the embedder's own code threw (a host function, an onLog listener). Such a
// value can be anything: null, a Symbol, a revoked Proxy, an object whose getters throw.
// These run in the embedder's message handlers, where a throw would be uncaught and end
// the process, so nothing here may throw, whatever the value.
import { inspect, types } from "node:util";

/** `value instanceof type`, false where asking throws (a revoked Proxy, a throwing getPrototypeOf trap). */
export function isInstance(value: unknown, type: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** A string property of a thrown value, or null (absent, not a string, or reading it threw). */
export function stringProperty(value: object, key: "name" | "message"): string | null {
  try {
    const read = (value as Record<string, unknown>)[key];
    return typeof read === "string" ? read : null;
  } catch {
    return null;
  }
}

/**
 * What a thrown non-Error says. A primitive as `util.inspect` writes it; an object only as
 * its `message` when that is a string: formatting its fields (a plain object of connection
 * settings, a library's error record) would hand a guest whatever the embedder's code
 * happened to put in it.
 */
export function describeThrown(value: unknown, maxLength: number): string {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return inspect(value, { breakLength: Infinity, maxStringLength: maxLength });
  const message = stringProperty(value, "message");
  const kind = typeof value === "function" ? "function" : "object";
  return message === null ? `a non-Error ${kind}` : `a non-Error ${kind}: ${message}`;
}

/** An Error's message, or what describeThrown says of anything else; at most `maxLength` characters. */
export function messageOfThrown(value: unknown, maxLength: number): string {
  const isError = isInstance(value, Error) || types.isNativeError(value);
  const text = isError ? (stringProperty(value as Error, "message") ?? "an error whose message could not be read") : describeThrown(value, maxLength);
  return text.slice(0, maxLength);
}
