// Turning what the embedder gives us into one ES module for QuickJS, on the embedder's
// thread (esbuild runs as a service process; workers stay busy with guests only):
//  - JavaScript source runs as is (no cost on the hot path);
//  - TypeScript source is transpiled by esbuild, with a source map so stacks point at
//    the .ts file's own lines and columns;
//  - a script file, or source with imports to resolve, is bundled (see bundle/bundle.ts).
// esbuild (~12 MB resident) is loaded on the first TypeScript source, not when the
// package is imported: an application that runs JavaScript never pays for it.
import type { Message } from "esbuild";

export interface PreparedSource {
  code: string;
  /** The name QuickJS reports in stacks. */
  filename: string;
  /** esbuild's source map (v3 JSON) when the code is not the source itself. */
  map: string | null;
}

export class ScriptSyntaxError extends Error {
  constructor(readonly location: string, readonly text: string) {
    super(`${location}: ${text}`);
    this.name = "SyntaxError";
  }
}

/** An import the bundler could not satisfy: a missing package, a Node built-in, a file outside the script's folder. */
export class ScriptImportError extends Error {
  constructor(readonly location: string, readonly text: string) {
    super(`${location}: ${text}`);
    this.name = "ImportError";
  }
}

export function isTypeScript(filename: string): boolean {
  return /\.(ts|mts|cts|tsx)$/i.test(filename);
}

/** "file:line:column" (1-based column) of an esbuild message, or the file alone. */
export function locationOf(message: Message, fallbackFile: string): string {
  return message.location ? `${message.location.file || fallbackFile}:${message.location.line}:${message.location.column + 1}` : fallbackFile;
}

function syntaxErrorFrom(error: unknown, fallbackFile: string): never {
  const first = (error as { errors?: Message[] }).errors?.[0];
  if (!first) throw error;
  throw new ScriptSyntaxError(locationOf(first, fallbackFile), first.text);
}

export async function prepareSource(source: string, filename: string): Promise<PreparedSource> {
  if (!isTypeScript(filename)) return { code: source, filename, map: null };
  try {
    const { transform } = await import("esbuild");
    const result = await transform(source, {
      loader: /x$/i.test(filename) ? "tsx" : "ts",
      format: "esm",
      target: "es2022",
      sourcemap: "external",
      sourcefile: filename,
      logLevel: "silent",
    });
    return { code: result.code, filename, map: result.map };
  } catch (error) {
    return syntaxErrorFrom(error, filename);
  }
}
