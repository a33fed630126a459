// Describes a thrown value for the host: { name, message, stack } as JSON text. Every
// property read is guarded: a script may throw objects whose getters throw or lie.
import { inspect } from "scriptbox:core";
import { ErrorCtor, StringCtor, jsonStringify } from "scriptbox:intrinsics";

function read(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : value === undefined ? undefined : StringCtor(value);
  } catch {
    return undefined;
  }
}

export function describeError(value: unknown): string {
  if (value instanceof ErrorCtor || (typeof value === "object" && value !== null && "message" in value && "stack" in value)) {
    const error = value as Error;
    return jsonStringify({
      name: read(() => error.name) ?? "Error",
      message: read(() => error.message) ?? "",
      stack: read(() => error.stack) ?? "",
    }) as string;
  }
  // `throw 42`, `throw "text"`, `throw { code: 1 }`: no name, no stack; say what it was.
  let shown: string;
  try {
    shown = inspect(value);
  } catch {
    shown = "<a value that could not be formatted>";
  }
  return jsonStringify({ name: "Error", message: `Uncaught ${shown}`, stack: "" }) as string;
}
