// Build: compile the host TypeScript (src/, host/, emulator/) to dist/ with tsc, then
// bundle each guest module (guest-lib/<name>/index.ts) with esbuild into one artifact,
// dist/guest-lib/bundle.json, that the host reads once per process.
//
// Guest modules are bundled one by one, not as a single script, because a sandbox only
// pays for the modules a script touches (parsing costs ~0.3 ms per KB inside QuickJS).
// A guest module imports a sibling as "scriptbox:<name>"; those imports stay external
// and are resolved at run time by the guest core's require(), so each context holds one
// copy of every class (one EventTarget, one Blob) however many modules use it.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, existsSync, writeFileSync, renameSync, cpSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");

// dist/ is overwritten in place, not wiped, so that a build never pulls files from under a
// test run that is using them. CI builds from a fresh clone, so nothing stale reaches it.
// SCRIPTBOX_BUILD_LENIENT=1 (development only) reports type errors but still emits.
try {
  execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], {
    stdio: "inherit",
  });
} catch (error) {
  if (process.env.SCRIPTBOX_BUILD_LENIENT !== "1") process.exit(1);
  console.error("build: type errors above (SCRIPTBOX_BUILD_LENIENT=1: emitted anyway)");
}

// The worker thread's code as one file (issue 12 target 6, the first sandbox): tsc emits
// ~60 modules for the worker's entry, and loading them one by one (resolve, read, parse,
// link each) took ~100 ms of a fresh worker's start on this machine. Packages stay
// imports (undici, quickjs-emscripten), so what loads lazily still does. The bundle sits
// beside entry.js: the paths its modules build from import.meta.url (the guest bundle,
// ../../guest-lib/bundle.json) and package resolution stay the same.
await esbuild.build({
  entryPoints: [join(dist, "host", "worker", "entry.js")],
  outfile: join(dist, "host", "worker", "entry.bundle.js"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
});

// Static assets the host code reads at run time (HTML templates and the like).
for (const dir of ["emulator/assets"]) {
  if (existsSync(join(root, dir))) cpSync(join(root, dir), join(dist, dir), { recursive: true });
}

const guestRoot = join(root, "guest-lib");
const names = readdirSync(guestRoot, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(guestRoot, d.name, "index.ts")))
  .map((d) => d.name)
  .sort();

// The core is built last: it is told at build time which globals the web and http
// modules provide, so that it can install them as lazy globals.
// Every export of web and http is a global; the other modules name theirs.
const GLOBAL_PROVIDERS = {
  web: "*",
  http: "*",
  console: ["console"],
  timers: ["setTimeout", "setInterval", "clearTimeout", "clearInterval", "queueMicrotask"],
  crypto: ["crypto"],
  subtle: ["CryptoKey", "SubtleCrypto"],
  performance: ["performance", "Performance"],
  clone: ["structuredClone"],
  intl: ["Intl"],
};
const ordered = [...names.filter((n) => n !== "core"), ...names.filter((n) => n === "core")];
const lazyGlobals = {};

// `import bridge from "scriptbox:bridge"` would compile to esbuild's __toESM(require(…)),
// which copies every bridge function (~50) onto a new object as a getter: in the core that
// ran twice in every realm, ~0.2 ms of each run's fresh realm. The bridge is a plain object
// and only its default is imported, so a one-line ES module hands it over as is.
const bridgeAsDefault = {
  name: "scriptbox-bridge-default",
  setup(build) {
    build.onResolve({ filter: /^scriptbox:bridge$/ }, (args) =>
      args.kind === "import-statement" ? { path: "bridge", namespace: "scriptbox-bridge" } : { path: args.path, external: true },
    );
    build.onLoad({ filter: /.*/, namespace: "scriptbox-bridge" }, () => ({ contents: 'export default require("scriptbox:bridge");', loader: "js" }));
  },
};

// esbuild's CommonJS helpers (__export, __copyProps, __toCommonJS, __name) run when a
// module loads, which for lazy modules is after the script has run, in the script's realm:
// `for (var name in all)` walks inherited enumerable properties, and the descriptor
// literals they pass to Object.defineProperty inherit from Object.prototype. A script or
// an old library that adds an enumerable property to Object.prototype (or a `get`, `set`
// or `value` key) made every later import fail with "invalid getter". So the helpers are
// rewritten: own keys only, prototype-free descriptors. The pattern must match exactly
// once in a module that has the helper, or the build fails (a new esbuild changed them).
function hardenHelpers(name, code) {
  const exportLoop = /for\(var ([\w$]+) in ([\w$]+)\)([\w$]+)\(([\w$]+),\1,\{get:\2\[\1\],enumerable:!0\}\)/g;
  const loops = code.match(exportLoop) ?? [];
  if (loops.length === 0) {
    if (/enumerable:!0/.test(code.slice(0, code.indexOf("module.exports=") + 1))) throw new Error(`guest module ${name}: esbuild's __export helper changed shape; update hardenHelpers in scripts/build.mjs`);
    return code;
  }
  if (loops.length !== 1) throw new Error(`guest module ${name}: ${loops.length} __export helpers, expected 1`);
  const helpersEnd = code.indexOf("module.exports=");
  if (helpersEnd === -1) throw new Error(`guest module ${name}: no module.exports after esbuild's helpers`);
  const hasOwn = /var ([\w$]+)=Object\.prototype\.hasOwnProperty;/.exec(code)?.[1] ?? "Object.prototype.hasOwnProperty";
  const helpers = code
    .slice(0, helpersEnd)
    .replace(exportLoop, (_, key, all, define, target) => `for(var ${key} in ${all})${hasOwn}.call(${all},${key})&&${define}(${target},${key},{__proto__:null,get:${all}[${key}],enumerable:!0})`)
    .replaceAll("{get:()=>", "{__proto__:null,get:()=>")
    .replaceAll("{value:", "{__proto__:null,value:");
  return helpers + code.slice(helpersEnd);
}

// The core builds from an entry without ES exports (guest-lib/core/entry.ts says why).
const entryOf = (name) => join(guestRoot, name, name === "core" ? "entry.ts" : "index.ts");

const modules = {};
for (const name of ordered) {
  const result = await esbuild.build({
    define: name === "core" ? { __SCRIPTBOX_LAZY_GLOBALS__: JSON.stringify(lazyGlobals) } : {},
    entryPoints: [entryOf(name)],
    bundle: true,
    write: false,
    metafile: true,
    // CommonJS output: sibling modules stay `require("scriptbox:…")` calls on the require the
    // factory receives, without the Proxy-based require shim an IIFE bundle carries.
    format: "cjs",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    minify: true,
    // Class and function names show in console output and error messages (`Headers {}`,
    // `TypeError` thrown by `Request`): keep them through minification.
    // (Not for the core: it is parsed in every realm, and its names show nowhere.)
    keepNames: name !== "core",
    legalComments: "none",
    external: ["scriptbox:*"],
    plugins: [bridgeAsDefault],
    logLevel: "warning",
  });
  const code = hardenHelpers(name, result.outputFiles[0].text);
  // The IIFE output does not list export names; an ESM pass over the same entry does.
  // The host needs them to serve `import { fetch } from "http"` as a real ES module.
  const meta = await esbuild.build({
    entryPoints: [entryOf(name)],
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "neutral",
    external: ["scriptbox:*"],
    logLevel: "silent",
  });
  const output = Object.values(meta.metafile.outputs)[0];
  // The module evaluates to a factory; the guest core calls it with its require().
  modules[name] = {
    // The core's entry has no ES exports (guest-lib/core/entry.ts): it sets __SCRIPTBOX_CORE_EXPORTS__.
    source: `(function (require) {\nvar module = { exports: {} }, exports = module.exports${name === "core" ? ", __SCRIPTBOX_CORE_EXPORTS__ = exports" : ""};\n${code}\nreturn module.exports;\n})`,
    exports: [...output.exports].sort(),
  };
  const provided = GLOBAL_PROVIDERS[name];
  for (const exported of output.exports) if (provided === "*" || provided?.includes(exported)) lazyGlobals[exported] = `scriptbox:${name}`;
}

mkdirSync(join(dist, "guest-lib"), { recursive: true });
const bundlePath = join(dist, "guest-lib", "bundle.json");
writeFileSync(`${bundlePath}.tmp`, JSON.stringify({ modules }));
renameSync(`${bundlePath}.tmp`, bundlePath); // atomic: a running test never reads half a file
const sizes = names.map((n) => `${n} ${(modules[n].source.length / 1024).toFixed(1)} KB`).join(", ");
console.log(`guest-lib bundled: ${sizes}`);
