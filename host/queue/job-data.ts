// What a job carries in Redis, and how values travel as JSON text. A job holds the bundled
// script (code, the name stacks show, the source map), its input and the options it asks
// for. Secrets travel by name only: their values live in each worker's configuration.
import type { Limits } from "../limits.js";
import { checkPreparedMap } from "../source-map.js";
import type { PreparedSource } from "../transpile.js";
import type { RunResult } from "../types.js";

export const JOB_FORMAT = 1;

export interface ScriptJobData {
  format: typeof JOB_FORMAT;
  script: PreparedSource;
  /** encodeValue text of the input, or absent. */
  input?: string;
  limits?: Partial<Limits>;
  /** Absent: the worker's allow-list as it is. Present: intersected with it. */
  allow?: string[];
  env?: Record<string, string>;
  secrets?: string[];
}

// Bytes do not survive JSON on their own: tag them. (Dates are ISO strings by then:
// toCrossable turns them into strings before anything crosses into a sandbox.)
const BYTES = "$bytes";

export function encodeValue(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item instanceof Uint8Array) return { [BYTES]: Buffer.from(item.buffer, item.byteOffset, item.byteLength).toString("base64") };
    return item;
  });
}

export function decodeValue(text: string): unknown {
  return JSON.parse(text, (_key, item: unknown) => {
    if (item !== null && typeof item === "object" && !Array.isArray(item)) {
      const keys = Object.keys(item);
      if (keys.length === 1 && keys[0] === BYTES && typeof (item as Record<string, unknown>)[BYTES] === "string") {
        return new Uint8Array(Buffer.from((item as Record<string, string>)[BYTES]!, "base64"));
      }
    }
    return item;
  });
}

/** The job hash field a failed run's result is kept in (a completed run's is BullMQ's returnvalue). */
export const FAILED_RESULT_FIELD = "scriptboxResult";

export function encodeResult(result: RunResult): string {
  return encodeValue(result);
}

/**
 * A stored result, or null when the text is not one: whoever can write to Redis can set a
 * job's return value, and job.result() must not hand that on as a RunResult.
 */
export function decodeResult(text: string): RunResult | null {
  let result: unknown;
  try {
    result = decodeValue(text);
  } catch {
    return null;
  }
  const r = result as Partial<Record<string, unknown>> | null;
  if (typeof r !== "object" || r === null || typeof r.ok !== "boolean" || !Array.isArray(r.logs) || typeof r.stats !== "object" || r.stats === null) return null;
  if (!r.ok) {
    const error = r.error as Partial<Record<string, unknown>> | null | undefined;
    if (typeof error !== "object" || error === null || typeof error.kind !== "string" || typeof error.name !== "string" || typeof error.message !== "string" || typeof error.stack !== "string") return null;
  }
  return result as RunResult;
}

/**
 * The script as a job carries it: its source map without sourcesContent (stacks are mapped
 * with positions only; the author's sources would double what each job costs in Redis),
 * checked as a worker will check it, so that a map a worker would refuse is an error here.
 */
export function portableScript(script: PreparedSource): PreparedSource {
  if (script.map === null) return script;
  const { sourcesContent: _sources, ...map } = JSON.parse(script.map) as Record<string, unknown>;
  const portable = JSON.stringify(map);
  checkPreparedMap(portable);
  return { ...script, map: portable };
}
