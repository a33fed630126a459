// Registration (RFC 7591), client authentication (RFC 6749 §2.3), client credentials
// (§4.4), token endpoint errors (§5.2), introspection (RFC 7662) and metadata (RFC 8414).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceClock, basic, client, form, readDatabase, registerClient, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
let api: ReturnType<typeof client>;
let confidential: { client_id: string; client_secret: string };

beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
  confidential = (await registerClient(emu, { grant_types: ["client_credentials"], scope: "user:read billing:write" })) as typeof confidential;
});
afterAll(() => emu.close());

const token = (fields: Record<string, string>, headers?: Record<string, string>) =>
  api("POST", "/oauth2/token", { body: form(fields), headers });

describe("POST /oauth2/register (RFC 7591)", () => {
  it("registers a confidential client: 201 with the spec's fields and no-store", async () => {
    const answer = await api("POST", "/oauth2/register", {
      json: { grant_types: ["client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "refresh_token"], scope: "user:read", instance_registration_key: emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    expect(answer.body).toEqual({
      client_id: expect.stringMatching(/^cli_/),
      client_id_issued_at: expect.any(Number),
      client_secret: expect.stringMatching(/^sbcs_[0-9A-Za-z]{44}$/),
      client_secret_expires_at: 0,
      grant_types: ["client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
      scope: "user:read",
      token_endpoint_auth_method: "client_secret_basic",
    });
    // Stored hashed only.
    const rows = readDatabase<{ secret_hash: Buffer }>(emu.dbPath, "SELECT secret_hash FROM oauth_clients WHERE id = ?", answer.body.client_id);
    expect(rows[0]!.secret_hash.length).toBe(32);
  });

  it("creates the key's instance on first registration and reuses it afterwards", async () => {
    const instances = () => readDatabase<{ id: string; name: string }>(emu.dbPath, "SELECT id, name FROM instances");
    expect(instances()).toHaveLength(1); // created by the beforeAll registration
    await registerClient(emu, { grant_types: ["client_credentials"] });
    expect(instances()).toEqual([{ id: expect.stringMatching(/^inst_/), name: "acme-ci" }]);
  });

  it("registers a public client (none): no secret; it cannot use client_credentials", async () => {
    const pub = await registerClient(emu, { grant_types: ["authorization_code"], redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" });
    expect(pub).not.toHaveProperty("client_secret");
    expect(pub).toMatchObject({ token_endpoint_auth_method: "none", redirect_uris: ["http://127.0.0.1:9/cb"] });
  });

  it("PUT /oauth2/register/{id} updates scopes and grants with client_id + client_secret; 401 when wrong", async () => {
    const reg = await registerClient(emu, { grant_types: ["client_credentials"] });
    expect(reg.scope).toBe("user:read");
    const updated = await api("PUT", `/oauth2/register/${reg.client_id}`, {
      json: { client_id: reg.client_id, client_secret: reg.client_secret, grant_types: ["client_credentials", "refresh_token"], scope: "user:read billing:write" },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ client_id: reg.client_id, client_secret: reg.client_secret, scope: "user:read billing:write", grant_types: ["client_credentials", "refresh_token"] });
    const wrong = await api("PUT", `/oauth2/register/${reg.client_id}`, { json: { client_id: reg.client_id, client_secret: "sbcs_wrong", scope: "user:read" } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("invalid_client");
    const unknown = await api("PUT", "/oauth2/register/cli_nope", { json: { client_id: "cli_nope", client_secret: "x" } });
    expect(unknown.status).toBe(401);
    const mismatch = await api("PUT", `/oauth2/register/${reg.client_id}`, { json: { client_id: confidential.client_id, client_secret: confidential.client_secret } });
    expect(mismatch.status).toBe(400);
    // The new scope is usable right away.
    const granted = await token({ grant_type: "client_credentials", scope: "billing:write" }, { authorization: basic(reg.client_id, reg.client_secret!) });
    expect(granted.status).toBe(200);
  });
});

describe("client authentication and client credentials (RFC 6749 §2.3, §4.4)", () => {
  it("client_secret_basic and client_secret_post both work; the response is a bearer token, never cached", async () => {
    const viaBasic = await token({ grant_type: "client_credentials" }, { authorization: basic(confidential.client_id, confidential.client_secret) });
    expect(viaBasic.status).toBe(200);
    expect(viaBasic.headers.get("cache-control")).toBe("no-store");
    expect(viaBasic.headers.get("pragma")).toBe("no-cache");
    expect(viaBasic.body).toEqual({ access_token: expect.stringMatching(/^sbat_/), token_type: "Bearer", expires_in: 3600, scope: "user:read billing:write" });
    const viaPost = await token({ grant_type: "client_credentials", client_id: confidential.client_id, client_secret: confidential.client_secret, scope: "user:read" });
    expect(viaPost.status).toBe(200);
    expect(viaPost.body.scope).toBe("user:read");
    expect(viaPost.body).not.toHaveProperty("refresh_token");
  });

  it("both methods in one request is invalid_request", async () => {
    const answer = await token(
      { grant_type: "client_credentials", client_secret: confidential.client_secret },
      { authorization: basic(confidential.client_id, confidential.client_secret) },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe("invalid_request");
  });

  it("a wrong secret is invalid_client 401, with a Basic challenge when Basic was used", async () => {
    const viaBasic = await token({ grant_type: "client_credentials" }, { authorization: basic(confidential.client_id, "sbcs_wrong") });
    expect(viaBasic.status).toBe(401);
    expect(viaBasic.body).toEqual({ error: "invalid_client", error_description: expect.any(String) });
    expect(viaBasic.headers.get("www-authenticate")).toBe('Basic realm="scriptbox"');
    const viaPost = await token({ grant_type: "client_credentials", client_id: confidential.client_id, client_secret: "nope" });
    expect(viaPost.status).toBe(401);
    const none = await token({ grant_type: "client_credentials", client_id: confidential.client_id });
    expect(none.status).toBe(401);
    expect((await token({ grant_type: "client_credentials" })).status).toBe(401);
  });

  it("unsupported_grant_type, unauthorized_client, invalid_scope", async () => {
    const auth = { authorization: basic(confidential.client_id, confidential.client_secret) };
    expect((await token({ grant_type: "password", username: "a", password: "b" }, auth)).body.error).toBe("unsupported_grant_type");
    expect((await token({ grant_type: "refresh_token", refresh_token: "sbrt_x" }, auth)).body.error).toBe("unauthorized_client");
    const scope = await token({ grant_type: "client_credentials", scope: "admin" }, auth);
    expect(scope.status).toBe(400);
    expect(scope.body.error).toBe("invalid_scope");
    // Empty parameters count as omitted (RFC 6749 §3.2): the registered scope is granted.
    expect((await token({ grant_type: "client_credentials", scope: "" }, auth)).body.scope).toBe("user:read billing:write");
  });

  it("a client-credentials token acts for no user: /api/v1/user answers 403", async () => {
    const { body } = await token({ grant_type: "client_credentials" }, { authorization: basic(confidential.client_id, confidential.client_secret) });
    const answer = await api("GET", "/api/v1/user", { token: body.access_token });
    expect(answer.status).toBe(403);
    expect((await api("GET", "/api/v1/team", { token: body.access_token })).status).toBe(401);
  });
});

describe("POST /oauth2/introspect (RFC 7662)", () => {
  const introspect = (tokenValue: string, auth = basic(confidential.client_id, confidential.client_secret)) =>
    api("POST", "/oauth2/introspect", { body: form({ token: tokenValue }), headers: { authorization: auth } });

  it("describes an active token: client_id, sub, meta, scope, exp, iat, token_type", async () => {
    const issued = await token({ grant_type: "client_credentials", scope: "user:read" }, { authorization: basic(confidential.client_id, confidential.client_secret) });
    const answer = await introspect(issued.body.access_token);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    expect(answer.body).toEqual({
      active: true,
      client_id: confidential.client_id,
      sub: confidential.client_id,
      meta: { instance_id: expect.stringMatching(/^inst_/), kind: "client", workspace_id: emu.seed.CLOUD_WORKSPACE_ID },
      scope: "user:read",
      exp: expect.any(Number),
      iat: expect.any(Number),
      token_type: "Bearer",
    });
    expect(answer.body.exp - answer.body.iat).toBe(3600);
  });

  it("answers exactly { active: false } for unknown, malformed and expired tokens", async () => {
    for (const value of ["sbat_unknown", "", "x".repeat(300), emu.seed.CLOUD_PAT]) {
      const answer = await introspect(value || "sbat_");
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ active: false });
    }
    const issued = await token({ grant_type: "client_credentials" }, { authorization: basic(confidential.client_id, confidential.client_secret) });
    await advanceClock(emu, 3601);
    expect((await introspect(issued.body.access_token)).body).toEqual({ active: false });
    expect((await api("GET", "/api/v1/user", { token: issued.body.access_token })).status).toBe(401);
  });

  it("needs an authenticated confidential client", async () => {
    const missing = await api("POST", "/oauth2/introspect", { body: form({ token: "sbat_x" }) });
    expect(missing.status).toBe(401);
    expect(missing.body.error).toBe("invalid_client");
    expect((await introspect("sbat_x", basic(confidential.client_id, "wrong"))).status).toBe(401);
    const noToken = await api("POST", "/oauth2/introspect", { body: form({}), headers: { authorization: basic(confidential.client_id, confidential.client_secret) } });
    expect(noToken.status).toBe(400);
    expect(noToken.body.error).toBe("invalid_request");
  });
});

describe("GET /.well-known/oauth-authorization-server (RFC 8414)", () => {
  it("lists the endpoints under the issuer, which is the base URL", async () => {
    const { status, body } = await api("GET", "/.well-known/oauth-authorization-server");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      issuer: emu.baseUrl,
      token_endpoint: `${emu.baseUrl}/oauth2/token`,
      authorization_endpoint: `${emu.baseUrl}/oauth2/authorize`,
      device_authorization_endpoint: `${emu.baseUrl}/oauth2/device/authorize`,
      introspection_endpoint: `${emu.baseUrl}/oauth2/introspect`,
      registration_endpoint: `${emu.baseUrl}/oauth2/register`,
      code_challenge_methods_supported: ["S256"],
      scopes_supported: ["user:read", "billing:write"],
    });
    expect(body.grant_types_supported).toHaveLength(4);
  });
});
