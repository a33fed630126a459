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
