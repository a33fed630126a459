import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  advanceClock, client, CREATE_PAT, databaseSnapshot, graphql, patFor, readDatabase, REVOKE_PAT, seededUser, startTestEmulator,
  type TestEmulator,
} from "./helpers.js";

let emu: TestEmulator;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
});
afterAll(() => emu.close());

/** The same token with its last character changed (a random token may already end in any character). */
const corrupt = (token: string) => token.slice(0, -1) + (token.endsWith("x") ? "y" : "x");

describe("bearer authentication (RFC 6750 §3)", () => {
  it("no credentials: 401 with a bare Bearer challenge and DESIGN's error body", async () => {
    for (const path of ["/api/v1/team", "/api/v1/team/users", "/api/v1/user", `/api/v1/workspace/${emu.seed.CLOUD_WORKSPACE_ID}`]) {
      const answer = await api("GET", path);
      expect(answer.status, path).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="scriptbox"');
      expect(answer.body).toEqual({ code: 401, error: "unauthorized", message: expect.any(String) });
    }
  });

  it("a wrong, malformed or foreign-scheme credential is a 401", async () => {
    const wrong = await api("GET", "/api/v1/team", { token: corrupt(emu.seed.CLOUD_PAT) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Bearer realm="scriptbox", error="invalid_token"/);
    expect(wrong.body.error).toBe("invalid_token");
    expect((await api("GET", "/api/v1/team", { token: "' OR 1=1 --" })).status).toBe(401);
    const basicAuth = await api("GET", "/api/v1/team", { headers: { authorization: "Basic YTpi" } });
    expect(basicAuth.status).toBe(401);
    expect(basicAuth.headers.get("www-authenticate")).toContain("Bearer");
    // A session token is not a PAT.
    expect((await api("GET", "/api/v1/team", { token: emu.seed.CLOUD_SESSION })).status).toBe(401);
  });
});

describe("GET /api/v1/user", () => {
  it("returns the PAT owner's record with the spec's fields", async () => {
    const { status, body } = await api("GET", "/api/v1/user", { token: emu.seed.CLOUD_PAT });
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["created_at", "email", "id", "name", "object", "updated_at"]);
    expect(body).toMatchObject({ object: "user", email: "ada@acme.example", name: "Ada Lovelace", id: emu.seedUsers[0]!.id });
  });
});

describe("GET /api/v1/workspace/{workspace_id}", () => {
  it("returns the team's workspace", async () => {
    const { status, body } = await api("GET", `/api/v1/workspace/${emu.seed.CLOUD_WORKSPACE_ID}`, { token: emu.seed.CLOUD_PAT });
    expect(status).toBe(200);
    expect(body).toEqual({ id: emu.seed.CLOUD_WORKSPACE_ID, object: "workspace", name: "Acme Production" });
  });

  it("another team's workspace, an unknown id and path tricks are 404", async () => {
    const hank = await patFor(emu, seededUser(emu, "hank@globex.example"));
    expect((await api("GET", `/api/v1/workspace/${emu.seed.CLOUD_WORKSPACE_ID}`, { token: hank.token })).status).toBe(404);
    for (const id of ["ws_doesnotexist", "..%2F..%2Fteam", "ws_x'%20OR%20'1'='1", "%00", "ws_%2e%2e"]) {
      const answer = await api("GET", `/api/v1/workspace/${id}`, { token: emu.seed.CLOUD_PAT });
      expect(answer.status, id).toBe(404);
      expect(answer.body).toEqual({ code: 404, error: "not_found", message: expect.any(String) });
    }
  });
});

describe("POST /api/v1/user/billing/voucher-claims", () => {
  it("claims the seeded voucher once per user: 201 with the credit and balance, then 409", async () => {
    const first = await api("POST", "/api/v1/user/billing/voucher-claims", { token: emu.seed.CLOUD_PAT, json: { code: emu.seed.CLOUD_VOUCHER_CODE } });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      object: "voucher_claim", id: expect.stringMatching(/^vcl_/), voucher_id: expect.stringMatching(/^vch_/),
      credit: { amount: 5000, currency: "usd" }, balance: { amount: 5000, currency: "usd" }, created_at: expect.any(Number),
    });
    const again = await api("POST", "/api/v1/user/billing/voucher-claims", { token: emu.seed.CLOUD_PAT, json: { code: emu.seed.CLOUD_VOUCHER_CODE.toLowerCase() } });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("voucher_already_claimed");
    const grace = await patFor(emu, seededUser(emu, "grace@acme.example"));
    expect((await api("POST", "/api/v1/user/billing/voucher-claims", { token: grace.token, json: { code: emu.seed.CLOUD_VOUCHER_CODE } })).status).toBe(201);
  });

  it("an unknown code is a 404; a bad body is a 422 and writes nothing", async () => {
    const unknown = await api("POST", "/api/v1/user/billing/voucher-claims", { token: emu.seed.CLOUD_PAT, json: { code: "SB-0000-0000-0000" } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("voucher_not_found");
    const before = databaseSnapshot(emu.dbPath);
    for (const json of [{}, { code: 5 }, { code: emu.seed.CLOUD_VOUCHER_CODE, extra: true }, { code: "" }]) {
      const answer = await api("POST", "/api/v1/user/billing/voucher-claims", { token: emu.seed.CLOUD_PAT, json });
      expect(answer.status, JSON.stringify(json)).toBe(422);
      expect(answer.body.error).toBe("validation_failed");
    }
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });
});

describe("PATs through /dashboard/graphql", () => {
  const owner = () => emu.seedUsers[0]!;

  it("needs the SERVICE_SESSION cookie", async () => {
    for (const session of [undefined, "sbsess_nope"]) {
      const answer = await graphql(emu, session, CREATE_PAT, { input: { name: "x", teamId: emu.seed.CLOUD_TEAM_ID } });
      expect(answer.status).toBe(401);
      expect(answer.body.errors[0].extensions.code).toBe("UNAUTHENTICATED");
    }
  });

  it("createPat returns id and token; the PAT works at once and defaults to 90 days", async () => {
    const answer = await graphql(emu, owner().session, CREATE_PAT, { input: { name: "ci", teamId: emu.seed.CLOUD_TEAM_ID } });
    expect(answer.status).toBe(200);
    const pat = answer.body.data.createPat.pat;
    expect(pat.id).toMatch(/^pat_/);
    expect(pat.token).toMatch(/^sbpat_[0-9A-Za-z]{44}$/);
    expect(pat.teamId).toBe(emu.seed.CLOUD_TEAM_ID);
    const days = (Date.parse(pat.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89.9);
    expect(days).toBeLessThan(90.1);
    expect((await api("GET", "/api/v1/team", { token: pat.token })).status).toBe(200);
    // Listed later without its secret.
    const list = await graphql(emu, owner().session, "{ pats { id name token revokedAt } }");
    expect(list.body.data.pats).toContainEqual({ id: pat.id, name: "ci", token: null, revokedAt: null });
  });

  it("revokePat stops the PAT at once", async () => {
    const pat = await patFor(emu, owner());
    const revoked = await graphql(emu, owner().session, REVOKE_PAT, { id: pat.id });
    expect(revoked.body.data.revokePat.pat.id).toBe(pat.id);
    expect(revoked.body.data.revokePat.pat.revokedAt).toEqual(expect.any(String));
    const answer = await api("GET", "/api/v1/user", { token: pat.token });
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe("invalid_token");
  });

  it("reports real GraphQL errors: other team, other user's PAT, past expiry, bad date, bad syntax", async () => {
    const hank = seededUser(emu, "hank@globex.example");
    const otherTeam = await graphql(emu, owner().session, CREATE_PAT, { input: { name: "x", teamId: hank.teamId } });
    expect(otherTeam.status).toBe(200);
    expect(otherTeam.body.data).toBeNull();
    expect(otherTeam.body.errors[0]).toMatchObject({ path: ["createPat"], extensions: { code: "NOT_FOUND" } });

    const hanks = await patFor(emu, hank);
    const notMine = await graphql(emu, owner().session, REVOKE_PAT, { id: hanks.id });
    expect(notMine.body.errors[0].extensions.code).toBe("NOT_FOUND");
    expect((await api("GET", "/api/v1/team", { token: hanks.token })).status).toBe(200);

    const past = await graphql(emu, owner().session, CREATE_PAT, { input: { name: "x", teamId: emu.seed.CLOUD_TEAM_ID, expiresAt: "2001-01-01T00:00:00Z" } });
    expect(past.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");

    const badDate = await graphql(emu, owner().session, CREATE_PAT, { input: { name: "x", teamId: emu.seed.CLOUD_TEAM_ID, expiresAt: "tomorrow" } });
    expect(badDate.status).toBe(400);
    expect(badDate.body.errors[0].message).toContain("RFC 3339");

    const syntax = await graphql(emu, owner().session, "mutation { createPat(");
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0].message).toMatch(/Syntax Error/);
    const unknownField = await graphql(emu, owner().session, "{ pats { secret } }");
    expect(unknownField.status).toBe(400);
  });

  it("refuses non-JSON bodies and malformed requests before reading the session", async () => {
    const formPost = await api("POST", "/dashboard/graphql", { body: "query=x", contentType: "application/x-www-form-urlencoded", cookie: `SERVICE_SESSION=${owner().session}` });
    expect(formPost.status).toBe(415);
    expect(formPost.body.errors[0].message).toBeTruthy();
    const extra = await api("POST", "/dashboard/graphql", { json: { query: "{ viewer { id } }", nope: 1 }, cookie: `SERVICE_SESSION=${owner().session}` });
    expect(extra.status).toBe(400);
    const viewer = await graphql(emu, owner().session, "{ viewer { email } }");
    expect(viewer.body).toEqual({ data: { viewer: { email: "ada@acme.example" } } });
  });

  it("stores PATs only as hashes", async () => {
    const pat = await patFor(emu, owner());
    const rows = readDatabase<{ selector: string; secret_hash: Buffer }>(emu.dbPath, "SELECT selector, secret_hash FROM pats WHERE id = ?", pat.id);
    expect(rows[0]!.secret_hash.length).toBe(32);
    const everything = databaseSnapshot(emu.dbPath);
    expect(everything).not.toContain(pat.token);
    expect(everything).not.toContain(emu.seed.CLOUD_PAT);
    expect(everything).not.toContain(emu.seed.CLOUD_SESSION);
    expect(everything).not.toContain(emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY);
    expect(everything).not.toContain(emu.seed.CLOUD_VOUCHER_CODE);
  });

  it("an expired PAT stops working at once (test clock)", async () => {
    const soon = new Date(Date.now() + 120_000).toISOString();
    const pat = await patFor(emu, owner(), soon);
    expect((await api("GET", "/api/v1/user", { token: pat.token })).status).toBe(200);
    await advanceClock(emu, 121);
    const answer = await api("GET", "/api/v1/user", { token: pat.token });
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });
});
