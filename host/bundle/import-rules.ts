// The esbuild plugin that decides what a script may import when it is bundled:
//  - the sandbox's builtin modules (http, cloud, runtime) stay imports, served in the guest;
//  - modules the embedder passed by name (`modules: { lib: { source } }`) are served from memory;
//  - a script's relative imports must stay inside its own folder;
//  - bare names resolve from the node_modules folders visible to the script's folder, and
//    files inside a package may import the package's own files and other packages;
//  - Node built-ins (`fs`, `node:fs`) do not exist in the sandbox: refused with the name of
//    the importing package and what to do, unless the package maps them away for browsers.
// Every file and package.json the resolution depended on is recorded for the bundle cache.
import { isBuiltin } from "node:module";
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import type { ImportKind, Plugin, PluginBuild } from "esbuild";

export const BUILTIN_MODULES = ["http", "cloud", "runtime"];

export const VIRTUAL_NAMESPACE = "scriptbox-module";
const DISABLED_NAMESPACE = "scriptbox-disabled";

export interface ImportRulesOptions {
  /** Relative imports of the script's own files must stay inside this folder. */
  root: string;
  /** Source modules by bare name (TypeScript when the name or filename ends in .ts). */
  modules: Record<string, { source: string; filename?: string }>;
  /** false: bare names other than builtins and `modules` are refused (a script given as source without resolveDir). */
  packages: boolean;
  /** Names of the sandbox's host modules (and the run's): they stay imports, served by the realm. */
  hostModules: readonly string[];
  /** Receives every package.json path a bare import was resolved through, and node_modules candidates that were absent. */
  watch: (path: string) => void;
}

/** The marker on errors this plugin returns: they are import errors, not syntax errors. */
export const IMPORT_ERROR = "scriptbox-import";

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** "zod" from "zod/v4", "@scope/pkg" from "@scope/pkg/sub". */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** The package a file belongs to, by its last node_modules segment ("date-fns", "@scope/pkg"), or null for the script's own files. */
export function packageOfFile(path: string): string | null {
  const marker = `${sep}node_modules${sep}`;
  const at = path.lastIndexOf(marker);
  if (at < 0) return null;
  return packageNameOf(path.slice(at + marker.length).split(sep).join("/"));
}

function importError(text: string) {
  return { errors: [{ text, detail: IMPORT_ERROR }] };
}

function importerLabel(importer: string, packageFiles: Set<string>): string {
  if (!packageFiles.has(importer) && packageOfFile(importer) === null) return "the script";
  return `package "${packageOfFile(importer) ?? importer}"`;
}

/** node_modules/<name> folders esbuild would look at, nearest first, from `dir` up to the root. */
function nodeModulesCandidates(dir: string, name: string): string[] {
  const out: string[] = [];
  for (let current = dir; ; current = dirname(current)) {
    if (!current.endsWith(`${sep}node_modules`)) out.push(join(current, "node_modules", name));
    if (dirname(current) === current) return out;
  }
}

export function importRules(options: ImportRulesOptions): Plugin {
  // Files reached through a package (their relative imports are the package's business).
  const packageFiles = new Set<string>();
  const builtinsList = BUILTIN_MODULES.join(", ");

  async function resolveInner(build: PluginBuild, path: string, args: { resolveDir: string; kind: ImportKind; importer: string }) {
    return build.resolve(path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: { inner: true } });
  }

  return {
    name: "scriptbox-import-rules",
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData?.inner) return undefined;
        const specifier = args.path;
        if (BUILTIN_MODULES.includes(specifier) || options.hostModules.includes(specifier)) return { path: specifier, external: true };
        if (Object.hasOwn(options.modules, specifier)) return { path: specifier, namespace: VIRTUAL_NAMESPACE };
        const inNodeModules = packageOfFile(args.importer) !== null;
        const fromPackage = inNodeModules || packageFiles.has(args.importer);
        const inputs = { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer };

        if (specifier.startsWith("./") || specifier.startsWith("../") || specifier.startsWith("/")) {
          // A package's own files: esbuild resolves them (no second round trip per import,
          // which made a package of 600 files take seconds to bundle).
          if (inNodeModules) return undefined;
          if (args.namespace === VIRTUAL_NAMESPACE) {
            return importError(`Cannot import "${specifier}" from module "${args.importer}": a module passed by name has no files; pass the file's code as another named module`);
          }
          const resolved = await resolveInner(build, specifier, inputs);
          if (resolved.errors.length > 0) return { errors: resolved.errors.map((e) => ({ ...e, detail: IMPORT_ERROR })) };
          const real = realpathSync(resolved.path);
          if (fromPackage) {
            packageFiles.add(real);
            return { path: real, sideEffects: resolved.sideEffects };
          }
          if (!within(options.root, real)) return importError(`Cannot import "${specifier}": it is outside the script's folder (${options.root})`);
          return { path: real };
        }

        if (specifier.startsWith("node:") || isBuiltin(specifier)) {
          // A package may map a built-in away for browsers ("browser": { "fs": false }).
          const mapped = fromPackage ? await resolveInner(build, specifier, inputs) : null;
          if (mapped && mapped.errors.length === 0 && !mapped.external) {
            // esbuild answers a `false` mapping with an empty namespace: serve an empty module, as it would.
            return mapped.namespace === "" ? { path: specifier, namespace: DISABLED_NAMESPACE } : { path: mapped.path, namespace: mapped.namespace };
          }
          const who = importerLabel(args.importer, packageFiles);
          const advice = fromPackage
            ? `use a version or alternative of ${who.slice(8)} made for browsers or web workers, or run that part on the host and pass its result in as input`
            : `use fetch and the web APIs instead, or do the file or system work on the host and pass the result in as input`;
          return importError(`Cannot import "${specifier}" (imported by ${who}): Node built-in modules do not exist in the sandbox; ${advice}`);
        }

        if (!options.packages) {
          const named = Object.keys(options.modules);
          return importError(
            `Cannot import "${specifier}": a script given as source imports packages only with the resolveDir option; ` +
              `it can import the builtin modules (${builtinsList})${named.length ? ` and the modules passed by name (${named.join(", ")})` : ""}`,
          );
        }
        // "pkg/../../secrets.json" would leave the package for any file on the host.
        if (/(^|\/)\.\.?(\/|$)/.test(specifier) || specifier.includes("\\") || specifier.includes(":")) {
          return importError(`Cannot import "${specifier}": a package path may not contain "." or ".." segments, backslashes or a scheme`);
        }
        const name = packageNameOf(specifier);
        const resolveDir = args.resolveDir || options.root;
        const resolved = await resolveInner(build, specifier, { ...inputs, resolveDir });
        if (resolved.errors.length > 0) {
          const who = importerLabel(args.importer, packageFiles);
          const missing = resolved.errors.some((e) => /Could not resolve/.test(e.text));
          if (missing && !nodeModulesCandidates(resolveDir, name).some((candidate) => existsSyncSafe(candidate))) {
            return importError(`Cannot import "${specifier}" (imported by ${who}): package "${name}" is not installed in a node_modules folder visible from ${resolveDir}; install it there (npm install ${name})`);
          }
          return { errors: resolved.errors.map((e) => ({ ...e, text: `Cannot import "${specifier}" (imported by ${who}): ${e.text}`, detail: IMPORT_ERROR })) };
        }
        if (resolved.external) return { path: resolved.path, external: true };
        const real = realpathSync(resolved.path);
        packageFiles.add(real);
        // What the cache must re-check: the package.json that chose the file, and the nearer
        // node_modules folders that were absent (installing there would change the answer).
        for (const candidate of nodeModulesCandidates(resolveDir, name)) {
          options.watch(join(candidate, "package.json"));
          if (existsSyncSafe(candidate)) break;
        }
        return { path: real, sideEffects: resolved.sideEffects };
      });

      build.onLoad({ filter: /.*/, namespace: DISABLED_NAMESPACE }, () => ({ contents: "", loader: "js" }));

      build.onLoad({ filter: /.*/, namespace: VIRTUAL_NAMESPACE }, (args) => {
        const module = options.modules[args.path]!;
        const filename = module.filename ?? args.path;
        return { contents: module.source, loader: /\.(ts|mts|cts)$/i.test(filename) ? "ts" : "js", resolveDir: options.root };
      });
    },
  };
}

function existsSyncSafe(path: string): boolean {
  try {
    realpathSync(path);
    return true;
  } catch {
    return false;
  }
}
