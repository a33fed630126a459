// "Bundle this entry for the sandbox": one ES module for QuickJS from a script file (or a
// script given as source with a folder to resolve from), with its relative files and the
// npm packages it imports, built by esbuild on the embedder's thread. Used by
// sandbox.runFile (and so `scriptbox run`), by sandbox.run/load with resolveDir or
// modules, and by the queue's submit. Results are cached by content (see bundle-cache.ts).
// esbuild is loaded when a script is first bundled, not at import (see transpile.ts).
import type { BuildFailure, BuildOptions, Message } from "esbuild";
import { realpathSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ScriptImportError, ScriptSyntaxError, isTypeScript, locationOf, type PreparedSource } from "../transpile.js";
import { BundleCache, fingerprintsOf, sha256 } from "./bundle-cache.js";
import { IMPORT_ERROR, importRules } from "./import-rules.js";

/** Source modules a script imports by bare name (`modules: { lib: { source } }`). */
export type NamedModules = Record<string, { source: string; filename?: string }>;

export interface SourceBundleOptions {
  /** Shown in stacks; a .ts name makes the source TypeScript. */
  filename: string;
  /** Folder the source is treated as living in: its relative imports and packages resolve from here. */
  resolveDir?: string;
  modules?: NamedModules;
  /** Names of host modules, which stay imports (see ImportRulesOptions.hostModules). */
  hostModules?: readonly string[];
}

/** Bump when the bundling options change, so that disk entries of an older scriptbox are not reused. */
const FORMAT = 1;

export const bundleCache = new BundleCache();

function commonOptions(): BuildOptions {
  return {
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    // Packages are resolved as for a browser web worker: worker/browser conditions and the
    // "browser" field first, then module/main. `platform: "browser"` also defines
    // process.env.NODE_ENV, which many packages read.
    platform: "browser",
    conditions: ["worker", "browser"],
    mainFields: ["browser", "module", "main"],
    target: "es2022",
    // QuickJS parses ~0.35 ms per KB on every run: whitespace and syntax minification cut a
    // zod bundle from 738 to 569 KB. Identifiers are kept, so names in errors stay readable;
    // the source map takes stacks back to the original lines.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: "external",
    // Scripts' tsconfig files are for the editor; bundling ignores them so that the output
    // depends only on the files the cache fingerprints.
    tsconfigRaw: "{}",
    absWorkingDir: process.cwd(),
    logLevel: "silent",
  };
}

async function keyOf(parts: unknown): Promise<string> {
  const { version } = await import("esbuild");
  return sha256(JSON.stringify({ format: FORMAT, esbuild: version, cwd: process.cwd(), parts }));
}

/** The nearest node_modules/.cache/scriptbox above `dir`, or null when the script has no node_modules. */
function diskCacheDir(dir: string): string | null {
  for (let current = dir; ; current = dirname(current)) {
    if (existsSync(join(current, "node_modules"))) return join(current, "node_modules", ".cache", "scriptbox");
    if (dirname(current) === current) return null;
  }
}

function failureOf(error: unknown, fallbackFile: string): Error {
  const errors = (error as Partial<BuildFailure>).errors;
  if (!errors?.length) return error as Error;
  const importProblem = errors.find((e) => e.detail === IMPORT_ERROR || /^Could not resolve/.test(e.text));
  const first: Message = importProblem ?? errors[0]!;
  const where = locationOf(first, fallbackFile);
  return importProblem ? new ScriptImportError(where, first.text) : new ScriptSyntaxError(where, first.text);
}

async function bundle(options: BuildOptions, root: string, modules: NamedModules, packages: boolean, hostModules: readonly string[], filename: string, key: string, diskDir: string | null): Promise<PreparedSource> {
  const cached = bundleCache.get(key, diskDir);
  if (cached) return cached;
  const watched = new Set<string>();
  let result;
  try {
    const { build } = await import("esbuild");
    result = await build({
      ...commonOptions(),
      ...options,
      outdir: root,
      plugins: [importRules({ root, modules, packages, hostModules, watch: (path) => watched.add(path) })],
    });
  } catch (error) {
    throw failureOf(error, filename);
  }
  const code = result.outputFiles!.find((file) => file.path.endsWith(".js"))!.text;
  const map = result.outputFiles!.find((file) => file.path.endsWith(".map"))?.text ?? null;
  const prepared = { code, filename, map };
  for (const input of Object.keys(result.metafile!.inputs)) {
    if (input === "<stdin>" || /^scriptbox-[a-z]+:/.test(input)) continue; // not files: nothing to fingerprint
    watched.add(resolve(process.cwd(), input));
  }
  bundleCache.set(key, prepared, fingerprintsOf(watched), diskDir);
  return prepared;
}

/**
 * Bundles a script file with its relative imports (confined to its folder) and the npm
 * packages it imports (from the node_modules folders visible to it). Throws
 * ScriptSyntaxError or ScriptImportError; source maps name files relative to cwd.
 */
export async function bundleEntryFile(path: string, hostModules: readonly string[] = []): Promise<PreparedSource> {
  const entry = realpathSync(resolve(path));
  const root = dirname(entry);
  const filename = relative(process.cwd(), entry) || entry;
  const names = [...hostModules].sort();
  const key = await keyOf(names.length > 0 ? { entry, hostModules: names } : { entry });
  return bundle({ entryPoints: [entry] }, root, {}, true, names, filename, key, diskCacheDir(root));
}

/**
 * Bundles a script given as source: its imports of named `modules`, and, with `resolveDir`,
 * its relative files (confined to that folder) and packages (from node_modules visible from it).
 */
export async function bundleSource(source: string, options: SourceBundleOptions): Promise<PreparedSource> {
  const modules = options.modules ?? {};
  let root = process.cwd();
  if (options.resolveDir !== undefined) {
    try {
      root = realpathSync(resolve(options.resolveDir));
    } catch {
      throw new TypeError(`resolveDir ${options.resolveDir} does not exist`);
    }
  }
  const hostModules = [...(options.hostModules ?? [])].sort();
  const key = await keyOf({ source, filename: options.filename, root: options.resolveDir === undefined ? null : root, modules, hostModules });
  return bundle(
    { stdin: { contents: source, sourcefile: options.filename, resolveDir: root, loader: isTypeScript(options.filename) ? "ts" : "js" } },
    root,
    modules,
    options.resolveDir !== undefined,
    hostModules,
    options.filename,
    key,
    null,
  );
}
