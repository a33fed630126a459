// Describes a thrown value for the host: { name, message, stack } as JSON text. Every
// property read is guarded: a script may throw objects whose getters throw or lie.
import { inspect } from "scriptbox:core";
import { ErrorCtor, StringCtor, jsonStringify, stringSlice } from "scriptbox:intrinsics";

/**
 * The most of an error's name, message and stack the host is given: a script may throw an
 * Error with a 20 MB message (or name), which reached the embedder whole, twice (message
 * and stack), where a thrown string is cut by inspect at 10,000 characters (found by
 * review). The same bound as host functions' error messages (16 KiB); a stack is cut at a
 * line's end, so the host can still map its frames to the script's source.
 */
const MAX_NAME = 256;
const MAX_MESSAGE = 16 * 1024;
const MAX_STACK = 64 * 1024;

function read(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : value === undefined ? undefined : StringCtor(value);
  } catch {
    return undefined;
  }
}

/** `text` cut to `max` characters (at the last line break before it, for a stack), saying how much was left out. */
function bounded(text: string, max: number, atLine = false): string {
  if (text.length <= max) return text;
  let end = max;
  if (atLine) {
    // Indexing, not a String.prototype method: the script may have replaced those.
    let lastBreak = max - 1;
    while (lastBreak > 0 && text[lastBreak] !== "\n") lastBreak--;
    if (lastBreak > 0) end = lastBreak;
  }
  return `${stringSlice(text, 0, end)}${atLine ? "\n" : ""}... ${text.length - end} more characters`;
}

export function describeError(value: unknown): string {
  if (value instanceof ErrorCtor || (typeof value === "object" && value !== null && "message" in value && "stack" in value)) {
    const error = value as Error;
    return description(
      bounded(read(() => error.name) ?? "Error", MAX_NAME),
      bounded(read(() => error.message) ?? "", MAX_MESSAGE),
      bounded(read(() => error.stack) ?? "", MAX_STACK, true),
    );
  }
  // `throw 42`, `throw "text"`, `throw { code: 1 }`: no name, no stack; say what it was.
  let shown: string;
  try {
    shown = inspect(value);
  } catch {
    shown = "<a value that could not be formatted>";
  }
  return description("Error", `Uncaught ${shown}`, "");
}

/**
 * {"name":…,"message":…,"stack":…} from strings only: JSON.stringify of an object would look
 * up a `toJSON` a script put on Object.prototype, and store the object into an internal
 * array, where an index setter a script put on Array.prototype gets it (review).
 */
function description(name: string, message: string, stack: string): string {
  return `{"name":${jsonStringify(name) as string},"message":${jsonStringify(message) as string},"stack":${jsonStringify(stack) as string}}`;
}
