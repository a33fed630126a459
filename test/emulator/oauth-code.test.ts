// The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636, RFC 9207, RFC 9700
// §2.1), the consent page, and refresh token rotation with reuse detection (RFC 9700 §4.14).
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceClock, basic, client, form, postSignIn, registerClient, startTestEmulator, type TestEmulator } from "./helpers.js";

const REDIRECT = "http://127.0.0.1:9/callback";
let emu: TestEmulator;
let api: ReturnType<typeof client>;
let app: { client_id: string; client_secret: string };
let publicApp: { client_id: string };
let cookie: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
  app = (await registerClient(emu, { grant_types: ["authorization_code", "refresh_token"], redirect_uris: [REDIRECT], scope: "user:read billing:write" })) as typeof app;
  publicApp = await registerClient(emu, { grant_types: ["authorization_code", "refresh_token"], redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" });
  cookie = `SERVICE_SESSION=${emu.seed.CLOUD_SESSION}`;
});
afterAll(() => emu.close());

function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
function authorizePath(params: Record<string, string>) {
  return `/oauth2/authorize?${new URLSearchParams({ response_type: "code", redirect_uri: REDIRECT, scope: "user:read", ...params })}`;
}
const location = (answer: { headers: Headers }) => new URL(answer.headers.get("location")!, "http://relative.invalid");

/** Authorize, consent with the session, and return the redirect's parameters. */
async function consent(params: Record<string, string>, decision = "approve") {
  const start = await api("GET", authorizePath(params), { cookie });
  expect(start.status).toBe(302);
  const consentPath = start.headers.get("location")!;
  expect(consentPath).toMatch(/^\/oauth2\/consent\/areq_/);
  const page = await api("GET", consentPath, { cookie });
  expect(page.status).toBe(200);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.text)![1]!;
  const answer = await api("POST", consentPath, { body: form({ decision, csrf_token: csrf }), cookie });
  expect(answer.status).toBe(303);
  return location(answer).searchParams;
}
const exchange = (code: string, verifier?: string, who: { client_id: string; client_secret?: string } = app) =>
  api("POST", "/oauth2/token", {
    body: form({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...(verifier ? { code_verifier: verifier } : {}), ...(who.client_secret ? {} : { client_id: who.client_id }) }),
    headers: who.client_secret ? { authorization: basic(who.client_id, who.client_secret) } : {},
  });

describe("GET /oauth2/authorize", () => {
  it("without a dashboard session redirects to the sign-in page, which returns to the request", async () => {
    const path = authorizePath({ client_id: app.client_id, state: "s1" });
    const answer = await api("GET", path);
    expect(answer.status).toBe(302);
    const login = location(answer);
    expect(login.pathname).toBe("/dashboard/login");
    expect(login.searchParams.get("return_to")).toBe(path);
    const page = await api("GET", login.pathname + login.search);
    expect(page.text).toContain('name="session"');
    // Signing in sets the cookie and goes back.
    const signIn = await postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION, return_to: path });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("location")).toBe(path);
    expect(signIn.headers.get("set-cookie")).toMatch(/^SERVICE_SESSION=sbsess_.*HttpOnly; SameSite=Lax/);
    expect((await postSignIn(emu.baseUrl, { session: "sbsess_bad", return_to: path })).status).toBe(401);
    // No open redirect through return_to.
    const offsite = await postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION, return_to: "//evil.example/" });
    expect(offsite.headers.get("location")).toBe("/dashboard");
  });

  it("shows a real consent page (approve/deny, CSRF token, no framing)", async () => {
    const start = await api("GET", authorizePath({ client_id: app.client_id }), { cookie });
    const page = await api("GET", start.headers.get("location")!, { cookie });
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.text).toContain('value="approve"');
    expect(page.text).toContain('value="deny"');
    expect(page.text).toContain("ada@acme.example");
    expect(page.text).toContain("user:read");
    // Someone else's browser (no session) cannot see or answer it.
    expect((await api("GET", start.headers.get("location")!)).status).toBe(404);
    const forged = await api("POST", start.headers.get("location")!, { body: form({ decision: "approve", csrf_token: "x" }), cookie });
    expect(forged.status).toBe(403);
  });

  it("approve: 303 to the exact redirect URI with code, state and iss; PKCE S256 exchange gives tokens", async () => {
    const { verifier, challenge } = pkce();
    const params = await consent({ client_id: app.client_id, state: "xyz", code_challenge: challenge, code_challenge_method: "S256" });
    expect(params.get("state")).toBe("xyz");
    expect(params.get("iss")).toBe(emu.baseUrl);
    const code = params.get("code")!;
    expect(code).toMatch(/^sbac_/);
    const answer = await exchange(code, verifier);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ token_type: "Bearer", scope: "user:read", refresh_token: expect.stringMatching(/^sbrt_/) });
    expect((await api("GET", "/api/v1/user", { token: answer.body.access_token })).body.email).toBe("ada@acme.example");
  });

  it("deny: access_denied with the state", async () => {
    const params = await consent({ client_id: app.client_id, state: "no-thanks" }, "deny");
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("no-thanks");
    expect(params.has("code")).toBe(false);
  });

  it("unknown client or a redirect_uri that is not an exact match: an error page, never a redirect", async () => {
    for (const params of [
      { client_id: "cli_unknown" } as Record<string, string>,
      { client_id: app.client_id, redirect_uri: `${REDIRECT}/other` },
      { client_id: app.client_id, redirect_uri: "http://127.0.0.1:9/callback?x=1" },
      { client_id: app.client_id, redirect_uri: "http://127.0.0.1:9/CALLBACK" },
    ]) {
      const answer = await api("GET", authorizePath(params), { cookie });
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get("location")).toBeNull();
    }
  });

  it("other mistakes go back to the client as errors (RFC 6749 §4.1.2.1)", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ client_id: app.client_id, response_type: "token" }, "unsupported_response_type"],
      [{ client_id: app.client_id, scope: "admin" }, "invalid_scope"],
      [{ client_id: app.client_id, code_challenge: pkce().challenge, code_challenge_method: "plain" }, "invalid_request"],
      [{ client_id: app.client_id, code_challenge: pkce().challenge }, "invalid_request"],
      [{ client_id: publicApp.client_id }, "invalid_request"], // public client without PKCE
    ];
    for (const [params, error] of cases) {
      const answer = await api("GET", authorizePath({ state: "st", ...params }), { cookie });
      expect(answer.status, JSON.stringify(params)).toBe(302);
      const back = location(answer);
      expect(back.origin + back.pathname).toBe(REDIRECT);
      expect(back.searchParams.get("error")).toBe(error);
      expect(back.searchParams.get("state")).toBe("st");
    }
    const repeated = await api("GET", `${authorizePath({ client_id: app.client_id })}&scope=user:read`, { cookie });
    expect(location(repeated).searchParams.get("error")).toBe("invalid_request");
  });
});

describe("POST /oauth2/token with authorization_code", () => {
  it("a wrong or missing PKCE verifier is invalid_grant; a verifier without a challenge too", async () => {
    const { verifier, challenge } = pkce();
    const code = (await consent({ client_id: app.client_id, code_challenge: challenge, code_challenge_method: "S256" })).get("code")!;
    expect((await exchange(code, pkce().verifier)).body.error).toBe("invalid_grant");
    expect((await exchange(code)).body.error).toBe("invalid_grant");
    expect((await exchange(code, verifier)).status).toBe(200);

    const plainCode = (await consent({ client_id: app.client_id })).get("code")!;
    expect((await exchange(plainCode, verifier)).body.error).toBe("invalid_grant");
  });

  it("public clients exchange with client_id and PKCE only", async () => {
    const { verifier, challenge } = pkce();
    const code = (await consent({ client_id: publicApp.client_id, code_challenge: challenge, code_challenge_method: "S256" })).get("code")!;
    const answer = await exchange(code, verifier, publicApp);
    expect(answer.status).toBe(200);
  });

  it("a code works once; reusing it is invalid_grant and revokes the tokens issued from it", async () => {
    const code = (await consent({ client_id: app.client_id })).get("code")!;
    const first = await exchange(code);
    expect(first.status).toBe(200);
    expect((await api("GET", "/api/v1/user", { token: first.body.access_token })).status).toBe(200);
    const replay = await exchange(code);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
    expect((await api("GET", "/api/v1/user", { token: first.body.access_token })).status).toBe(401);
    const refresh = await api("POST", "/oauth2/token", { body: form({ grant_type: "refresh_token", refresh_token: first.body.refresh_token }), headers: { authorization: basic(app.client_id, app.client_secret) } });
    expect(refresh.body.error).toBe("invalid_grant");
  });

  it("a code lives 60 seconds; the redirect_uri must match; another client cannot use it", async () => {
    const other = await registerClient(emu, { grant_types: ["authorization_code"], redirect_uris: [REDIRECT] });
    const stolen = (await consent({ client_id: app.client_id })).get("code")!;
    const byOther = await api("POST", "/oauth2/token", { body: form({ grant_type: "authorization_code", code: stolen, redirect_uri: REDIRECT }), headers: { authorization: basic(other.client_id, other.client_secret!) } });
    expect(byOther.body.error).toBe("invalid_grant");
    const mismatch = await api("POST", "/oauth2/token", { body: form({ grant_type: "authorization_code", code: stolen, redirect_uri: `${REDIRECT}x` }), headers: { authorization: basic(app.client_id, app.client_secret) } });
    expect(mismatch.body.error).toBe("invalid_grant");
    const missing = await api("POST", "/oauth2/token", { body: form({ grant_type: "authorization_code", code: stolen }), headers: { authorization: basic(app.client_id, app.client_secret) } });
    expect(missing.body.error).toBe("invalid_request");
    await advanceClock(emu, 61);
    expect((await exchange(stolen)).body.error).toBe("invalid_grant");
  });
});

describe("refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2)", () => {
  const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
    api("POST", "/oauth2/token", { body: form({ grant_type: "refresh_token", refresh_token: refreshToken, ...extra }), headers: { authorization: basic(app.client_id, app.client_secret) } });

  it("rotate on every use, may narrow the scope, and a reused one revokes the whole family", async () => {
    const code = (await consent({ client_id: app.client_id, scope: "user:read billing:write" })).get("code")!;
    const first = (await exchange(code)).body;
    const introspect = (value: string) =>
      api("POST", "/oauth2/introspect", { body: form({ token: value, token_type_hint: "refresh_token" }), headers: { authorization: basic(app.client_id, app.client_secret) } });
    expect((await introspect(first.refresh_token)).body).toMatchObject({
      active: true, client_id: app.client_id, sub: emu.seedUsers[0]!.id, token_type: "refresh_token",
      meta: { kind: "user", workspace_id: emu.seed.CLOUD_WORKSPACE_ID },
    });
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect((await introspect(first.refresh_token)).body).toEqual({ active: false }); // rotated out
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(second.body.scope).toBe("user:read billing:write");
    const narrowed = await refresh(second.body.refresh_token, { scope: "user:read" });
    expect(narrowed.body.scope).toBe("user:read");
    expect((await refresh(narrowed.body.refresh_token, { scope: "user:read billing:write" })).body.error).toBe("invalid_scope");

    // The first refresh token comes back: reuse. Every token of the family dies.
    const reuse = await refresh(first.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe("invalid_grant");
    for (const accessToken of [first.access_token, second.body.access_token, narrowed.body.access_token]) {
      expect((await api("GET", "/api/v1/user", { token: accessToken })).status).toBe(401);
    }
    expect((await refresh(narrowed.body.refresh_token)).body.error).toBe("invalid_grant");
  });
});

describe("--auto-consent", () => {
  let auto: TestEmulator;
  let autoApp: { client_id: string; client_secret: string };
  beforeAll(async () => {
    auto = await startTestEmulator({ autoConsent: true });
    autoApp = (await registerClient(auto, { grant_types: ["authorization_code"], redirect_uris: [REDIRECT] })) as typeof autoApp;
  });
  afterAll(() => auto.close());

  it("answers with a code at once, for the seeded user or the PAT's user", async () => {
    const path = authorizePath({ client_id: autoApp.client_id, state: "a" });
    const seeded = await call(auto, path);
    expect(seeded.status).toBe(302);
    const params = location(seeded).searchParams;
    expect(params.get("code")).toMatch(/^sbac_/);
    expect(params.get("state")).toBe("a");

    const withPat = await call(auto, path, { authorization: `Bearer ${auto.seed.CLOUD_PAT}` });
    expect(location(withPat).searchParams.get("code")).toMatch(/^sbac_/);
    const badPat = await call(auto, path, { authorization: "Bearer sbpat_nope" });
    expect(badPat.status).toBe(401);
  });

  async function call(emulator: TestEmulator, path: string, headers: Record<string, string> = {}) {
    return client(emulator)("GET", path, { headers });
  }
});
