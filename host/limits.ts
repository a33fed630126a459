// Limits: every one has a safe default, is validated where the embedder passes it, and
// is enforced for real in the worker (see docs/limits.md for how each is enforced).
import { ENGINE_INITIAL_MEMORY_BYTES, ENGINE_MAXIMUM_MEMORY_BYTES } from "./engine/initial-memory.js";

export interface Limits {
  /** Cap of the sandbox's wasm memory (QuickJS heap and stack live in it). */
  memoryBytes: number;
  /** QuickJS stack size; deeper recursion is a catchable InternalError in the guest. */
  stackBytes: number;
  /** Guest execution time per run, per plugin load and per plugin call. */
  cpuTimeMs: number;
  /** Whole run (or call) including time spent awaiting timers and fetches. */
  wallTimeMs: number;
  maxFetches: number;
  maxConcurrentFetches: number;
  maxRequestBytes: number;
  maxResponseBytes: number;
  /** Per-request timeout of a single fetch (connect to last byte). */
  fetchTimeoutMs: number;
  /** Header fields a script sets on one request. */
  maxRequestHeaders: number;
  /** One request's header section in bytes, secrets substituted (checked before they are). */
  maxRequestHeaderBytes: number;
  /** Timers pending at once. */
  maxTimers: number;
  /** Console output kept per run; the rest is dropped behind a truncation marker. */
  maxLogBytes: number;
  /** Calls of host functions (host modules) per run, plugin load or plugin call. */
  maxHostCalls: number;
  /** Size of one host call's arguments, and of its result (JSON text plus bytes). */
  maxHostCallBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  memoryBytes: 64 * MiB,
  stackBytes: 256 * 1024,
  cpuTimeMs: 5_000,
  wallTimeMs: 30_000,
  maxFetches: 50,
  maxConcurrentFetches: 6,
  maxRequestBytes: 10 * MiB,
  maxResponseBytes: 16 * MiB,
  fetchTimeoutMs: 15_000,
  maxRequestHeaders: 128,
  maxRequestHeaderBytes: 64 * 1024,
  maxTimers: 1_000,
  maxLogBytes: 1 * MiB,
  maxHostCalls: 100_000,
  maxHostCallBytes: 8 * MiB,
});

/** Bounds of what an embedder may configure (beyond them the engine is not safe or useful). */
export const LIMIT_BOUNDS: Readonly<Record<keyof Limits, readonly [min: number, max: number]>> = {
  // Below 24 MiB the engine's own 16 MiB baseline leaves scripts almost nothing.
  memoryBytes: [ENGINE_INITIAL_MEMORY_BYTES + 8 * MiB, ENGINE_MAXIMUM_MEMORY_BYTES],
  // Measured: deeper QuickJS stacks overflow the worker's native stack (docs/limits.md).
  stackBytes: [16 * 1024, 1 * MiB],
  cpuTimeMs: [1, 24 * 3600_000],
  wallTimeMs: [1, 24 * 3600_000],
  // No network at all is said with an empty net.allow, not with a zero fetch limit.
  maxFetches: [1, 1_000_000],
  maxConcurrentFetches: [1, 256],
  maxRequestBytes: [1, 1024 * MiB],
  maxResponseBytes: [1, 1024 * MiB],
  fetchTimeoutMs: [1, 24 * 3600_000],
  maxRequestHeaders: [1, 10_000],
  // Below 1 KiB even the transport's own fields hardly fit.
  maxRequestHeaderBytes: [1024, 16 * MiB],
  maxTimers: [0, 1_000_000],
  maxLogBytes: [0, 256 * MiB],
  maxHostCalls: [0, 100_000_000],
  maxHostCallBytes: [1024, 1024 * MiB],
};

export function resolveLimits(input: unknown): Limits {
  if (input === undefined || input === null) return { ...DEFAULT_LIMITS };
  if (typeof input !== "object" || Array.isArray(input)) throw new TypeError("limits must be an object");
  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    // Own keys only: "toString" is in every object, but it is not a limit.
    if (!Object.hasOwn(LIMIT_BOUNDS, key)) throw new TypeError(`limits.${key} is not a known limit (known: ${Object.keys(LIMIT_BOUNDS).join(", ")})`);
    if (value === undefined) continue;
    const [min, max] = LIMIT_BOUNDS[key as keyof Limits];
    if (typeof value !== "number") throw new TypeError(`limits.${key} must be a number from ${min} to ${max}, got ${describeOption(value)}`);
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new RangeError(`limits.${key} must be a number from ${min} to ${max}, got ${String(value)}`);
    }
    limits[key as keyof Limits] = key === "memoryBytes" || key === "stackBytes" ? Math.floor(value) : value;
  }
  return limits;
}

/** A wrongly typed option value as an error message shows it: a string quoted (the string "5" is not 5), else its type. */
export function describeOption(value: unknown): string {
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)}`;
  if (value === null) return "null";
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
  return `a ${typeof value}`;
}

/** "64 MiB", "512 KiB", "100 bytes": for limit messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
