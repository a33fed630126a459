// Maps guest stack frames ("at f (job.ts:12:5)") back to the script's own files, lines and
// columns through esbuild's source map. QuickJS columns are 1-based; source maps 0-based.
import { createRequire } from "node:module";
import type * as TraceMapping from "@jridgewell/trace-mapping";

// Loaded when a script first has a source map (TypeScript or a bundle), not when the
// package is imported: plain JavaScript runs never need it.
const require = createRequire(import.meta.url);
let traceMapping: typeof TraceMapping | undefined;
const library = (): typeof TraceMapping => (traceMapping ??= require("@jridgewell/trace-mapping") as typeof TraceMapping);

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export class StackMapper {
  private readonly traceMap: TraceMapping.TraceMap;
  private readonly pattern: RegExp;

  constructor(filename: string, sourceMap: string) {
    this.traceMap = new (library().TraceMap)(sourceMap);
    this.pattern = new RegExp(`${escapeRegExp(filename)}:(\\d+):(\\d+)`, "g");
  }

  /** Rewrites every "<filename>:line:column" in `text` to the original position. */
  mapText(text: string): string {
    return text.replace(this.pattern, (whole, line: string, column: string) => {
      const original = library().originalPositionFor(this.traceMap, { line: Number(line), column: Math.max(0, Number(column) - 1) });
      if (original.source === null || original.line === null || original.column === null) return whole;
      return `${original.source}:${original.line}:${original.column + 1}`;
    });
  }
}

/**
 * The largest source map a prepared script from elsewhere may carry (sandbox.runPrepared,
 * the script queue). A map is decoded on the embedder's own thread, outside every limit,
 * when a run fails: measured here, 8 MiB of mappings took 1-4 s to decode. Stack mapping
 * needs no sourcesContent, so a big bundle's map stays well under this.
 */
export const MAX_PREPARED_MAP_BYTES = 4 * 1024 * 1024;

/**
 * Checks a source map that came from elsewhere before anything runs: a map that is too
 * big or is not a v3 source map is a TypeError, not a surprise after the script ran (it is
 * only decoded when a run fails). Returns the parsed map.
 */
export function checkPreparedMap(map: string): { version: 3; sources: unknown[]; mappings: string; sourcesContent?: unknown } {
  if (map.length > MAX_PREPARED_MAP_BYTES) throw new TypeError(`prepared.map is larger than ${MAX_PREPARED_MAP_BYTES} characters (${map.length})`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(map);
  } catch {
    throw new TypeError("prepared.map is not a source map (not JSON)");
  }
  const object = parsed as Record<string, unknown> | null;
  if (typeof object !== "object" || object === null || object.version !== 3 || typeof object.mappings !== "string" || !Array.isArray(object.sources)) {
    throw new TypeError("prepared.map is not a version 3 source map with sources and mappings");
  }
  return object as ReturnType<typeof checkPreparedMap>;
}
