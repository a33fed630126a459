// Bad input: malformed JSON, wrong content types, missing, extra or mistyped fields,
// oversize bodies, unknown ids, path traversal, SQL metacharacters. Each is a 4xx with the
// area's error body, and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, databaseSnapshot, registerClient, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
let api: ReturnType<typeof client>;
let pat: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
  pat = emu.seed.CLOUD_PAT;
});
afterAll(() => emu.close());

const INVITE = "/api/v1/team/invitations";
const VOUCHER = "/api/v1/user/billing/voucher-claims";
const SQL = "x'); DROP TABLE users; --";

describe("/api/v1 bad input", () => {
  const cases: [string, number, string, { body?: string; contentType?: string; json?: unknown }][] = [
    ["malformed JSON", 400, "invalid_json", { body: '{"email": "a@b.co",', contentType: "application/json" }],
    ["empty JSON body", 400, "invalid_json", { body: "", contentType: "application/json" }],
    ["prototype poisoning", 400, "invalid_json", { body: '{"__proto__": {"admin": true}, "email": "a@b.co", "role": "member", "use_seat": false}', contentType: "application/json" }],
    ["form body", 415, "unsupported_media_type", { body: "email=a%40b.co&role=member&use_seat=false", contentType: "application/x-www-form-urlencoded" }],
    ["text/plain body", 415, "unsupported_media_type", { body: '{"email":"a@b.co","role":"member","use_seat":false}', contentType: "text/plain" }],
    ["missing field", 422, "validation_failed", { json: { email: "a@b.co", role: "member" } }],
    ["extra field", 422, "validation_failed", { json: { email: "a@b.co", role: "member", use_seat: false, team_id: "team_x" } }],
    ["wrong type", 422, "validation_failed", { json: { email: "a@b.co", role: "member", use_seat: "false" } }],
    ["unknown role", 422, "validation_failed", { json: { email: "a@b.co", role: "owner", use_seat: false } }],
    ["not an email", 422, "validation_failed", { json: { email: SQL, role: "member", use_seat: false } }],
    ["array body", 422, "validation_failed", { json: [{ email: "a@b.co", role: "member", use_seat: false }] }],
    ["null body", 422, "validation_failed", { body: "null", contentType: "application/json" }],
    ["oversize body", 413, "payload_too_large", { body: JSON.stringify({ email: "a@b.co", role: "member", use_seat: false, pad: "x".repeat(70 * 1024) }), contentType: "application/json" }],
  ];

  it.each(cases)("POST invitations with %s: %i %s, nothing written", async (_name, status, error, request) => {
    const before = databaseSnapshot(emu.dbPath);
    const answer = await api("POST", INVITE, { token: pat, ...request });
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual({ code: status, error, message: expect.any(String) });
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("voucher claims refuse the same mistakes", async () => {
    const before = databaseSnapshot(emu.dbPath);
    expect((await api("POST", VOUCHER, { token: pat, body: "{", contentType: "application/json" })).status).toBe(400);
    expect((await api("POST", VOUCHER, { token: pat, body: "code=x", contentType: "application/x-www-form-urlencoded" })).status).toBe(415);
    expect((await api("POST", VOUCHER, { token: pat, json: { code: SQL } })).status).toBe(404);
    expect((await api("POST", VOUCHER, { token: pat, json: { code: ["x"] } })).status).toBe(422);
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("ids that cannot exist (traversal, SQL, NUL, overlong) are 404 and touch nothing", async () => {
    const before = databaseSnapshot(emu.dbPath);
    const ids = ["..", "..%2F..%2Fusers", "%2e%2e%2fteam", encodeURIComponent(SQL), "inv_%00", `inv_${"a".repeat(300)}`, "inv_a%20OR%201=1", "usr_*"];
    for (const id of ids) {
      for (const [method, path] of [["DELETE", `${INVITE}/${id}`], ["DELETE", `/api/v1/team/users/${id}`], ["PUT", `/api/v1/team/users/${id}/seat`]] as const) {
        const answer = await api(method, path, { token: pat });
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(answer.body.code).toBe(404);
      }
    }
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("bodiless endpoints refuse a body, unknown query parameters and a bad URL", async () => {
    const userId = emu.seedUsers[2]!.id;
    const before = databaseSnapshot(emu.dbPath);
    const withBody = await api("PUT", `/api/v1/team/users/${userId}/seat`, { token: pat, json: { use_seat: true } });
    expect(withBody.status).toBe(422);
    expect((await api("GET", "/api/v1/team?expand=everything", { token: pat })).status).toBe(422);
    const badUrl = await api("GET", "/api/v1/workspace/%E0%A4%A", { token: pat });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.code).toBe(400);
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
    // `{}` or no body at all is fine.
    expect((await api("PUT", `/api/v1/team/users/${userId}/seat`, { token: pat, json: {} })).status).toBe(200);
  });

  it("unknown endpoints are 404 with the error body", async () => {
    const answer = await api("GET", "/api/v1/teams", { token: pat });
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: 404, error: "not_found", message: expect.any(String) });
    expect((await api("PATCH", "/api/v1/team", { token: pat })).status).toBe(404);
    expect((await api("GET", "/__emulator/clock")).status).toBe(200); // on: this suite runs with --test-clock
  });

  it("SQL metacharacters in values are stored as data, not run", async () => {
    const email = "o'brien+test--1@acme.example";
    const created = await api("POST", INVITE, { token: pat, json: { email, role: "member", use_seat: false } });
    expect(created.status).toBe(201);
    expect(created.body.email).toBe(email);
    expect((await api("GET", "/api/v1/team/users", { token: pat })).body.length).toBe(5);
  });
});

describe("OAuth endpoints' bad input: RFC error bodies, no-store, nothing written", () => {
  it("token endpoint: JSON body, duplicate parameters, missing grant_type, oversize", async () => {
    const before = databaseSnapshot(emu.dbPath);
    const bodies: [string, string][] = [
      ['{"grant_type":"client_credentials"}', "application/json"],
      ["grant_type=client_credentials&grant_type=refresh_token", "application/x-www-form-urlencoded"],
      ["client_id=x", "application/x-www-form-urlencoded"],
      [`grant_type=client_credentials&scope=${"x".repeat(70 * 1024)}`, "application/x-www-form-urlencoded"],
      ["grant_type=client_credentials", "text/plain"],
    ];
    for (const [body, contentType] of bodies) {
      const answer = await api("POST", "/oauth2/token", { body, contentType });
      expect(answer.status, body.slice(0, 60)).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.body).toEqual({ error: "invalid_request", error_description: expect.any(String) });
      expect(answer.headers.get("cache-control")).toBe("no-store");
    }
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("registration: malformed JSON, wrong types, bad key, unknown grant or scope", async () => {
    const key = emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY;
    const before = databaseSnapshot(emu.dbPath);
    const cases: [unknown, string][] = [
      [{ grant_types: "client_credentials", instance_registration_key: key }, "invalid_client_metadata"],
      [{ grant_types: ["client_credentials"] }, "invalid_client_metadata"],
      [{ grant_types: ["client_credentials"], instance_registration_key: `${key}x` }, "invalid_client_metadata"],
      [{ grant_types: ["client_credentials"], instance_registration_key: SQL }, "invalid_client_metadata"],
      [{ grant_types: ["password"], instance_registration_key: key }, "invalid_client_metadata"],
      [{ grant_types: ["client_credentials"], scope: "admin:all", instance_registration_key: key }, "invalid_client_metadata"],
      [{ grant_types: ["client_credentials"], token_endpoint_auth_method: "none", instance_registration_key: key }, "invalid_client_metadata"],
      [{ grant_types: ["authorization_code"], redirect_uris: ["http://evil.example/cb"], instance_registration_key: key }, "invalid_redirect_uri"],
      [{ grant_types: ["authorization_code"], instance_registration_key: key }, "invalid_redirect_uri"],
      // Hosts WHATWG URL accepts but CSP cannot quote: `;` or `,` in the consent page's
      // form-action source would end the directive or the policy (CSP injection).
      [{ grant_types: ["authorization_code"], redirect_uris: ["https://evil.example;sandbox/cb"], instance_registration_key: key }, "invalid_redirect_uri"],
      [{ grant_types: ["authorization_code"], redirect_uris: ["https://evil.example,x/cb"], instance_registration_key: key }, "invalid_redirect_uri"],
      [{ grant_types: ["authorization_code"], redirect_uris: ["https://evil'example/cb"], instance_registration_key: key }, "invalid_redirect_uri"],
    ];
    for (const [json, error] of cases) {
      const answer = await api("POST", "/oauth2/register", { json });
      expect(answer.status, JSON.stringify(json)).toBe(400);
      expect(answer.body).toEqual({ error, error_description: expect.any(String) });
      expect(answer.headers.get("cache-control")).toBe("no-store");
    }
    const malformed = await api("POST", "/oauth2/register", { body: "{", contentType: "application/json" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe("invalid_request");
    const form = await api("POST", "/oauth2/register", { body: `instance_registration_key=${key}`, contentType: "application/x-www-form-urlencoded" });
    expect(form.status).toBe(400);
    expect(databaseSnapshot(emu.dbPath)).toBe(before);
  });

  it("unknown registration metadata is ignored (RFC 7591 §2), not an error", async () => {
    const registered = await registerClient(emu, { grant_types: ["client_credentials"], logo_uri: "https://x.example/l.png", tos_uri: "https://x.example/tos" });
    expect(registered.client_id).toMatch(/^cli_/);
    expect(registered).not.toHaveProperty("logo_uri");
    expect(registered).not.toHaveProperty("tos_uri");
  });

  it("device endpoints: PAT required, unknown user codes are 404, bad scope lists are invalid_scope", async () => {
    const noPat = await api("GET", "/oauth2/device/information?user_code=BCDF-GHJK");
    expect(noPat.status).toBe(401);
    expect(noPat.headers.get("www-authenticate")).toBe('Bearer realm="scriptbox"');
    expect(noPat.body.error).toBe("unauthorized");
    const unknown = await api("POST", `/oauth2/device/approve?user_code=${encodeURIComponent(SQL)}`, { token: pat });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: "not_found", error_description: expect.any(String) });
    expect((await api("POST", "/oauth2/device/deny", { token: pat })).status).toBe(400);
  });
});

describe("a sweep of odd requests over every route", () => {
  it("never answers 5xx", async () => {
    const paths = [
      "/api/v1/team", "/api/v1/team/invitations", "/api/v1/team/invitations/inv_x", "/api/v1/team/subscription", "/api/v1/team/users",
      "/api/v1/team/users/usr_x", "/api/v1/team/users/usr_x/seat", "/api/v1/user", "/api/v1/user/billing/voucher-claims",
      "/api/v1/workspace/ws_x", "/oauth2/authorize", "/oauth2/device/authorize", "/oauth2/device/information", "/oauth2/device/approve",
      "/oauth2/device/deny", "/oauth2/introspect", "/oauth2/register", "/oauth2/register/cli_x", "/oauth2/token", "/oauth2/consent/areq_x",
      "/device", "/dashboard", "/dashboard/graphql", "/dashboard/login", "/__emulator/clock", "/.well-known/oauth-authorization-server",
    ];
    const queries = ["", "?user_code=%00&scope=%2C%2C", "?client_id=a&client_id=b&redirect_uri=x", "?x[y]=1&user_code=BCDF-GHJK"];
    const bodies: { body?: string; contentType?: string; json?: unknown }[] = [
      {}, { body: "{", contentType: "application/json" }, { json: { a: [1, { b: null }], seconds: -1, query: 5 } },
      { body: "a=1&a=2&grant_type=&token=", contentType: "application/x-www-form-urlencoded" }, { json: "string" },
      { body: "\u0000\uffff", contentType: "text/plain" }, { body: "x", contentType: "multipart/form-data; boundary=x" },
    ];
    const failures: string[] = [];
    for (const path of paths) {
      for (const method of ["GET", "POST", "PUT", "DELETE"]) {
        for (const [i, query] of queries.entries()) {
          for (const request of bodies) {
            if (method === "GET" && request !== bodies[0]) continue;
            const answer = await api(method, path + query, { ...request, token: i % 2 === 0 ? pat : undefined, cookie: `SERVICE_SESSION=${emu.seed.CLOUD_SESSION}` });
            if (answer.status >= 500) failures.push(`${method} ${path}${query} ${JSON.stringify(request).slice(0, 60)} -> ${answer.status} ${answer.text.slice(0, 100)}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
