// `scriptbox emulator` as a separate process over a real SQLite file: acknowledged writes
// survive kill -9, a restart on the same file reads them back, SIGTERM stops it cleanly.
// Needs the built CLI (npm test builds first; alone: SCRIPTBOX_BUILD_LENIENT=1 npm run build).
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startEmulator } from "../../emulator/index.js";
import { MIGRATIONS } from "../../emulator/migrations.js";
import { call, CREATE_PAT, graphql } from "./helpers.js";

const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "scriptbox-emulator-cli-"));
const children: ChildProcessWithoutNullStreams[] = [];

interface Started {
  child: ChildProcessWithoutNullStreams;
  baseUrl: string;
  seed: Record<string, string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Spawns the CLI and waits for its "listening on" line (stderr); seed lines come first on stdout. */
function startCli(args: string[]): Promise<Started> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npm run build)`);
  const child = spawn(process.execPath, [CLI, "emulator", "--port", "0", ...args], { stdio: "pipe" });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 30 s: ${stderr}`)), 30_000);
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        const seed = Object.fromEntries(stdout.trim().split("\n").filter(Boolean).map((line) => line.split(/=(.*)/s).slice(0, 2)));
        resolve({ child, baseUrl: match[1]!, seed, exited });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`emulator exited with ${code} before listening: ${stderr}`));
    });
  });
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Child processes start slower on a loaded machine: generous per-test time, no timing assertions.
describe("scriptbox emulator (CLI)", { timeout: 120_000 }, () => {
  it("prints the seed as KEY=value lines, serves them, and exits 0 on SIGTERM", async () => {
    const started = await startCli(["--seed"]);
    expect(Object.keys(started.seed)).toEqual([
      "CLOUD_BASE_URL", "CLOUD_PAT", "CLOUD_SESSION", "CLOUD_TEAM_ID", "CLOUD_WORKSPACE_ID", "CLOUD_INSTANCE_REGISTRATION_KEY", "CLOUD_VOUCHER_CODE",
    ]);
    expect(started.seed.CLOUD_BASE_URL).toBe(started.baseUrl);
    const team = await call(started.baseUrl, "GET", "/api/v1/team", { token: started.seed.CLOUD_PAT });
    expect(team.body.id).toBe(started.seed.CLOUD_TEAM_ID);
    started.child.kill("SIGTERM");
    const { code, stderr } = await started.exited;
    expect(code).toBe(0);
    expect(stderr).toContain("stopped (SIGTERM)");
  });

  it("keeps acknowledged writes through kill -9 and reads them back after a restart on the same file", async () => {
    const db = join(dir, "crash.sqlite");
    const first = await startCli(["--db", db, "--seed"]);
    const { CLOUD_PAT: pat, CLOUD_SESSION: session, CLOUD_TEAM_ID: teamId } = first.seed;
    const created = await call(first.baseUrl, "POST", "/api/v1/team/invitations", { token: pat, json: { email: "durable@acme.example", role: "member", use_seat: true } });
    expect(created.status).toBe(201);
    const newPat = await graphql({ baseUrl: first.baseUrl } as never, session!, CREATE_PAT, { input: { name: "after-crash", teamId } });
    expect(newPat.status).toBe(200);

    first.child.kill("SIGKILL"); // no chance to flush or close anything
    const { signal } = await first.exited;
    expect(signal).toBe("SIGKILL");

    const second = await startCli(["--db", db]); // no --seed: nothing new is created
    expect(second.seed).toEqual({});
    const invitations = await call(second.baseUrl, "GET", "/api/v1/team/invitations", { token: pat });
    expect(invitations.status).toBe(200);
    expect(invitations.body).toContainEqual(expect.objectContaining({ id: created.body.id, email: "durable@acme.example", use_seat: true }));
    const viaNewPat = await call(second.baseUrl, "GET", "/api/v1/user", { token: newPat.body.data.createPat.pat.token });
    expect(viaNewPat.body.email).toBe("ada@acme.example");
    const subscription = await call(second.baseUrl, "GET", "/api/v1/team/subscription", { token: pat });
    expect(subscription.body.seats_used).toBe(3);

    // Seeding the same file again reuses the records and replaces the seed's credentials;
    // PATs people made are kept.
    second.child.kill("SIGKILL");
    await second.exited;
    const third = await startCli(["--db", db, "--seed"]);
    expect(third.seed.CLOUD_TEAM_ID).toBe(teamId);
    expect(third.seed.CLOUD_PAT).not.toBe(pat);
    expect((await call(third.baseUrl, "GET", "/api/v1/team", { token: pat })).status).toBe(401);
    expect((await call(third.baseUrl, "GET", "/api/v1/user", { token: newPat.body.data.createPat.pat.token })).status).toBe(200);
    expect((await call(third.baseUrl, "GET", "/api/v1/team/users", { token: third.seed.CLOUD_PAT })).body).toHaveLength(5);
    third.child.kill("SIGTERM");
    expect((await third.exited).code).toBe(0);
  });

  it("two processes on one --db file serve concurrent writes with no 5xx, and each sees the other's", async () => {
    const db = join(dir, "shared.sqlite");
    const a = await startCli(["--db", db, "--seed"]);
    const b = await startCli(["--db", db]);
    const pat = a.seed.CLOUD_PAT!;
    const statuses = new Map<number, number>();
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    let created = 0;
    // 8 workers, alternating processes, each creating and deleting invitations and PATs.
    await Promise.all(Array.from({ length: 8 }, async (_, worker) => {
      for (let i = 0; i < 20; i++) {
        const base = (worker + i) % 2 === 0 ? a.baseUrl : b.baseUrl;
        const other = base === a.baseUrl ? b.baseUrl : a.baseUrl;
        const invite = await call(base, "POST", "/api/v1/team/invitations", { token: pat, json: { email: `w${worker}-${i}@acme.example`, role: "member", use_seat: false } });
        count(invite.status);
        if (invite.status === 201) {
          created++;
          count((await call(other, "DELETE", `/api/v1/team/invitations/${invite.body.id}`, { token: pat })).status);
        }
        const newPat = await graphql({ baseUrl: other } as never, a.seed.CLOUD_SESSION!, CREATE_PAT, { input: { name: `w${worker}-${i}`, teamId: a.seed.CLOUD_TEAM_ID } });
        count(newPat.status);
      }
    }));
    const failures = [...statuses].filter(([status]) => status >= 500);
    expect(failures).toEqual([]);
    expect(created).toBe(160);
    a.child.kill("SIGTERM");
    b.child.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    expect((await b.exited).code).toBe(0);
  });

  it("SIGTERM lets a request in flight finish before the process exits", async () => {
    const started = await startCli(["--seed"]);
    const port = Number(new URL(started.baseUrl).port);
    const body = JSON.stringify({ email: "in-flight@acme.example", role: "member", use_seat: false });
    const socket = connect(port, "127.0.0.1");
    let response = "";
    socket.on("data", (chunk) => (response += chunk));
    const closed = new Promise((resolve) => socket.on("close", resolve));
    socket.write(`POST /api/v1/team/invitations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${started.seed.CLOUD_PAT}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    started.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.write(body.slice(10));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 201 /);
    const { code, stderr } = await started.exited;
    expect(code).toBe(0);
    expect(stderr).toContain("stopped (SIGTERM)");
  });

  it("uses WAL on a file and records the schema version", async () => {
    const db = join(dir, "wal.sqlite");
    const emulator = await startEmulator({ dbPath: db });
    await emulator.close();
    const raw = new Database(db, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(raw.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    raw.close();
  });

  it("refuses a database from a newer emulator, and reports a busy port, with exit code 1", async () => {
    const db = join(dir, "future.sqlite");
    const raw = new Database(db);
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();
    await expect(startCli(["--db", db])).rejects.toThrow(/exited with 1 .*newer than this emulator/s);

    const taken = await startCli([]);
    const port = new URL(taken.baseUrl).port;
    const child = spawn(process.execPath, [CLI, "emulator", "--port", port], { stdio: "pipe" });
    children.push(child as ChildProcessWithoutNullStreams);
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain("EADDRINUSE");
  });

  it("without --db, each emulator has its own private in-memory database", async () => {
    const a = await startEmulator({ seed: true });
    const b = await startEmulator({ seed: true });
    try {
      expect(a.seed!.CLOUD_TEAM_ID).not.toBe(b.seed!.CLOUD_TEAM_ID);
      expect((await call(b.baseUrl, "GET", "/api/v1/team", { token: a.seed!.CLOUD_PAT })).status).toBe(401);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("rejects a non-database file with a clear error", async () => {
    const bogus = join(dir, "bogus.sqlite");
    writeFileSync(bogus, "this is not a database, just text that is long enough to fill a header".repeat(20));
    await expect(startEmulator({ dbPath: bogus })).rejects.toThrow(/not a database/);
  });
});
