// `scriptbox demo`: the one-command tour. Starts a seeded cloud API emulator in this
// process on a free port, runs two example scripts against it the way `scriptbox run`
// does (sandbox.runFile, with the cloud option's PAT and session held as secrets), prints
// their logs and results, shuts everything down. Exit 0 when both scripts succeed.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startEmulator } from "../../emulator/index.js";
import { createSandbox } from "../../host/sandbox.js";
import type { RunResult } from "../../host/types.js";

/** The package root (where examples/ ships): the nearest folder above this file with a package.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("scriptbox demo: cannot find the package's folder (package.json) above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

const ONBOARD_INPUT = {
  emails: ["grace@acme.example", "margaret@acme.example", "linus@acme.example", "barbara@acme.example", "edsger@acme.example", "frances@acme.example"],
};

const RULE = "─".repeat(72);

function write(line = ""): void {
  process.stdout.write(`${line}\n`);
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `  │ ${line}`)
    .join("\n");
}

/** JSON with one line per top-level member, and per item of a top-level array: a result reads at a glance. */
function compactJson(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const items = (list: unknown[]) => (list.length === 0 ? "[]" : `[\n${list.map((item) => `    ${JSON.stringify(item)}`).join(",\n")}\n  ]`);
  if (Array.isArray(value)) return items(value).replace(/^ {2}/gm, "");
  const lines = Object.entries(value).map(([key, member]) => `  ${JSON.stringify(key)}: ${Array.isArray(member) ? items(member) : JSON.stringify(member)}`);
  return `{\n${lines.join(",\n")}\n}`;
}

function describeOutcome(result: RunResult): string {
  const { wallTimeMs, fetches } = result.stats;
  if (result.ok) return `ok in ${Math.round(wallTimeMs)} ms, ${fetches} request${fetches === 1 ? "" : "s"} to the emulator`;
  return `failed (${result.error.kind}): ${result.error.stack || `${result.error.name}: ${result.error.message}`}`;
}

export async function runDemoCommand(): Promise<number> {
  const root = packageRoot();
  const emulator = await startEmulator({ port: 0, seed: true });
  let failures = 0;
  try {
    const seed = emulator.seed!;
    write(`scriptbox demo: a cloud API emulator with seeded data is listening on ${emulator.baseUrl} (in memory).`);
    write("The scripts below run in sandboxes whose `cloud` client holds the seeded PAT and dashboard");
    write("session as secrets: a script sees only placeholders; the host adds the real values on the");
    write(`way to ${emulator.baseUrl}, and would refuse to send them anywhere else.`);

    const runs: { file: string; input?: unknown; what: string }[] = [
      { file: "team-report.ts", what: "the team, its subscription, members with roles and seats, pending invitations" },
      { file: "onboard-users.ts", input: ONBOARD_INPUT, what: "invite people idempotently, with seats while seats last" },
    ];
    for (const [index, { file, input, what }] of runs.entries()) {
      const path = join(root, "examples", file);
      write();
      write(RULE);
      write(`${index + 1}/${runs.length}  scriptbox run examples/${file}${input === undefined ? "" : ` --input '${JSON.stringify(input)}'`}`);
      write(`     ${what}`);
      write(RULE);
      const sandbox = await createSandbox({
        secrets: {
          CLOUD_PAT: { value: seed.CLOUD_PAT, origins: [emulator.baseUrl] },
          CLOUD_SESSION: { value: seed.CLOUD_SESSION, origins: [emulator.baseUrl] },
        },
        cloud: { baseUrl: emulator.baseUrl, token: { secret: "CLOUD_PAT" }, session: { secret: "CLOUD_SESSION" } },
        onLog: (entry) => write(indent(entry.message)),
      });
      let result: RunResult;
      try {
        result = await sandbox.runFile(path, { input });
      } finally {
        await sandbox.dispose();
      }
      if (result.ok) {
        write("  result:");
        write(indent(compactJson(result.value)));
      } else {
        failures++;
      }
      write(`  (${describeOutcome(result)})`);
    }
    write();
    write(RULE);
    write("Next: `scriptbox emulator --seed` prints CLOUD_BASE_URL, CLOUD_PAT, … for your own runs;");
    write("the examples' headers show their `scriptbox run` lines; docs/cloud.md describes the client.");
  } finally {
    await emulator.close();
  }
  return failures === 0 ? 0 : 1;
}
