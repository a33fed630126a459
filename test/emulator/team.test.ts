import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceClock, client, databaseSnapshot, patFor, seededUser, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
let api: ReturnType<typeof client>;
let adminPat: string;
let memberPat: string;
let otherTeamPat: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
  adminPat = emu.seed.CLOUD_PAT;
  memberPat = (await patFor(emu, seededUser(emu, "alan@acme.example"))).token;
  otherTeamPat = (await patFor(emu, seededUser(emu, "hank@globex.example"))).token;
});
afterAll(() => emu.close());

const keys = (o: object) => Object.keys(o).sort();
const TEAM_USER_FIELDS = ["created_at", "email", "id", "name", "object", "role", "updated_at", "use_seat"];
const INVITATION_FIELDS = ["created_at", "email", "expires_at", "id", "object", "role", "updated_at", "use_seat"];

describe("GET /api/v1/team", () => {
  it("returns the PAT's team with exactly the spec's fields", async () => {
    const { status, body } = await api("GET", "/api/v1/team", { token: adminPat });
    expect(status).toBe(200);
    expect(keys(body)).toEqual(["created_at", "email", "id", "name", "object", "updated_at"]);
    expect(body).toMatchObject({ id: emu.seed.CLOUD_TEAM_ID, object: "team", name: "Acme Robotics", email: "billing@acme.example" });
    expect(Number.isInteger(body.created_at)).toBe(true);
    expect(body.created_at).toBeLessThan(Date.now() / 1000 + 5); // Unix seconds, not ms
  });

  it("is readable by a member, and another team's PAT sees its own team", async () => {
    expect((await api("GET", "/api/v1/team", { token: memberPat })).body.id).toBe(emu.seed.CLOUD_TEAM_ID);
    const other = await api("GET", "/api/v1/team", { token: otherTeamPat });
    expect(other.body.name).toBe("Globex");
    expect(other.body.id).not.toBe(emu.seed.CLOUD_TEAM_ID);
  });
});

describe("team users", () => {
  it("lists team users with the spec's fields; a name may be null", async () => {
    const { status, body } = await api("GET", "/api/v1/team/users", { token: memberPat });
    expect(status).toBe(200);
    expect(body.length).toBe(5);
    for (const user of body) {
      expect(keys(user)).toEqual(TEAM_USER_FIELDS);
      expect(user.object).toBe("team_user");
      expect(["admin", "member"]).toContain(user.role);
      expect(user.id).toMatch(/^usr_/);
    }
    expect(body.find((u: { email: string }) => u.email === "ci-bot@acme.example").name).toBeNull();
    expect(body.filter((u: { role: string }) => u.role === "admin").length).toBe(1);
  });

  it("members may read but not change: 403 and nothing written", async () => {
    const grace = seededUser(emu, "grace@acme.example");
    const before = databaseSnapshot(emu.dbPath);
    for (const [method, path] of [
      ["DELETE", `/api/v1/team/users/${grace.id}`],
      ["PUT", `/api/v1/team/users/${grace.id}/seat`],
      ["DELETE", `/api/v1/team/users/${grace.id}/seat`],
    ] as const) {
      const answer = await api(method, path, { token: memberPat });
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(answer.body).toMatchObject({ code: 403, error: "forbidden" });
    }
    const invite = await api("POST", "/api/v1/team/invitations", { token: memberPat, json: { email: "new@acme.example", role: "member", use_seat: false } });
    expect(invite.status).toBe(403);
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("another team's user is a 404", async () => {
    const hank = seededUser(emu, "hank@globex.example");
    for (const [method, path] of [
      ["DELETE", `/api/v1/team/users/${hank.id}`],
      ["PUT", `/api/v1/team/users/${hank.id}/seat`],
      ["DELETE", `/api/v1/team/users/${hank.id}/seat`],
    ] as const) {
      const answer = await api(method, path, { token: adminPat });
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual({ code: 404, error: "not_found", message: expect.any(String) });
    }
  });

  it("the last admin cannot be removed (409), a member can", async () => {
    const ada = seededUser(emu, "ada@acme.example");
    const last = await api("DELETE", `/api/v1/team/users/${ada.id}`, { token: adminPat });
    expect(last.status).toBe(409);
    expect(last.body.error).toBe("last_admin");

    const katherine = seededUser(emu, "katherine@acme.example");
    const removed = await api("DELETE", `/api/v1/team/users/${katherine.id}`, { token: adminPat });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ deleted: true, id: katherine.id, object: "team_user" });
    expect((await api("DELETE", `/api/v1/team/users/${katherine.id}`, { token: adminPat })).status).toBe(404);
    const users = (await api("GET", "/api/v1/team/users", { token: adminPat })).body;
    expect(users.map((u: { id: string }) => u.id)).not.toContain(katherine.id);
  });

  it("a PAT whose owner left the team gets 403 on team endpoints but still reads /user", async () => {
    const bot = seededUser(emu, "ci-bot@acme.example");
    const botPat = (await patFor(emu, bot)).token;
    expect((await api("GET", "/api/v1/team", { token: botPat })).status).toBe(200);
    expect((await api("DELETE", `/api/v1/team/users/${bot.id}`, { token: adminPat })).status).toBe(200);
    const team = await api("GET", "/api/v1/team", { token: botPat });
    expect(team.status).toBe(403);
    expect((await api("GET", "/api/v1/user", { token: botPat })).body.email).toBe("ci-bot@acme.example");
  });
});

describe("seats and the subscription", () => {
  it("the subscription record shows plan, seats and seats used", async () => {
    const { status, body } = await api("GET", "/api/v1/team/subscription", { token: memberPat });
    expect(status).toBe(200);
    expect(keys(body)).toEqual(["created_at", "ends_at", "id", "object", "plan", "seats", "seats_used", "starts_at", "status", "updated_at"]);
    expect(body).toMatchObject({ object: "subscription", plan: { object: "plan", id: "plan_team", name: "Team" }, seats: 5, seats_used: 2, status: "active" });
    expect(body.starts_at).toBeLessThan(body.ends_at);
  });

  it("a team without a subscription answers null", async () => {
    const { status, text } = await api("GET", "/api/v1/team/subscription", { token: otherTeamPat });
    expect(status).toBe(200);
    expect(text).toBe("null");
  });

  it("seats are assigned while they last, then 409; revoking frees one", async () => {
    const alan = seededUser(emu, "alan@acme.example");
    const seated = await api("PUT", `/api/v1/team/users/${alan.id}/seat`, { token: adminPat });
    expect(seated.status).toBe(200);
    expect(keys(seated.body)).toEqual(TEAM_USER_FIELDS);
    expect(seated.body).toMatchObject({ id: alan.id, object: "team_user", use_seat: true });
    // Idempotent: assigning again changes nothing and takes no second seat.
    expect((await api("PUT", `/api/v1/team/users/${alan.id}/seat`, { token: adminPat })).body.use_seat).toBe(true);
    expect((await api("GET", "/api/v1/team/subscription", { token: adminPat })).body.seats_used).toBe(3);

    // Fill the remaining two seats with invitations that take a seat.
    for (const email of ["s1@acme.example", "s2@acme.example"]) {
      expect((await api("POST", "/api/v1/team/invitations", { token: adminPat, json: { email, role: "member", use_seat: true } })).status).toBe(201);
    }
    const full = await api("POST", "/api/v1/team/invitations", { token: adminPat, json: { email: "s3@acme.example", role: "member", use_seat: true } });
    expect(full.status).toBe(409);
    expect(full.body).toMatchObject({ code: 409, error: "seats_exhausted" });

    const revoked = await api("DELETE", `/api/v1/team/users/${alan.id}/seat`, { token: adminPat });
    expect(revoked.status).toBe(200);
    expect(revoked.body.use_seat).toBe(false);
    const again = await api("PUT", `/api/v1/team/users/${alan.id}/seat`, { token: adminPat });
    expect(again.status).toBe(200);
    const grace = seededUser(emu, "grace@acme.example");
    expect((await api("DELETE", `/api/v1/team/users/${grace.id}/seat`, { token: adminPat })).status).toBe(200);
    const ada = seededUser(emu, "ada@acme.example");
    expect((await api("DELETE", `/api/v1/team/users/${ada.id}/seat`, { token: adminPat })).status).toBe(200);
    // Two free seats now; Grace takes one back.
    expect((await api("PUT", `/api/v1/team/users/${grace.id}/seat`, { token: adminPat })).status).toBe(200);
  });
});

describe("invitations", () => {
  it("creates an invitation (201) that is listed as pending", async () => {
    const created = await api("POST", "/api/v1/team/invitations", { token: adminPat, json: { email: "Linus@Acme.example", role: "admin", use_seat: false } });
    expect(created.status).toBe(201);
    expect(keys(created.body)).toEqual(INVITATION_FIELDS);
    expect(created.body).toMatchObject({ object: "invitation", email: "linus@acme.example", role: "admin", use_seat: false });
    expect(created.body.id).toMatch(/^inv_[0-9A-Za-z]+$/);
    expect(created.body.expires_at - created.body.created_at).toBe(7 * 24 * 3600);
    const list = await api("GET", "/api/v1/team/invitations", { token: memberPat });
    expect(list.status).toBe(200);
    expect(list.body.map((i: { id: string }) => i.id)).toContain(created.body.id);
    for (const invitation of list.body) expect(keys(invitation)).toEqual(INVITATION_FIELDS);
  });

  it("inviting an existing member or a pending email is a 409", async () => {
    const member = await api("POST", "/api/v1/team/invitations", { token: adminPat, json: { email: "GRACE@acme.example", role: "member", use_seat: false } });
    expect(member.status).toBe(409);
    expect(member.body.error).toBe("already_member");
    const pending = await api("POST", "/api/v1/team/invitations", { token: adminPat, json: { email: "margaret@acme.example", role: "member", use_seat: false } });
    expect(pending.status).toBe(409);
    expect(pending.body.error).toBe("invitation_pending");
  });

  it("deletes an invitation; another team's invitation is a 404", async () => {
    const created = await api("POST", "/api/v1/team/invitations", { token: otherTeamPat, json: { email: "x@globex.example", role: "member", use_seat: false } });
    expect(created.status).toBe(201);
    expect((await api("DELETE", `/api/v1/team/invitations/${created.body.id}`, { token: adminPat })).status).toBe(404);
    const deleted = await api("DELETE", `/api/v1/team/invitations/${created.body.id}`, { token: otherTeamPat });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ deleted: true, id: created.body.id, object: "invitation" });
    expect((await api("DELETE", `/api/v1/team/invitations/${created.body.id}`, { token: otherTeamPat })).status).toBe(404);
  });

  it("expired invitations are not pending, and the email can be invited again", async () => {
    const created = await api("POST", "/api/v1/team/invitations", { token: otherTeamPat, json: { email: "late@globex.example", role: "member", use_seat: false } });
    expect(created.status).toBe(201);
    await advanceClock(emu, 7 * 24 * 3600 + 1);
    const list = await api("GET", "/api/v1/team/invitations", { token: otherTeamPat });
    expect(list.body.map((i: { id: string }) => i.id)).not.toContain(created.body.id);
    const again = await api("POST", "/api/v1/team/invitations", { token: otherTeamPat, json: { email: "late@globex.example", role: "member", use_seat: false } });
    expect(again.status).toBe(201);
  });
});
