// The CLI with the examples: `scriptbox demo` (the one-command tour), and `scriptbox run`
// with the cloud flags and secrets from the environment. Spawns the built CLI.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";
import { startSeededEmulator, type Emulator } from "../cloud/helpers.js";
import { EXAMPLES } from "./helpers.js";

const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));
const elsewhere = mkdtempSync(join(tmpdir(), "scriptbox-cli-"));
let emulator: Emulator | undefined;

afterAll(async () => {
  await emulator?.close();
  rmSync(elsewhere, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: elsewhere, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test("scriptbox demo: runs the team report and the onboarding against a seeded emulator, from any folder, and exits 0", { timeout: 60_000 }, async () => {
  const { code, stdout, stderr } = await cli(["demo"]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(stdout).toMatch(/^scriptbox demo: a cloud API emulator with seeded data is listening on http:\/\/127\.0\.0\.1:\d+/);
  expect(stdout).toContain("1/2  scriptbox run examples/team-report.ts");
  expect(stdout).toMatch(/│ Plan Team \(active until [\d-]+\): 2 of 5 seats used, 3 free/);
  expect(stdout).toMatch(/│ │ 0 +│ 'Ada Lovelace' +│ 'ada@acme\.example' +│ 'admin' +│ 'yes'/);
  expect(stdout).toContain('"team": {"id":"team_');
  expect(stdout).toContain("2/2  scriptbox run examples/onboard-users.ts --input");
  expect(stdout).toContain("│ invited linus@acme.example as member, with a seat");
  expect(stdout).toContain("│ invited frances@acme.example as member, without a seat");
  expect(stdout).toContain("│ skipped grace@acme.example: already a member");
  expect(stdout.match(/\(ok in \d+ ms, \d+ requests to the emulator\)/g)).toHaveLength(2);
  // The seeded credentials are secrets: never printed.
  expect(stdout).not.toMatch(/sbpat_|sbsess_/);
});

test("scriptbox run an example with --cloud-url, --secret NAME=ENV_VAR@origin and --cloud-token-secret", { timeout: 60_000 }, async () => {
  emulator = await startSeededEmulator();
  const { code, stdout, stderr } = await cli(
    ["run", join(EXAMPLES, "team-report.ts"), "--json", "--cloud-url", emulator.baseUrl, "--secret", `CLOUD_PAT=ACME_PAT@${emulator.baseUrl}`, "--cloud-token-secret", "CLOUD_PAT"],
    { ACME_PAT: emulator.seed.CLOUD_PAT },
  );
  expect(code, stderr).toBe(0);
  const result = JSON.parse(stdout) as { ok: boolean; value: { team: { name: string }; members: unknown[] }; logs: unknown[] };
  expect(result.ok).toBe(true);
  expect(result.value.team.name).toBe("Acme Robotics");
  expect(result.value.members).toHaveLength(5);
  expect(stderr).toContain("Members (5)");
  expect(stdout + stderr).not.toContain(emulator.seed.CLOUD_PAT);
});
