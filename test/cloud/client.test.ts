// Every method of the cloud client against a real, seeded emulator, from inside a sandbox
// whose `cloud` option holds the seeded PAT and session as secrets. Answers are the
// emulator's records with camelCase keys (docs/cloud.md "Naming").
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CAUGHT, cloudOptions, emulatorCall, startSeededEmulator, value, type Emulator, type Sandbox } from "./helpers.js";

let emulator: Emulator;
let sandbox: Sandbox;

beforeAll(async () => {
  emulator = await startSeededEmulator({ autoConsent: true });
  sandbox = await createSandbox(cloudOptions(emulator));
});
afterAll(async () => {
  await sandbox?.dispose();
  await emulator?.close();
});

describe("team", () => {
  test("team.get and team.subscription answer the spec's records with camelCase keys", async () => {
    const { team, subscription } = await value(sandbox, `return { team: await cloud.team.get(), subscription: await cloud.team.subscription() };`);
    expect(team).toEqual({ id: emulator.seed.CLOUD_TEAM_ID, object: "team", name: "Acme Robotics", email: "billing@acme.example", createdAt: expect.any(Number), updatedAt: expect.any(Number) });
    expect(subscription).toMatchObject({ object: "subscription", plan: { object: "plan", id: "plan_team", name: "Team" }, seats: 5, seatsUsed: 2, status: "active" });
    expect(Object.keys(subscription).sort()).toEqual(["createdAt", "endsAt", "id", "object", "plan", "seats", "seatsUsed", "startsAt", "status", "updatedAt"]);
  });

  test("team.subscription is null for a team without one (Globex), through a CloudClient made in the script", async () => {
    const hank = emulator.seedUsers.find((u) => u.email === "hank@globex.example")!;
    const result = await value(
      sandbox,
      `const admin = new CloudClient({ baseUrl: cloud.baseUrl, session: input.session });
       const { teams } = input;
       const pat = await admin.pats.create({ name: "globex-ci", teamId: input.teamId });
       const globex = new CloudClient({ baseUrl: cloud.baseUrl, token: pat.token });
       return { team: (await globex.team.get()).name, subscription: await globex.team.subscription() };`,
      { session: hank.session, teamId: hank.teamId },
    );
    expect(result).toEqual({ team: "Globex", subscription: null });
  });

  test("team.users: list in joining order, assignSeat and revokeSeat (idempotent), remove", async () => {
    const result = await value(
      sandbox,
      `const users = await cloud.team.users.list();
       const alan = users.find((u) => u.email === "alan@acme.example");
       const seated = await cloud.team.users.assignSeat(alan.id);
       const again = await cloud.team.users.assignSeat(alan.id);
       const unseated = await cloud.team.users.revokeSeat(alan.id);
       const bot = users.find((u) => u.email === "ci-bot@acme.example");
       const removed = await cloud.team.users.remove(bot.id);
       const after = await cloud.team.users.list();
       return { emails: users.map((u) => u.email), first: users[0], seated: seated.useSeat, again: again.useSeat, unseated: unseated.useSeat,
                removed, botId: bot.id, botName: bot.name, afterCount: after.length };`,
    );
    expect(result.emails).toEqual(["ada@acme.example", "grace@acme.example", "alan@acme.example", "katherine@acme.example", "ci-bot@acme.example"]);
    expect(result.first).toMatchObject({ object: "team_user", name: "Ada Lovelace", role: "admin", useSeat: true });
    expect([result.seated, result.again, result.unseated]).toEqual([true, true, false]);
    expect(result.removed).toEqual({ deleted: true, id: result.botId, object: "team_user" });
    expect(result.botName).toBeNull();
    expect(result.afterCount).toBe(4);
  });

  test("team.invitations: create (defaults: member, no seat), list, delete; 409s are CloudErrors with the API's code", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       const created = await cloud.team.invitations.create({ email: "New.Person@Acme.example" });
       const seated = await cloud.team.invitations.create({ email: "admin2@acme.example", role: "admin", useSeat: true });
       const listed = (await cloud.team.invitations.list()).map((i) => i.email);
       const duplicate = await caught(cloud.team.invitations.create({ email: "new.person@acme.example" }));
       const member = await caught(cloud.team.invitations.create({ email: "grace@acme.example" }));
       const deleted = await cloud.team.invitations.delete(created.id);
       await cloud.team.invitations.delete(seated.id);
       const missing = await caught(cloud.team.invitations.delete(created.id.slice(0, -1) + (created.id.endsWith("x") ? "y" : "x")));
       return { created, seated, listed, duplicate, member, deleted, missing };`,
    );
    expect(result.created).toMatchObject({ object: "invitation", email: "new.person@acme.example", role: "member", useSeat: false, expiresAt: expect.any(Number) });
    expect(result.seated).toMatchObject({ role: "admin", useSeat: true });
    // Oldest first, also within one second (creation order).
    expect(result.listed).toEqual(["margaret@acme.example", "new.person@acme.example", "admin2@acme.example"]);
    expect(result.duplicate).toMatchObject({ name: "CloudError", isCloudError: true, status: 409, code: "invitation_pending", method: "POST", path: "/api/v1/team/invitations" });
    expect(result.member).toMatchObject({ status: 409, code: "already_member" });
    expect(result.member.message).toMatch(/already a member.*\(409 already_member, POST \/api\/v1\/team\/invitations\)$/);
    expect(result.deleted).toEqual({ deleted: true, id: result.created.id, object: "invitation" });
    expect(result.missing).toMatchObject({ status: 404, code: "not_found", method: "DELETE" });
    expect(result.missing.path).toMatch(/^\/api\/v1\/team\/invitations\/inv_/);
  });

  test("ids are path segments: a hostile id is encoded, never a path of its own", async () => {
    const result = await value(sandbox, `${CAUGHT} return [await caught(cloud.team.users.remove("../invitations")), await caught(cloud.workspaces.get("a/b?c#d"))];`);
    expect(result[0]).toMatchObject({ status: 404, code: "not_found", path: "/api/v1/team/users/..%2Finvitations" });
    expect(result[1]).toMatchObject({ status: 404, path: "/api/v1/workspace/a%2Fb%3Fc%23d" });
  });
});

describe("user and workspaces", () => {
  test("user.get, user.claimVoucher (once), workspaces.get", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       return { user: await cloud.user.get(), claim: await cloud.user.claimVoucher(input.voucher),
                again: await caught(cloud.user.claimVoucher(input.voucher)), workspace: await cloud.workspaces.get(input.workspace),
                unknownVoucher: await caught(cloud.user.claimVoucher("SB-0000-0000-0000")) };`,
      { voucher: emulator.seed.CLOUD_VOUCHER_CODE, workspace: emulator.seed.CLOUD_WORKSPACE_ID },
    );
    expect(result.user).toMatchObject({ object: "user", name: "Ada Lovelace", email: "ada@acme.example" });
    expect(result.claim).toMatchObject({ object: "voucher_claim", voucherId: expect.stringMatching(/^vch_/), credit: { amount: 5000, currency: "usd" }, balance: { amount: 5000, currency: "usd" } });
    expect(result.again).toMatchObject({ status: 409, code: "voucher_already_claimed" });
    expect(result.unknownVoucher).toMatchObject({ status: 404, code: "voucher_not_found" });
    expect(result.workspace).toEqual({ id: emulator.seed.CLOUD_WORKSPACE_ID, object: "workspace", name: "Acme Production" });
  });
});

describe("pats (GraphQL with the session cookie)", () => {
  test("create, list, revoke: the new PAT works, the revoked one is refused", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       const team = await cloud.team.get();
       const expiresAt = new Date(Date.now() + 7 * 86400e3);
       const pat = await cloud.pats.create({ name: "ci-rotation", teamId: team.id, expiresAt });
       const viaNew = new CloudClient({ baseUrl: cloud.baseUrl, token: pat.token });
       const user = await viaNew.user.get();
       const listed = (await cloud.pats.list()).map((p) => p.name);
       const revoked = await cloud.pats.revoke(pat.id);
       const after = await caught(viaNew.user.get());
       const unknown = await caught(cloud.pats.revoke("pat_doesnotexist000000"));
       const past = await caught(cloud.pats.create({ name: "x", teamId: team.id, expiresAt: "2001-01-01T00:00:00Z" }));
       return { pat: { ...pat, token: pat.token.slice(0, 6) }, user: user.email, listed, revoked, after, unknown, past };`,
    );
    expect(result.pat).toMatchObject({ id: expect.stringMatching(/^pat_/), token: "sbpat_", name: "ci-rotation", teamId: emulator.seed.CLOUD_TEAM_ID, revokedAt: null });
    expect(result.pat.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(result.user).toBe("ada@acme.example");
    expect(result.listed).toEqual(expect.arrayContaining(["seed", "ci-rotation"]));
    expect(result.revoked).toMatchObject({ id: result.pat.id, revokedAt: expect.any(String) });
    expect(result.after).toMatchObject({ status: 401, code: "invalid_token", path: "/api/v1/user" });
    expect(result.unknown).toMatchObject({ name: "CloudError", status: 200, code: "NOT_FOUND", path: "/dashboard/graphql", errors: [{ code: "NOT_FOUND" }] });
    expect(result.past).toMatchObject({ status: 200, code: "BAD_USER_INPUT" });
  });

  test("a wrong session is a CloudError UNAUTHENTICATED (401)", async () => {
    const result = await value(sandbox, `${CAUGHT} return caught(new CloudClient({ baseUrl: cloud.baseUrl, session: "sbsess_nope" }).pats.list());`);
    expect(result).toMatchObject({ status: 401, code: "UNAUTHENTICATED", errors: [expect.objectContaining({ code: "UNAUTHENTICATED" })] });
  });
});

describe("oauth", () => {
  test("register and updateClient (RFC 7591), client credentials and introspection (RFC 7662)", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       const client = await cloud.oauth.register({ instanceRegistrationKey: input.key, grantTypes: ["client_credentials"], scope: "user:read" });
       const auth = { clientId: client.clientId, clientSecret: client.clientSecret };
       const updated = await cloud.oauth.updateClient({ ...auth, scope: "user:read billing:write" });
       const tokens = await cloud.oauth.token.clientCredentials({ ...auth, scope: "billing:write" });
       const active = await cloud.oauth.introspect(tokens.accessToken, auth);
       const inactive = await cloud.oauth.introspect("sbat_nothing", auth);
       const wrongSecret = await caught(cloud.oauth.token.clientCredentials({ ...auth, clientSecret: "sbcs_wrong" }));
       const badKey = await caught(cloud.oauth.register({ instanceRegistrationKey: "sbirk_wrong" }));
       return { client: { ...client, clientSecret: client.clientSecret.slice(0, 5) }, updated: updated.scope, tokens: { ...tokens, accessToken: tokens.accessToken.slice(0, 5) }, active, inactive, wrongSecret, badKey };`,
      { key: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
    );
    expect(result.client).toMatchObject({ clientId: expect.stringMatching(/^cli_/), clientSecret: "sbcs_", clientIdIssuedAt: expect.any(Number), clientSecretExpiresAt: 0, grantTypes: ["client_credentials"], scope: "user:read", tokenEndpointAuthMethod: "client_secret_basic" });
    expect(result.updated).toBe("user:read billing:write");
    expect(result.tokens).toEqual({ accessToken: "sbat_", tokenType: "Bearer", expiresIn: 3600, scope: "billing:write" });
    expect(result.active).toMatchObject({ active: true, clientId: result.client.clientId, sub: result.client.clientId, meta: { kind: "client", workspaceId: emulator.seed.CLOUD_WORKSPACE_ID, instanceId: expect.stringMatching(/^inst_/) }, tokenType: "Bearer" });
    expect(result.inactive).toEqual({ active: false });
    expect(result.wrongSecret).toMatchObject({ name: "CloudError", status: 401, code: "invalid_client", path: "/oauth2/token" });
    expect(result.badKey).toMatchObject({ status: 400, code: "invalid_client_metadata", path: "/oauth2/register" });
  });

  test("authorization code with PKCE (RFC 7636), then refresh with rotation; a replayed refresh token or code is invalid_grant", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       const redirectUri = "http://127.0.0.1/callback";
       const client = await cloud.oauth.register({ instanceRegistrationKey: input.key, grantTypes: ["authorization_code", "refresh_token"], redirectUris: [redirectUri], tokenEndpointAuthMethod: "none" });
       const verifier = cloud.oauth.pkce.verifier();
       const url = cloud.oauth.authorizeUrl({ clientId: client.clientId, redirectUri, scope: "user:read", state: "s t&1", codeChallenge: cloud.oauth.pkce.challenge(verifier) });
       // --auto-consent approves for the PAT's user at once: the answer is the redirect.
       const answer = await fetch(url, { redirect: "manual", headers: { authorization: "Bearer " + secret("CLOUD_PAT") } });
       const location = new URL(answer.headers.get("location"));
       const code = location.searchParams.get("code");
       const tokens = await cloud.oauth.token.authorizationCode({ clientId: client.clientId, code, redirectUri, codeVerifier: verifier });
       const me = await new CloudClient({ baseUrl: cloud.baseUrl, token: tokens.accessToken }).user.get();
       const refreshed = await cloud.oauth.token.refresh({ clientId: client.clientId, refreshToken: tokens.refreshToken });
       const replay = await caught(cloud.oauth.token.refresh({ clientId: client.clientId, refreshToken: tokens.refreshToken }));
       const reused = await caught(cloud.oauth.token.authorizationCode({ clientId: client.clientId, code, redirectUri, codeVerifier: verifier }));
       return { url, state: location.searchParams.get("state"), iss: location.searchParams.get("iss"), status: answer.status, me: me.email,
                tokenType: tokens.tokenType, rotated: refreshed.refreshToken !== tokens.refreshToken, reused, replay };`,
      { key: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
    );
    const url = new URL(result.url);
    expect(url.origin + url.pathname).toBe(`${emulator.baseUrl}/oauth2/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({ response_type: "code", redirect_uri: "http://127.0.0.1/callback", scope: "user:read", state: "s t&1", code_challenge_method: "S256" });
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(result).toMatchObject({ status: 302, state: "s t&1", iss: emulator.baseUrl, me: "ada@acme.example", tokenType: "Bearer", rotated: true });
    expect(result.reused).toMatchObject({ status: 400, code: "invalid_grant" });
    expect(result.replay).toMatchObject({ status: 400, code: "invalid_grant" });
  });

  test("device flow pieces: authorize, one early deviceCode poll (authorization_pending), information, approve, tokens; deny", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT}
       const client = await cloud.oauth.register({ instanceRegistrationKey: input.key, grantTypes: ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"], scope: "user:read billing:write" });
       const auth = { clientId: client.clientId, clientSecret: client.clientSecret };
       const device = await cloud.oauth.device.authorize({ ...auth, scope: "user:read billing:write" });
       const pending = await caught(cloud.oauth.token.deviceCode({ ...auth, deviceCode: device.deviceCode }));
       const info = await cloud.oauth.device.information(device.userCode.toLowerCase());
       const approved = await cloud.oauth.device.approve(device.userCode, { scope: "user:read" });
       const twice = await caught(cloud.oauth.device.approve(device.userCode));
       const tokens = await cloud.oauth.device.poll({ ...device, ...auth });
       const other = await cloud.oauth.device.authorize(auth);
       const denied = await cloud.oauth.device.deny(other.userCode);
       const refused = await caught(cloud.oauth.device.poll({ ...other, ...auth }));
       return { device, pending, info, approved, twice, tokens: { scope: tokens.scope, refresh: typeof tokens.refreshToken }, denied, refused };`,
      { key: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
    );
    expect(result.device).toMatchObject({ deviceCode: expect.stringMatching(/^sbdc_/), userCode: expect.stringMatching(/^[A-Z]{4}-[A-Z]{4}$/), verificationUri: `${emulator.baseUrl}/device`, expiresIn: 600, interval: 1 });
    expect(result.device.verificationUriComplete).toBe(`${emulator.baseUrl}/device?user_code=${result.device.userCode}`);
    expect(result.pending).toMatchObject({ name: "CloudError", status: 400, code: "authorization_pending", path: "/oauth2/token" });
    expect(result.info).toMatchObject({ client: { id: expect.stringMatching(/^cli_/), ip: "127.0.0.1", registeredAt: expect.any(Number), instance: { name: "acme-ci", registeredAt: expect.any(Number) } }, currentIp: "127.0.0.1", scope: "user:read billing:write" });
    expect(result.info.scopes).toEqual([{ name: "user:read", requirement: "required" }, { name: "billing:write", requirement: "optional" }]);
    expect(result.approved).toMatchObject({ object: "device_authorization", userCode: result.device.userCode, status: "approved", scope: "user:read" });
    expect(result.twice).toMatchObject({ status: 409, code: "already_decided" });
    expect(result.tokens).toEqual({ scope: "user:read", refresh: "string" });
    expect(result.denied).toMatchObject({ status: "denied" });
    expect(result.refused).toMatchObject({ status: 400, code: "access_denied" });
  });
});

test("the sandbox's requests really reached the emulator with the seeded credentials (state changed there)", async () => {
  const users = await emulatorCall(emulator, "GET", "/api/v1/team/users");
  expect(users.body.map((u: { email: string }) => u.email)).not.toContain("ci-bot@acme.example");
});
