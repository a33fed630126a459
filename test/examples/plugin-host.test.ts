// examples/plugin-host/ (issue 9 §6-§8): an app gives three third-party plugins one host
// module; the plugins call app.store (sync), app.notify and await app.fetchProfile, with
// their state kept between calls; the hostile one is stopped by the app's quota and by
// cpuTimeMs without hurting the others. Called as a function, and built and run as a
// program. The plugins type-check against scriptbox/guest plus app.d.ts, whose types come
// from the host's module object through GuestModule, and a drift is a type error.
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, expect, test } from "vitest";
import { main } from "../../examples/plugin-host/main.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLE = join(ROOT, "examples/plugin-host");
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function run(file: string, args: string[]): Promise<{ code: number; output: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file, ...args], { cwd: ROOT, timeout: 110_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout, stderr }),
    );
  });
}

test("three plugins share one host module; the hostile one is stopped and the others carry on", { timeout: 60_000 }, async () => {
  const lines: string[] = [];
  const report = await main((line) => lines.push(line));
  expect(lines[0]).toBe("loaded welcome.ts: greetedCount, onMemberJoined");
  expect(report.events.u1).toEqual({ welcome: "Ada", digest: "counted", hostile: "flooded 100 keys, then QUOTA" });
  expect(report.events.nobody!.welcome).toBe("script: no profile nobody");
  expect(report.events.nobody!.digest).toBe("skipped");
  expect(report.events.u3).toMatchObject({ welcome: "Edsger", digest: "counted" });
  expect(report.notifications).toEqual([
    "welcome.ts: welcome, Ada (member since 2021)",
    "welcome.ts: welcome, Grace (member since 2022)",
    "welcome.ts: welcome, Edsger (member since 2023)",
    "digest.ts: digest #1: 3 members (app 1.4.2)",
  ]);
  // State kept between calls, in the plugin (digest's counter) and in the host's per-plugin store.
  expect(report.greeted).toBe(3);
  expect(report.storeSizes).toEqual({ welcome: 1, digest: 1, hostile: 100 });
  expect(report.crash).toBe("script: the plugin crashed on purpose");
  expect(report.spin).toBe("cpu: cpuTimeMs limit (250 ms) exceeded; the plugin was unloaded");
  expect(report.afterSpin).toMatch(/^script: the plugin is not loaded/);
});

test("runs as a program: esbuild to dist/examples/plugin-host.mjs, then node", { timeout: 120_000 }, async () => {
  const outfile = join(ROOT, "dist/examples/plugin-host.mjs");
  await build({ entryPoints: [join(EXAMPLE, "main.ts")], bundle: true, packages: "external", format: "esm", platform: "node", outfile, logLevel: "silent" });
  const { code, output, stderr } = await run(outfile, ["examples/plugin-host/plugins"]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(output).toContain('member u1: {"welcome":"Ada","digest":"counted","hostile":"flooded 100 keys, then QUOTA"}');
  expect(output).toContain("hostile.ts onSpin: cpu: cpuTimeMs limit (250 ms) exceeded; the plugin was unloaded");
  expect(output).toContain("notification: digest.ts: digest #1: 3 members (app 1.4.2)");
});

test("the plugins type-check against GuestModule<typeof the host module>, and a drift is a type error", { timeout: 120_000 }, async () => {
  const ok = await run(TSC, ["-p", join(EXAMPLE, "plugins"), "--pretty", "false"]);
  expect(ok.output).toBe("");
  expect(ok.code).toBe(0);

  // A copy of the example whose plugins misuse the module: each line is a mistake the types catch.
  const copy = mkdtempSync(join(ROOT, "dist/plugin-host-types-"));
  dirs.push(copy);
  cpSync(EXAMPLE, copy, { recursive: true });
  writeFileSync(
    join(copy, "plugins/tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", lib: ["ES2023"], types: [], module: "ESNext", moduleResolution: "Bundler", strict: true, noEmit: true, skipLibCheck: true },
      files: [join(ROOT, "types/guest.d.ts"), "../app.d.ts"],
      include: ["*.ts"],
    }),
  );
  writeFileSync(
    join(copy, "plugins/mistakes.ts"),
    [
      'import app, { fetchProfile, store, notify } from "app";',
      "export async function a() {",
      "  const p = fetchProfile(1);", // line 3: id is a string
      "  const name: string = (await fetchProfile(\"u1\")).nam;", // line 4: no such field
      "  const joined: Date = (await fetchProfile(\"u1\")).joined;", // line 5: Dates arrive as ISO strings
      "  const size: Promise<number> = store.set(\"k\", 1);", // line 6: hostSync: the number itself, not a promise
      "  const sent: number = await notify(\"x\");", // line 7: void
      "  app.store.remove(\"k\");", // line 8: not declared by the host
      "  const v: number = app.version;", // line 9: a string
      "  return p;",
      "}",
      "export function b() { const n: number = store.get(\"k\"); return n; }", // line 12: unknown
    ].join("\n"),
  );
  const bad = await run(TSC, ["-p", join(copy, "plugins"), "--pretty", "false"]);
  expect(bad.code).not.toBe(0);
  const lines = [...bad.output.matchAll(/mistakes\.ts\((\d+),\d+\): error TS\d+/g)].map((m) => Number(m[1]));
  expect([...new Set(lines)].sort((x, y) => x - y)).toEqual([3, 4, 5, 6, 7, 8, 9, 12]);
});
