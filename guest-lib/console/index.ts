// The `console` global: formats its arguments in the guest (Node's rules) and hands one
// line of text per call to the host (bridge.log), which caps, timestamps and streams it.
// Primitive-only calls are formatted here; anything else loads the inspect module once.
import bridge from "scriptbox:bridge";
import { require as requireModule } from "scriptbox:core";
import { MapCtor, StringCtor, objectIs, DateCtor } from "scriptbox:intrinsics";

type Level = "log" | "info" | "warn" | "error" | "debug" | "trace";

interface InspectModule {
  format(args: unknown[]): string;
  inspect(value: unknown, options?: { depth?: number }): string;
  table(data: unknown, columns?: unknown): string;
}
const inspectModule = () => requireModule("scriptbox:inspect") as InspectModule;

function formatPrimitive(value: unknown): string {
  if (typeof value === "number" && objectIs(value, -0)) return "-0";
  if (typeof value === "bigint") return `${value}n`;
  return StringCtor(value);
}

export function formatArgs(args: unknown[]): string {
  const first = args[0];
  let simple = !(typeof first === "string" && first.indexOf("%") !== -1);
  for (let i = 0; simple && i < args.length; i++) {
    const type = typeof args[i];
    if ((type === "object" && args[i] !== null) || type === "function" || type === "symbol") simple = false;
  }
  if (!simple) return inspectModule().format(args);
  let text = "";
  for (let i = 0; i < args.length; i++) text += (i === 0 ? "" : " ") + formatPrimitive(args[i]);
  return text;
}

let groupIndent = "";
function emit(level: Level, text: string): void {
  bridge.log(level, groupIndent === "" ? text : groupIndent + text.split("\n").join(`\n${groupIndent}`));
}

const counts = new MapCtor<string, number>();
const timers = new MapCtor<string, number>();
const label = (value: unknown) => (value === undefined ? "default" : StringCtor(value));

function createConsole() {
  const make = (level: Level) => (...args: unknown[]) => emit(level, formatArgs(args));
  return {
    log: make("log"),
    info: make("info"),
    warn: make("warn"),
    error: make("error"),
    debug: make("debug"),
    trace(...args: unknown[]) {
      // Drop the first frame: it is this function.
      const stack = (new Error().stack ?? "").split("\n").slice(1).join("\n");
      emit("trace", `Trace${args.length ? `: ${formatArgs(args)}` : ""}\n${stack}`.trimEnd());
    },
    dir(value: unknown, options?: { depth?: number }) {
      emit("log", inspectModule().inspect(value, options));
    },
    table(data: unknown, columns?: unknown) {
      emit("log", typeof data === "object" && data !== null ? inspectModule().table(data, columns) : formatArgs([data]));
    },
    assert(condition: unknown, ...args: unknown[]) {
      if (!condition) emit("error", `Assertion failed${args.length ? `: ${formatArgs(args)}` : ""}`);
    },
    count(name?: unknown) {
      const key = label(name);
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      emit("info", `${key}: ${n}`);
    },
    countReset(name?: unknown) {
      counts.delete(label(name));
    },
    time(name?: unknown) {
      timers.set(label(name), DateCtor.now());
    },
    timeLog(name?: unknown, ...args: unknown[]) {
      const key = label(name);
      const start = timers.get(key);
      if (start === undefined) return emit("warn", `Warning: No such label '${key}' for console.timeLog()`);
      emit("info", `${key}: ${DateCtor.now() - start}ms${args.length ? ` ${formatArgs(args)}` : ""}`);
    },
    timeEnd(name?: unknown) {
      const key = label(name);
      const start = timers.get(key);
      if (start === undefined) return emit("warn", `Warning: No such label '${key}' for console.timeEnd()`);
      timers.delete(key);
      emit("info", `${key}: ${DateCtor.now() - start}ms`);
    },
    group(...args: unknown[]) {
      if (args.length) emit("log", formatArgs(args));
      groupIndent += "  ";
    },
    groupCollapsed(...args: unknown[]) {
      if (args.length) emit("log", formatArgs(args));
      groupIndent += "  ";
    },
    groupEnd() {
      groupIndent = groupIndent.slice(2);
    },
  };
}

export const console = createConsole();
