// bullmq is an optional peer dependency (issue 14): without it, `scriptbox run` and the
// library work as before, and the queue (library and commands) says in one line how to
// install it. The child processes run with a resolve hook that hides bullmq.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "./cli-process.js";

const HIDE = fileURLToPath(new URL("./fixtures/hide-bullmq.mjs", import.meta.url));
const QUEUE_ENTRY = fileURLToPath(new URL("../../dist/src/queue.js", import.meta.url));
const HINT = /the script queue needs bullmq, an optional dependency: npm install bullmq@\^5\.\d+\.\d+/;
let dir: string;

function node(args: string[]) {
  return spawnSync(process.execPath, ["--import", HIDE, ...args], { cwd: dir, encoding: "utf8", timeout: 30_000 });
}

describe("without bullmq installed", () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "scriptbox-no-bullmq-"));
    writeFileSync(join(dir, "job.js"), "export default (n) => n + 1;\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the hook really hides bullmq", () => {
    const out = node(["--input-type=module", "-e", 'await import("bullmq")']);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toMatch(/Cannot find package 'bullmq'/);
  });

  it("scriptbox run still works", () => {
    const out = node([CLI, "run", "job.js", "--input", "1"]);
    expect(out.stdout).toBe("2\n");
    expect(out.status).toBe(0);
  });

  it("every queue command prints the install hint in one line and exits 2", () => {
    for (const args of [["submit", "job.js"], ["worker"], ["schedule", "list"], ["queue", "stats"]]) {
      const out = node([CLI, ...args]);
      expect(out.status, args.join(" ")).toBe(2);
      expect(out.stderr).toMatch(new RegExp(`^scriptbox: ${HINT.source}\\n$`));
    }
  });

  it("scriptbox/queue imports, and its first use rejects with QueueDependencyError and the hint", () => {
    const script = `const q = await import(${JSON.stringify(QUEUE_ENTRY)});
      const queue = q.createScriptQueue();
      for (const attempt of [() => queue.submit("export default 1"), () => q.startScriptWorker()]) {
        try { await attempt(); console.log("no error"); } catch (e) { console.log(e.name, e instanceof q.QueueDependencyError, e.message); }
      }`;
    const out = node(["--input-type=module", "-e", script]);
    expect(out.stderr).toBe("");
    const lines = out.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(new RegExp(`^QueueDependencyError true ${HINT.source}$`));
  });
});
