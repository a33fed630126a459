// Issue 2 §3: a module loader with builtin modules; relative imports only when running a
// file (bundled and confined to its folder); no other file system access.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "scriptbox";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({
    env: { REGION: "eu", TIER: "gold" },
    secrets: { API_TOKEN: { value: "s3cr3t-value-9Qx2mV7k", origins: ["https://api.example.com"] } },
  });
});
afterAll(async () => {
  await sandbox.dispose();
});

describe("builtin modules", () => {
  it("runtime gives env values and secret placeholders, never secret values", async () => {
    const result = await sandbox.run(`
      import { env, secret } from "runtime";
      export default () => ({ env, frozen: Object.isFrozen(env), placeholder: secret("API_TOKEN") });`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as { env: unknown; frozen: boolean; placeholder: string };
    expect(value.env).toEqual({ REGION: "eu", TIER: "gold" });
    expect(value.frozen).toBe(true);
    expect(value.placeholder).toMatch(/^scriptbox-secret\.API_TOKEN\./);
    expect(JSON.stringify(result)).not.toContain("s3cr3t-value");
  });

  it("secret() of an unknown name is a TypeError in the guest", async () => {
    const result = await sandbox.run(`import { secret } from "runtime"; export default () => { try { secret("NOPE") } catch (e) { return [e instanceof TypeError, e.message] } }`);
    expect(result.ok).toBe(true);
    if (result.ok) expect((result.value as [boolean, string])[0]).toBe(true);
  });

  it("http exports the same objects as the globals, and a default namespace", async () => {
    const result = await sandbox.run(`
      import http, { fetch as f, Headers as H, Request as R, Response as S, Blob as B, File as F } from "http";
      export default () => [f === fetch, H === Headers, R === Request, S === Response, B === Blob, F === File, http.Headers === Headers];`);
    expect(result).toMatchObject({ ok: true, value: [true, true, true, true, true, true, true] });
  });

  it("an unknown bare module is a clear error", async () => {
    const result = await sandbox.run(`import fs from "fs"; export default () => 1`);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toMatch(/^Cannot find module "fs": scripts can import the builtin modules http, /);
  });

  it("relative imports are refused for a script given as source", async () => {
    const result = await sandbox.run(`import { x } from "./other.js"; export default () => x`);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain('Cannot import "./other.js": a script run from source has no files to import');
  });
});

describe("script files with relative imports (runFile, used by the CLI)", () => {
  const root = mkdtempSync(join(tmpdir(), "scriptbox-modules-"));
  mkdirSync(join(root, "job", "lib"), { recursive: true });
  writeFileSync(join(root, "job", "main.ts"), `import { shout } from "./lib/shout.ts";\nimport data from "./data.json";\nexport default (i: { name: string }) => shout(i.name) + data.suffix;\n`);
  writeFileSync(join(root, "job", "lib", "shout.ts"), `export function shout(s: string): string {\n  if (s === "") throw new Error("empty name");\n  return s.toUpperCase();\n}\n`);
  writeFileSync(join(root, "job", "data.json"), `{ "suffix": "!" }`);
  writeFileSync(join(root, "secret.txt"), "do not read");
  writeFileSync(join(root, "job", "escape.js"), `import text from "../secret.txt"; export default () => text;`);
  writeFileSync(join(root, "job", "package.js"), `import _ from "lodash"; export default () => 1;`);

  it("bundles the file's own imports", async () => {
    expect(await sandbox.runFile(join(root, "job", "main.ts"), { input: { name: "ann" } })).toMatchObject({ ok: true, value: "ANN!" });
  });

  it("maps stacks to the imported file's own lines", async () => {
    const result = await sandbox.runFile(join(root, "job", "main.ts"), { input: { name: "" } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.stack).toMatch(/lib\/shout\.ts:2:\d+/);
  });

  it("refuses imports outside the script's folder and packages that are not installed", async () => {
    const escape = await sandbox.runFile(join(root, "job", "escape.js"));
    expect(escape).toMatchObject({ ok: false, error: { kind: "script", name: "ImportError" } });
    if (!escape.ok) expect(escape.error.message).toContain("outside the script's folder");
    const pkg = await sandbox.runFile(join(root, "job", "package.js"));
    expect(pkg.ok).toBe(false);
    if (!pkg.ok) expect(pkg.error.message).toContain('Cannot import "lodash"');
  });
});
