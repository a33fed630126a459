// Every sample in README.md and docs/*.md marked runnable (see samples.ts) runs and exits 0,
// so the documentation cannot drift from the code. Shell blocks run in bash with the built
// CLI on PATH as `scriptbox` (`npx scriptbox` is rewritten to it: this repository is the
// package) and the repository's node_modules/.bin (tsc, esbuild); TypeScript and
// JavaScript blocks are Node programs, bundled by esbuild with packages left external and
// run with node. Each document gets a working folder whose node_modules links the
// repository's packages and `scriptbox` itself (npm test builds dist/ first).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { samplesOf, type Sample } from "./samples.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const ESBUILD = join(ROOT, "node_modules", ".bin", "esbuild");
const folders: string[] = [];

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function workingFolder(): { dir: string; bin: string } {
  const dir = mkdtempSync(join(tmpdir(), "scriptbox-docs-"));
  folders.push(dir);
  const modules = join(dir, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(join(ROOT, "node_modules"))) {
    if (entry !== ".cache" && entry !== ".package-lock.json") symlinkSync(join(ROOT, "node_modules", entry), join(modules, entry));
  }
  symlinkSync(ROOT, join(modules, "scriptbox"), "dir");
  const bin = join(dir, ".bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "scriptbox"), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "dist", "src", "cli.js")}" "$@"\n`);
  chmodSync(join(bin, "scriptbox"), 0o755);
  return { dir, bin };
}

function run(sample: Sample, folder: { dir: string; bin: string }) {
  const cwd = sample.inRepo ? ROOT : folder.dir;
  const env = { ...process.env, PATH: `${folder.bin}:${join(ROOT, "node_modules", ".bin")}:${process.env.PATH}` };
  if (sample.language === "sh" || sample.language === "bash") {
    const script = `set -euo pipefail\n${sample.code.replace(/\bnpx scriptbox\b/g, "scriptbox")}`;
    return spawnSync("bash", ["-c", script], { cwd, env, encoding: "utf8", timeout: 120_000 });
  }
  const source = join(folder.dir, `sample-${sample.line}.${sample.language}`);
  const bundled = join(folder.dir, `sample-${sample.line}.mjs`);
  writeFileSync(source, sample.code);
  const build = spawnSync(ESBUILD, [source, "--bundle", "--packages=external", "--format=esm", "--platform=node", `--outfile=${bundled}`, "--log-level=error"], { cwd: folder.dir, encoding: "utf8" });
  if (build.status !== 0) return build;
  return spawnSync(process.execPath, [bundled], { cwd, env, encoding: "utf8", timeout: 120_000 });
}

const WITH_SAMPLES = DOCS.filter((doc) => samplesOf(join(ROOT, doc)).some((s) => s.action === "run"));

it("the marker is in use: README.md, docs/cloud.md and docs/packages.md have runnable samples", () => {
  expect(WITH_SAMPLES).toEqual(expect.arrayContaining(["README.md", "docs/cloud.md", "docs/packages.md"]));
});

describe.each(WITH_SAMPLES)("%s", (doc) => {
  const samples = samplesOf(join(ROOT, doc));
  let folder: { dir: string; bin: string } | undefined;
  for (const sample of samples) {
    if (sample.action === "file") continue;
    it(`line ${sample.line} (${sample.language}) runs and exits 0`, { timeout: 180_000 }, () => {
      folder ??= workingFolder();
      // The files the document defines before this block.
      for (const file of samples.filter((s) => s.action === "file" && s.line < sample.line)) writeFileSync(join(folder.dir, file.name!), file.code);
      const result = run(sample, folder);
      if (result.error) throw result.error; // spawn failure or timeout
      expect(result.status, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
    });
  }
});
