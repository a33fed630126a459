// The `scriptbox/guest` types (types/guest.d.ts): every example script type-checks against
// them with `tsc --noEmit` and no DOM or Node types, both through examples/tsconfig.json
// and the way a script project outside this repository uses the package entry
// ("types": ["scriptbox/guest"]); and they are real types, not `any`.
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import { EXAMPLES } from "./helpers.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const SCRIPTS = readdirSync(EXAMPLES).filter((f) => f.endsWith(".ts") && f !== "embed-plugin.ts");
const dirs: string[] = [];

function tsc(project: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, "-p", project, "--pretty", "false"], { cwd: ROOT, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

/** A script project outside the repository that depends on the package (node_modules/scriptbox -> this repo). */
function scriptProject(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "scriptbox-guest-types-"));
  dirs.push(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(ROOT, join(dir, "node_modules", "scriptbox"), "dir");
  const compilerOptions = { target: "ES2022", lib: ["ES2023"], types: ["scriptbox/guest"], module: "ESNext", moduleResolution: "Bundler", strict: true, noEmit: true };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test("examples/tsconfig.json: every example script type-checks against types/guest.d.ts alone", { timeout: 120_000 }, async () => {
  expect(SCRIPTS.sort()).toEqual(["device-login.ts", "onboard-users.ts", "rotate-pat.ts", "team-report.ts"]);
  const { code, output } = await tsc(join(EXAMPLES, "tsconfig.json"));
  expect(output).toBe("");
  expect(code).toBe(0);
});

test('a script project with "types": ["scriptbox/guest"] type-checks the examples, and catches mistakes', { timeout: 120_000 }, async () => {
  const good = scriptProject({});
  for (const name of SCRIPTS) copyFileSync(join(EXAMPLES, name), join(good, name));
  const ok = await tsc(join(good, "tsconfig.json"));
  expect(ok.output).toBe("");
  expect(ok.code).toBe(0);

  const bad = scriptProject({
    "mistakes.ts": [
      'import { cloud, CloudError } from "cloud";',
      'import { fetch as httpFetch } from "http";',
      'import { secret } from "runtime";',
      "export default async () => {",
      "  await cloud.team.invitations.create({ email: 42 });", // line 5
      "  await cloud.team.users.lst();", // line 6
      "  const team = await cloud.team.get(); team.created_at;", // line 7
      "  document.title;", // line 8
      "  process.env.HOME;", // line 9
      "  const n: number = secret(\"X\");", // line 10
      "  (await httpFetch(\"https://x.example\")).jsonn();", // line 11
      "  try { await cloud.user.get(); } catch (e) { if (e instanceof CloudError) { const s: string = e.status; } }", // line 12
      "};",
    ].join("\n"),
  });
  const { code, output } = await tsc(join(bad, "tsconfig.json"));
  expect(code).not.toBe(0);
  const lines = [...output.matchAll(/mistakes\.ts\((\d+),\d+\): error (TS\d+)/g)].map((m) => Number(m[1]));
  expect([...new Set(lines)].sort((a, b) => a - b)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
});

test("the web API types (crypto.subtle, performance, structuredClone, Intl) accept real use and catch mistakes", { timeout: 120_000 }, async () => {
  const good = scriptProject({
    "webapis.ts": [
      "export default async (): Promise<string> => {",
      '  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("k"), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);',
      '  const mac: ArrayBuffer = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode("body"));',
      '  const ok: boolean = await crypto.subtle.verify({ name: "HMAC" }, key, mac, new Uint8Array(4));',
      '  const digest = await crypto.subtle.digest("SHA-512", new Uint8Array(0));',
      '  const jwk = await crypto.subtle.exportKey("jwk", await crypto.subtle.generateKey({ name: "HMAC", hash: { name: "SHA-1" } }, true, ["sign"]));',
      "  const started: number = performance.now() + performance.timeOrigin;",
      "  const copy: { when: Date; tags: Set<string> } = structuredClone({ when: new Date(), tags: new Set(['a']) });",
      '  const money: string = new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(12.5);',
      "  return [ok, digest.byteLength, jwk.k, started, copy.when.getTime(), money, key instanceof CryptoKey].join();",
      "};",
    ].join("\n"),
  });
  const ok = await tsc(join(good, "tsconfig.json"));
  expect(ok.output).toBe("");
  expect(ok.code).toBe(0);

  const bad = scriptProject({
    "mistakes.ts": [
      "export default async () => {",
      '  await crypto.subtle.sign("HMAC", "not a key", new Uint8Array(1));', // line 2
      '  await crypto.subtle.importKey("raw", new Uint8Array(1), { name: "HMAC", hash: "SHA-256" }, false, ["encrypt"]);', // line 3
      '  await crypto.subtle.digest("SHA-256", "text");', // line 4
      "  const s: string = performance.now();", // line 5
      "  new CryptoKey();", // line 6
      "};",
    ].join("\n"),
  });
  const { code, output } = await tsc(join(bad, "tsconfig.json"));
  expect(code).not.toBe(0);
  const lines = [...output.matchAll(/mistakes\.ts\((\d+),\d+\): error (TS\d+)/g)].map((m) => Number(m[1]));
  expect([...new Set(lines)].sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6]);
});
