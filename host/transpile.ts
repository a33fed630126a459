// Turning what the embedder gives us into one ES module for QuickJS, on the embedder's
// thread (esbuild runs as a service process; workers stay busy with guests only):
//  - JavaScript source runs as is (no cost on the hot path);
//  - TypeScript source is transpiled by esbuild, with a source map so stacks point at
//    the .ts file's own lines and columns;
//  - a script file run from the CLI is bundled with its relative imports, confined to
//    the script's own folder (no other file system access, no packages).
import { build, transform, type Message, type Plugin } from "esbuild";
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

export const BUILTIN_MODULES = ["http", "cloud", "runtime"];

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

export function isTypeScript(filename: string): boolean {
  return /\.(ts|mts|cts|tsx)$/i.test(filename);
}

function syntaxErrorFrom(error: unknown, fallbackFile: string): never {
  const first = (error as { errors?: Message[] }).errors?.[0];
  if (!first) throw error;
  const where = first.location ? `${first.location.file || fallbackFile}:${first.location.line}:${first.location.column + 1}` : fallbackFile;
  throw new ScriptSyntaxError(where, first.text);
}

export async function prepareSource(source: string, filename: string): Promise<PreparedSource> {
  if (!isTypeScript(filename)) return { code: source, filename, map: null };
  try {
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

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** esbuild plugin: builtins (and the sandbox's host modules) stay imports; relative imports must stay inside `root`; nothing else. */
function confineTo(root: string, hostModules: readonly string[]): Plugin {
  return {
    name: "scriptbox-confine",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData?.confined) return undefined;
        if (BUILTIN_MODULES.includes(args.path) || hostModules.includes(args.path)) return { path: args.path, external: true };
        if (!args.path.startsWith("./") && !args.path.startsWith("../")) {
          const modules = [...BUILTIN_MODULES, ...hostModules].join(", ");
          return { errors: [{ text: `Cannot import "${args.path}": scripts can import the builtin modules (${modules}) and their own files by relative path` }] };
        }
        const resolved = await pluginBuild.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: { confined: true } });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        const real = realpathSync(resolved.path);
        if (!within(root, real)) return { errors: [{ text: `Cannot import "${args.path}": it is outside the script's folder (${root})` }] };
        return { path: real };
      });
    },
  };
}

/**
 * Bundles a script file and its relative imports (CLI, sandbox.runFile); `hostModules` are
 * the names of the sandbox's host modules, which stay imports. Source map paths are
 * relative to cwd.
 */
export async function bundleScriptFile(path: string, hostModules: readonly string[] = []): Promise<PreparedSource> {
  const entry = realpathSync(resolve(path));
  const root = dirname(entry);
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      sourcemap: "external",
      outdir: root,
      absWorkingDir: process.cwd(),
      plugins: [confineTo(root, hostModules)],
      logLevel: "silent",
    });
    const code = result.outputFiles.find((file) => file.path.endsWith(".js"))!.text;
    const map = result.outputFiles.find((file) => file.path.endsWith(".map"))?.text ?? null;
    return { code, filename: relative(process.cwd(), entry) || entry, map };
  } catch (error) {
    return syntaxErrorFrom(error, path);
  }
}
