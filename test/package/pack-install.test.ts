// The installable library: `npm pack` of a fresh clone (its prepack script builds dist/) produces a tarball
// that a fresh app installs without the emulator's server stack (no native compile), and
// then uses: createSandbox from a Node program, the types under a strict tsc, and
// `npx scriptbox run`; `scriptbox emulator` says how to get the missing packages.
//
// The install prefers the local npm cache (`--prefer-offline`): `npm ci` caches the
// dependencies' tarballs but not the registry metadata an install of a new app needs, so
// a strictly `--offline` install fails with ENOTCACHED on a fresh machine; with the
// metadata cached (a second run) nothing is fetched.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(REPO, "node_modules", "typescript", "bin", "tsc");
const EMULATOR_PEERS = ["better-sqlite3", "fastify", "@fastify/formbody", "graphql"];

let work: string;
let app: string;

function npm(args: string[], cwd: string): string {
  return execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 300_000 });
}

function run(command: string, args: string[]) {
  const child = spawnSync(command, args, { cwd: app, encoding: "utf8", timeout: 120_000 });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

/**
 * The repository as a fresh clone has it (the files git tracks or would track: no dist/),
 * with the installed node_modules linked in. Packing the copy proves that prepack builds
 * dist/, and the build never rewrites the dist/ other test files are using meanwhile.
 */
function freshClone(into: string): string {
  const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: REPO, encoding: "utf8" }).split("\0").filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(REPO, file))) continue; // deleted in the work tree
    mkdirSync(dirname(join(into, file)), { recursive: true });
    copyFileSync(join(REPO, file), join(into, file));
  }
  symlinkSync(join(REPO, "node_modules"), join(into, "node_modules"), "dir");
  return into;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "scriptbox-pack-"));
  app = join(work, "app");
  const clone = freshClone(join(work, "clone"));
  expect(existsSync(join(clone, "dist"))).toBe(false);
  // Leftovers of a work tree (a test writes dist/examples/*.mjs): prepack starts from no dist/.
  mkdirSync(join(clone, "dist", "examples"), { recursive: true });
  writeFileSync(join(clone, "dist", "examples", "leftover.mjs"), "");
  writeFileSync(join(clone, "dist", "leftover.js"), "");
  // A real `npm pack`, prepack (the build) included.
  npm(["pack", "--pack-destination", work], clone);
  const tarball = readdirSync(work).find((f) => /^scriptbox-.*\.tgz$/.test(f))!;
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "embedding-app", private: true, type: "module" }));
  // As a Node 20 app with its own Node types (scriptbox's declarations use Node's types).
  npm(["install", "--prefer-offline", "--no-audit", "--no-fund", join(work, tarball), "@types/node@^20"], app);
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("npm pack, installed into a fresh app", () => {
  it("installs without the emulator's server stack and without compiling anything", () => {
    const modules = join(app, "node_modules");
    for (const peer of EMULATOR_PEERS) expect(existsSync(join(modules, peer)), peer).toBe(false);
    // Nor its types, which pulled the newest @types/node into the app (the app's own is 20's).
    expect(existsSync(join(modules, "@types", "better-sqlite3"))).toBe(false);
    expect((JSON.parse(readFileSync(join(modules, "@types", "node", "package.json"), "utf8")) as { version: string }).version).toMatch(/^20\./);
    expect(existsSync(join(modules, "scriptbox", "dist", "src", "index.js"))).toBe(true);
    expect(existsSync(join(modules, "scriptbox", "dist", "guest-lib", "bundle.json"))).toBe(true);
    // Nothing native was built or fetched: no compiled addon (.node) anywhere in the tree.
    const addons = readdirSync(modules, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".node"));
    expect(addons).toEqual([]);
  });

  it("an embedding program runs a TypeScript script with createSandbox", () => {
    writeFileSync(
      join(app, "embed.mjs"),
      `import { createSandbox } from "scriptbox";
const sandbox = await createSandbox({ limits: { cpuTimeMs: 2000 } });
const result = await sandbox.run("export default (n: number): number => n * 2", { filename: "double.ts", input: 21 });
await sandbox.dispose();
console.log(JSON.stringify(result.ok ? result.value : result.error));\n`,
    );
    const out = run(process.execPath, ["embed.mjs"]);
    expect(out.stderr).toBe("");
    expect(out.stdout.trim()).toBe("42");
  });

  it("from CommonJS: require() loads it where Node can require ES modules (20.19 and later), else says to use import(); await import() works everywhere", () => {
    writeFileSync(
      join(app, "legacy.cjs"),
      `let required;
try { required = typeof require("scriptbox").createSandbox } catch (error) { required = error.code }
(async () => {
  const { createSandbox } = await import("scriptbox");
  const sandbox = await createSandbox();
  const result = await sandbox.run("export default () => 6 * 7");
  await sandbox.dispose();
  console.log(required + " " + (result.ok ? result.value : result.error.message));
})();\n`,
    );
    const out = run(process.execPath, ["--no-warnings", "legacy.cjs"]);
    expect(out.stderr).toBe("");
    const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
    const requireEsm = major > 22 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
    // Without a "default" export condition require() failed with "No "exports" main defined".
    expect(out.stdout.trim()).toBe(`${requireEsm ? "function" : "ERR_REQUIRE_ESM"} 42`);
  });

  it("the library's types check under strict tsc without skipLibCheck, and the guest types resolve as scriptbox/guest", () => {
    writeFileSync(
      join(app, "embed.ts"),
      `import { createSandbox, type RunResult, type SandboxOptions } from "scriptbox";
const options: SandboxOptions = { net: { allow: ["api.example.com"] } };
const sandbox = await createSandbox(options);
const result: RunResult<number> = await sandbox.run<number>("export default () => 1");
if (result.ok) console.log(result.value.toFixed(1));
await sandbox.dispose();\n`,
    );
    writeFileSync(join(app, "script.ts"), `import { env } from "runtime";\nexport default async () => [...new Headers({ a: env.A ?? "1" }).entries()];\n`);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] }, files: ["embed.ts"] }),
    );
    writeFileSync(
      join(app, "tsconfig.script.json"),
      JSON.stringify({ compilerOptions: { target: "ES2022", lib: ["ES2023"], module: "ESNext", moduleResolution: "Bundler", strict: true, noEmit: true, skipLibCheck: false, types: ["scriptbox/guest"] }, files: ["script.ts"] }),
    );
    const host = run(process.execPath, [TSC, "-p", "tsconfig.json"]);
    expect(host.stdout + host.stderr).toBe("");
    const guest = run(process.execPath, [TSC, "-p", "tsconfig.script.json"]);
    expect(guest.stdout + guest.stderr).toBe("");
    // A CommonJS TypeScript app (module: commonjs resolves "types", not "exports").
    writeFileSync(
      join(app, "tsconfig.cjs.json"),
      JSON.stringify({ compilerOptions: { target: "ES2022", module: "CommonJS", moduleResolution: "Node10", strict: true, noEmit: true, skipLibCheck: false, types: ["node"] }, files: ["legacy.ts"] }),
    );
    writeFileSync(join(app, "legacy.ts"), `import { createSandbox, type RunResult } from "scriptbox";\nexport async function double(n: number): Promise<RunResult<number>> { const s = await createSandbox(); try { return await s.run<number>("export default (n) => n * 2", { input: n }); } finally { await s.dispose(); } }\n`);
    const legacy = run(process.execPath, [TSC, "-p", "tsconfig.cjs.json"]);
    expect(legacy.stdout + legacy.stderr).toBe("");
  }, 180_000);

  it("ships the licence and the docs the README points to, and no build leftovers", () => {
    const installed = join(app, "node_modules", "scriptbox");
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toMatch(/^MIT License/);
    for (const doc of ["architecture.md", "limits.md", "host-modules.md", "network.md", "packages.md"]) expect(existsSync(join(installed, "docs", doc)), doc).toBe(true);
    expect(existsSync(join(installed, "dist", "examples"))).toBe(false);
    expect(existsSync(join(installed, "dist", "leftover.js"))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { engines: { node: string } };
    // undici 7 needs 20.18.1.
    expect(manifest.engines.node).toBe(">=20.18.1");
  });

  it("bundled into the app's own file, it refuses at once with a message that says to keep it external (not 'evicted' runs)", () => {
    writeFileSync(
      join(app, "bundled.mjs"),
      `import { createSandbox, warmPool } from "scriptbox";
for (const [name, start] of [["warmPool", () => warmPool()], ["createSandbox", () => createSandbox()]]) {
  try { await start(); console.log(name + " resolved"); } catch (error) { console.log(name + " rejected: " + error.message); }
}\n`,
    );
    const peers = ["better-sqlite3", "fastify", "@fastify/formbody", "graphql", "bullmq", "esbuild"].map((name) => `--external:${name}`);
    const built = run(join(app, "node_modules", ".bin", "esbuild"), ["bundled.mjs", "--bundle", "--platform=node", "--format=esm", "--outfile=out/server.mjs", "--log-level=error", ...peers]);
    expect(built.stdout + built.stderr).toBe("");
    const out = run(process.execPath, ["out/server.mjs"]);
    const refusal = `scriptbox cannot start its worker threads: their code, ${join(app, "out", "worker", "entry.bundle.js")}, is not there.`;
    const lines = out.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]!.startsWith(`warmPool rejected: ${refusal}`), lines[0]).toBe(true);
    expect(lines[1]!.startsWith(`createSandbox rejected: ${refusal}`), lines[1]).toBe(true);
    expect(out.stdout).toContain("Keep scriptbox out of the bundle (esbuild: --external:scriptbox or --packages=external");
  }, 60_000);

  it("npx scriptbox run runs a script file", () => {
    writeFileSync(join(app, "job.ts"), `export default (input: { who: string }) => \`hello \${input.who}\`;\n`);
    const out = run("npx", ["--no-install", "scriptbox", "run", "job.ts", "--input", `{"who":"app"}`]);
    expect(out.code).toBe(0);
    expect(out.stdout.trim()).toBe('"hello app"');
  }, 60_000);

  it("scriptbox emulator and demo say in one line how to install the emulator's packages", () => {
    for (const command of ["emulator", "demo"]) {
      const out = run("npx", ["--no-install", "scriptbox", command]);
      expect(out.code).toBe(2);
      expect(out.stderr).toMatch(/^scriptbox: the cloud API emulator needs \S+, which is not installed \(an optional peer dependency of scriptbox\); install the emulator's packages with: npm install --save-dev better-sqlite3 fastify @fastify\/formbody graphql\n$/m);
    }
  }, 60_000);
});
