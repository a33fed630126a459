// Each example script, run as `scriptbox run` runs it, against its own seeded emulator.
import { afterEach, describe, expect, test } from "vitest";
import { emulatorCall, startSeededEmulator, type Emulator } from "../cloud/helpers.js";
import { expectOk, runExample } from "./helpers.js";

let emulator: Emulator | undefined;
afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

describe("team-report.ts", () => {
  test("logs the team, the plan's seats, a members table and the pending invitations; returns them as JSON", async () => {
    emulator = await startSeededEmulator();
    const result = await runExample(emulator, "team-report.ts");
    const report = expectOk(result);
    expect(report.team).toEqual({ id: emulator.seed.CLOUD_TEAM_ID, name: "Acme Robotics", email: "billing@acme.example" });
    expect(report.subscription).toMatchObject({ plan: "Team", status: "active", seats: 5, seatsUsed: 2, endsAt: expect.stringMatching(/^\d{4}-\d\d-\d\d$/) });
    expect(report.members.map((m: { email: string; role: string; seat: boolean }) => [m.email, m.role, m.seat])).toEqual([
      ["ada@acme.example", "admin", true],
      ["grace@acme.example", "member", true],
      ["alan@acme.example", "member", false],
      ["katherine@acme.example", "member", false],
      ["ci-bot@acme.example", "member", false],
    ]);
    expect(report.pendingInvitations).toEqual([{ email: "margaret@acme.example", role: "member", seat: false, expires: expect.any(String) }]);
    const logs = result.lines.join("\n");
    expect(logs).toContain("Acme Robotics <billing@acme.example>");
    expect(logs).toMatch(/Plan Team \(active until \d{4}-\d\d-\d\d\): 2 of 5 seats used, 3 free/);
    expect(logs).toMatch(/│.*name.*│.*email.*│.*role.*│.*seat.*│/);
    expect(logs).toMatch(/│.*'Ada Lovelace'.*│.*'ada@acme\.example'.*│.*'admin'.*│.*'yes'.*│/);
    expect(logs).toContain("'(no name)'");
    expect(logs).toContain("Pending invitations (1)");
  });
});

describe("onboard-users.ts", () => {
  const input = {
    emails: ["grace@acme.example", "MARGARET@acme.example", "ann@acme.example", "bob@acme.example", " cy@acme.example ", "dee@acme.example", "ann@acme.example", "not-an-email"],
  };

  test("invites new people with seats while seats last, skips members and pending invitations, reports bad emails", async () => {
    emulator = await startSeededEmulator();
    const first = expectOk(await runExample(emulator, "onboard-users.ts", input));
    expect(first.invited.map((i: { email: string; seat: boolean }) => [i.email, i.seat])).toEqual([
      ["ann@acme.example", true],
      ["bob@acme.example", true],
      ["cy@acme.example", true],
      ["dee@acme.example", false], // the subscription's 5 seats: Ada, Grace + 3 reserved
    ]);
    expect(first.skipped).toEqual([
      { email: "grace@acme.example", reason: "already a member" },
      { email: "margaret@acme.example", reason: "invitation pending" },
      { email: "ann@acme.example", reason: "invitation pending" },
    ]);
    expect(first.failed).toEqual([{ email: "not-an-email", reason: expect.stringMatching(/422 validation_failed/) }]);
    expect(first.freeSeats).toBe(0);

    const invitations = await emulatorCall(emulator, "GET", "/api/v1/team/invitations");
    expect(invitations.body.map((i: { email: string }) => i.email).sort()).toEqual(["ann@acme.example", "bob@acme.example", "cy@acme.example", "dee@acme.example", "margaret@acme.example"]);
    const subscription = await emulatorCall(emulator, "GET", "/api/v1/team/subscription");
    expect(subscription.body.seats_used).toBe(5);
  });

  test("is idempotent: a second run invites nobody", async () => {
    emulator = await startSeededEmulator();
    expectOk(await runExample(emulator, "onboard-users.ts", input));
    const second = await runExample(emulator, "onboard-users.ts", input);
    const value = expectOk(second);
    expect(value.invited).toEqual([]);
    expect(value.skipped.map((s: { email: string }) => s.email)).toEqual(["grace@acme.example", "margaret@acme.example", "ann@acme.example", "bob@acme.example", "cy@acme.example", "dee@acme.example", "ann@acme.example"]);
    expect(second.lines.filter((l) => l.startsWith("invited"))).toEqual([]);
    const invitations = await emulatorCall(emulator, "GET", "/api/v1/team/invitations");
    expect(invitations.body).toHaveLength(5);
  });

  test("bad input is a readable TypeError", async () => {
    emulator = await startSeededEmulator();
    const result = await runExample(emulator, "onboard-users.ts", { emails: "ann@acme.example" });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatchObject({ name: "TypeError", message: 'input must be { "emails": ["ann@example.com", …] }' });
  });
});

describe("rotate-pat.ts", () => {
  test("creates a new PAT, proves it with /api/v1/user, then revokes the old one (found by name)", async () => {
    emulator = await startSeededEmulator();
    const result = await runExample(emulator, "rotate-pat.ts", { name: "seed", days: 30 });
    const value = expectOk(result);
    expect(value.pat).toMatchObject({ id: expect.stringMatching(/^pat_/), name: "seed", token: expect.stringMatching(/^sbpat_/) });
    expect(value.user).toBe("ada@acme.example");
    expect(value.revoked).toHaveLength(1);
    expect(value.revoked[0]).not.toBe(value.pat.id);
    // Outside the sandbox: the new token works, the seeded one is revoked.
    expect((await emulatorCall(emulator, "GET", "/api/v1/user", value.pat.token)).status).toBe(200);
    expect((await emulatorCall(emulator, "GET", "/api/v1/user", emulator.seed.CLOUD_PAT)).status).toBe(401);
    expect(result.lines.join("\n")).toMatch(/created pat_\w+ "seed" for Acme Robotics[\s\S]*the new PAT works: \/api\/v1\/user answers ada@acme\.example[\s\S]*revoked pat_/);
    expect(result.lines.join("\n")).not.toContain(value.pat.token);
  });

  test("revokes exactly input.oldPatId when given", async () => {
    emulator = await startSeededEmulator();
    const first = expectOk(await runExample(emulator, "rotate-pat.ts", { name: "ci" }));
    expect(first.revoked).toEqual([]);
    const second = expectOk(await runExample(emulator, "rotate-pat.ts", { name: "ci-2", oldPatId: first.pat.id }));
    expect(second.revoked).toEqual([first.pat.id]);
    expect((await emulatorCall(emulator, "GET", "/api/v1/user", first.pat.token)).status).toBe(401);
    expect((await emulatorCall(emulator, "GET", "/api/v1/user", emulator.seed.CLOUD_PAT)).status).toBe(200);
  });
});

describe("device-login.ts", () => {
  async function login(decide: "approve" | "deny") {
    emulator = await startSeededEmulator({ deviceInterval: 0.2 });
    const base = emulator.baseUrl;
    let decided: Promise<{ status: number }> | undefined;
    const run = runExample(emulator, "device-login.ts", undefined, {
      cloud: { baseUrl: base },
      env: { CLOUD_INSTANCE_REGISTRATION_KEY: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
      // The person: reads the code from the script's output and decides with their PAT.
      onLog: (entry) => {
        const code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(entry.message)?.[1];
        if (code) decided = emulatorCall(emulator!, "POST", `/oauth2/device/${decide}?user_code=${code}`);
      },
    });
    const result = await run;
    expect(decided, "the script printed a user code").toBeDefined();
    expect((await decided!).status).toBe(200);
    return result;
  }

  test("prints the user code, polls until the person approves, signs in with the token", async () => {
    const result = await login("approve");
    const value = expectOk(result);
    expect(value).toEqual({ user: { id: expect.stringMatching(/^usr_/), name: "Ada Lovelace", email: "ada@acme.example" }, scope: "user:read", expiresIn: 3600, refreshable: true });
    const logs = result.logs.map((l) => l.message).join("\n");
    expect(logs).toMatch(/registered the OAuth client cli_/);
    expect(logs).toMatch(new RegExp(`To sign in, open ${emulator!.baseUrl}/device and enter the code [A-Z]{4}-[A-Z]{4}`));
    expect(logs).toContain('Signed in as Ada Lovelace (scope "user:read")');
  });

  test("a denial ends the script with a CloudError access_denied", async () => {
    const result = await login("deny");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatchObject({ name: "CloudError", message: expect.stringMatching(/\(400 access_denied, POST \/oauth2\/token\)$/) });
  });
});
