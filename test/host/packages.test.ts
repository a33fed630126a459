// npm packages in scripts: bare imports resolve from the node_modules folders visible to
// the script's folder and are bundled on the host by esbuild; real registry packages
// (devDependencies of this repository) run inside the real sandbox.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, ScriptError, type Sandbox } from "scriptbox";
// The same module instance the built sandbox uses: its counter of bundles built.
import { bundleCache } from "../../dist/host/bundle/bundle.js";

const SCRIPTS = fileURLToPath(new URL("./package-scripts/", import.meta.url));

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ limits: { cpuTimeMs: 5_000, wallTimeMs: 20_000 } });
});
afterAll(async () => {
  await sandbox.dispose();
});

function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

describe("real packages from the registry, inside the sandbox", () => {
  it("zod validates input (valid and invalid)", async () => {
    const good = await sandbox.runFile(join(SCRIPTS, "zod-user.ts"), { input: { name: "ann", age: 41 } });
    expect(good).toMatchObject({ ok: true, value: { ok: true, user: { name: "ann", age: 41 } } });
    const bad = await sandbox.runFile(join(SCRIPTS, "zod-user.ts"), { input: { name: "", age: 1.5 } });
    expect(bad).toMatchObject({ ok: true, value: { ok: false, issues: ["name", "age"] } });
  });

  it("lodash-es, date-fns, yaml and uuid work together with the script's own relative file", async () => {
    const result = await sandbox.runFile(join(SCRIPTS, "everyday.ts"));
    expect(result).toMatchObject({
      ok: true,
      value: {
        groups: { a: [{ name: "al", team: "a" }, { name: "cy", team: "a" }], b: [{ name: "bo", team: "b" }] },
        day: "2024-03-01", // 2024 is a leap year
        teams: ["a", "b"],
        yaml: "ok: true\n",
        uuid: true,
        // RFC 9562 name-based UUID: the same for everyone who hashes this name in the URL namespace
        v5: "19f8c42e-e65d-5e97-ab1d-379544c1d2a0",
        label: "[done]",
      },
    });
  });

  it("sandbox.run(source, { resolveDir }) imports packages and relative files from that folder", async () => {
    const result = await sandbox.run(`import { z } from "zod"; import { label } from "./lib/label.ts";\nexport default () => label(z.string().email().safeParse("x@y.io").success ? "email" : "no");`, {
      filename: "inline.ts",
      resolveDir: SCRIPTS,
    });
    expect(result).toMatchObject({ ok: true, value: "[email]" });
  });

  it("a plugin keeps its packages loaded: the bundle is evaluated once, then called", async () => {
    const plugin = await sandbox.load(
      `import { z } from "zod";\nlet evaluations = 0; evaluations++;\nconst N = z.number().int();\nexport const check = (v: unknown) => [N.safeParse(v).success, evaluations];`,
      { filename: "plugin.ts", resolveDir: SCRIPTS },
    );
    expect(await plugin.call("check", 3)).toEqual([true, 1]);
    expect(await plugin.call("check", 3.5)).toEqual([false, 1]);
    await plugin.unload();
  });
});

describe("imports that cannot work are clear ImportErrors, not syntax errors", () => {
  it("a Node built-in imported by the script", async () => {
    const result = await sandbox.runFile(join(SCRIPTS, "node-builtin.ts"));
    expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
    if (result.ok) return;
    expect(result.error.message).toMatch(/node-builtin\.ts:1:\d+: Cannot import "node:fs" \(imported by the script\): Node built-in modules do not exist in the sandbox; use fetch/);
  });

  it("a package that is not installed: named, with the command that installs it", async () => {
    const result = await sandbox.runFile(join(SCRIPTS, "missing-package.ts"));
    expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
    if (!result.ok) expect(result.error.message).toContain('package "left-pad-not-installed" is not installed in a node_modules folder visible from');
    if (!result.ok) expect(result.error.message).toContain("npm install left-pad-not-installed");
  });

  it("a Node built-in imported by a package names the package; a package mapping it away for browsers works", async () => {
    const root = mkdtempSync(join(tmpdir(), "scriptbox-pkg-"));
    writeFiles(root, {
      "node_modules/needs-fs/package.json": `{ "name": "needs-fs", "version": "1.0.0", "main": "index.js" }`,
      "node_modules/needs-fs/index.js": `const fs = require("fs");\nmodule.exports = () => fs.readFileSync("/etc/hostname", "utf8");\n`,
      "node_modules/maps-fs/package.json": `{ "name": "maps-fs", "version": "1.0.0", "main": "index.js", "browser": { "fs": false } }`,
      "node_modules/maps-fs/index.js": `const fs = require("fs");\nmodule.exports = () => (fs && fs.readFileSync ? "node" : "browser");\n`,
      "uses-fs.js": `import read from "needs-fs"; export default () => read();`,
      "maps-fs.js": `import which from "maps-fs"; export default () => which();`,
    });
    try {
      const refused = await sandbox.runFile(join(root, "uses-fs.js"));
      expect(refused).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
      if (!refused.ok) expect(refused.error.message).toContain('Cannot import "fs" (imported by package "needs-fs"): Node built-in modules do not exist in the sandbox');
      expect(await sandbox.runFile(join(root, "maps-fs.js"))).toMatchObject({ ok: true, value: "browser" });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a package path cannot climb out of the package to other files of the host", async () => {
    const root = mkdtempSync(join(tmpdir(), "scriptbox-pkg-"));
    writeFiles(root, {
      "node_modules/plain/package.json": `{ "name": "plain", "version": "1.0.0" }`,
      "node_modules/plain/index.js": `export default 1;`,
      "private.json": `{ "password": "hunter2" }`,
      "app/climb.js": `import data from "plain/../../private.json"; export default () => data;`,
      "app/scheme.js": `import data from "file:///etc/hostname"; export default () => data;`,
    });
    try {
      for (const file of ["climb.js", "scheme.js"]) {
        const result = await sandbox.runFile(join(root, "app", file));
        expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
        expect(JSON.stringify(result)).not.toContain("hunter2");
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("package exports resolve with the worker/browser conditions before the default", async () => {
    const root = mkdtempSync(join(tmpdir(), "scriptbox-pkg-"));
    writeFiles(root, {
      "node_modules/env-pick/package.json": `{ "name": "env-pick", "version": "1.0.0", "exports": { "node": "./node.js", "worker": "./worker.js", "default": "./default.js" } }`,
      "node_modules/env-pick/node.js": `export default "node";`,
      "node_modules/env-pick/worker.js": `export default "worker";`,
      "node_modules/env-pick/default.js": `export default "default";`,
      "main.js": `import pick from "env-pick"; export default () => pick;`,
    });
    try {
      expect(await sandbox.runFile(join(root, "main.js"))).toMatchObject({ ok: true, value: "worker" });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("named source modules (sandbox.run / load with sourceModules)", () => {
  it("a script imports modules passed by name, TypeScript included, alongside builtins", async () => {
    const result = await sandbox.run(`import { double } from "math"; import { env } from "runtime";\nexport default () => [double(21), typeof env];`, {
      sourceModules: { math: { source: `export const double = (n: number): number => n * 2;`, filename: "math.ts" } },
    });
    expect(result).toMatchObject({ ok: true, value: [42, "object"] });
  });

  it("without resolveDir, other bare imports say how to get packages", async () => {
    const result = await sandbox.run(`import { z } from "zod"; export default () => 1`, { sourceModules: { lib: { source: "export const x = 1" } } });
    expect(result).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
    if (!result.ok) expect(result.error.message).toContain("imports packages only with the resolveDir option");
    if (!result.ok) expect(result.error.message).toContain("the modules passed by name (lib)");
  });

  it("bad sourceModules and resolveDir options are TypeErrors", async () => {
    await expect(sandbox.run("export default 1", { sourceModules: { "./x": { source: "" } } })).rejects.toThrow(/not a bare module name/);
    await expect(sandbox.run("export default 1", { sourceModules: { x: { source: 1 as unknown as string } } })).rejects.toThrow(/sourceModules\.x\.source must be a string/);
    await expect(sandbox.run("export default 1", { resolveDir: "/no/such/folder/anywhere" })).rejects.toThrow(/does not exist/);
  });

  it("a plugin's import error is thrown as a ScriptError carrying the ImportError", async () => {
    const error = await sandbox.load(`import "node:path"; export const f = () => 1`, { sourceModules: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScriptError);
    expect((error as ScriptError).guestName).toBe("ImportError");
  });
});

describe("bundles are cached by content", () => {
  const root = mkdtempSync(join(tmpdir(), "scriptbox-cache-"));
  const main = join(root, "app", "main.js");
  beforeAll(() => {
    writeFiles(root, {
      "node_modules/greet/package.json": `{ "name": "greet", "version": "1.0.0", "module": "index.js" }`,
      "node_modules/greet/index.js": `export const greet = (n) => "hello " + n;`,
      "app/main.js": `import { greet } from "greet"; export default () => greet("ann");`,
    });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function runCounted(): Promise<{ value: unknown; built: number }> {
    const before = bundleCache.builds;
    const result = await sandbox.runFile(main);
    if (!result.ok) throw new Error(result.error.message);
    return { value: result.value, built: bundleCache.builds - before };
  }

  it("an unchanged script and packages are not rebundled; any changed input is", async () => {
    expect(await runCounted()).toEqual({ value: "hello ann", built: 1 });
    expect(await runCounted()).toEqual({ value: "hello ann", built: 0 });

    // A new package version (content and package.json change).
    writeFiles(root, {
      "node_modules/greet/package.json": `{ "name": "greet", "version": "2.0.0", "module": "index.js" }`,
      "node_modules/greet/index.js": `export const greet = (n) => "hi " + n;`,
    });
    expect(await runCounted()).toEqual({ value: "hi ann", built: 1 });

    // The script itself changes.
    writeFileSync(main, `import { greet } from "greet"; export default () => greet("bo");`);
    expect(await runCounted()).toEqual({ value: "hi bo", built: 1 });

    // A nearer node_modules now holds the package: resolution changes though no bundled file did.
    writeFiles(root, {
      "app/node_modules/greet/package.json": `{ "name": "greet", "version": "3.0.0", "module": "index.js" }`,
      "app/node_modules/greet/index.js": `export const greet = (n) => "hey " + n;`,
    });
    expect(await runCounted()).toEqual({ value: "hey bo", built: 1 });
    expect(await runCounted()).toEqual({ value: "hey bo", built: 0 });
  });

  it("the bundle is kept on disk in the nearest node_modules/.cache/scriptbox for the next process", async () => {
    await sandbox.runFile(main);
    expect(readdirSync(join(root, "app", "node_modules", ".cache", "scriptbox")).some((f) => f.endsWith(".json"))).toBe(true);
    bundleCache.clear(); // as in a new process: only the disk entry is left
    expect(await runCounted()).toEqual({ value: "hey bo", built: 0 });
  });
});
