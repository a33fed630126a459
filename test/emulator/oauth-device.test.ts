// The device authorization grant (RFC 8628), approved through the PAT endpoints and the
// /device page. The test clock stands in for waiting.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceClock, basic, client, form, patFor, registerClient, seededUser, startTestEmulator, type TestEmulator } from "./helpers.js";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
let emu: TestEmulator;
let api: ReturnType<typeof client>;
let device: { client_id: string; client_secret: string };
let auth: Record<string, string>;

beforeAll(async () => {
  emu = await startTestEmulator({ deviceInterval: 5 });
  api = client(emu);
  device = (await registerClient(emu, { grant_types: [DEVICE_GRANT, "refresh_token"], scope: "user:read billing:write" })) as typeof device;
  auth = { authorization: basic(device.client_id, device.client_secret) };
});
afterAll(() => emu.close());

async function start(scope?: string) {
  const answer = await api("POST", "/oauth2/device/authorize", { body: form(scope ? { scope } : {}), headers: auth });
  expect(answer.status).toBe(200);
  return answer.body as { device_code: string; user_code: string; verification_uri: string; verification_uri_complete: string; expires_in: number; interval: number };
}
const poll = (deviceCode: string) => api("POST", "/oauth2/token", { body: form({ grant_type: DEVICE_GRANT, device_code: deviceCode }), headers: auth });
const pat = () => emu.seed.CLOUD_PAT;

describe("device authorization (RFC 8628 §3.1-3.2)", () => {
  it("answers the spec's fields: codes, verification URIs, expires_in, interval", async () => {
    const started = await start();
    expect(started).toEqual({
      device_code: expect.stringMatching(/^sbdc_/),
      user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verification_uri: `${emu.baseUrl}/device`,
      verification_uri_complete: `${emu.baseUrl}/device?user_code=${started.user_code}`,
      expires_in: 600,
      interval: 5,
    });
  });

  it("needs client authentication and the device_code grant", async () => {
    expect((await api("POST", "/oauth2/device/authorize", { body: form({ client_id: device.client_id }) })).status).toBe(401);
    const cc = await registerClient(emu, { grant_types: ["client_credentials"] });
    const answer = await api("POST", "/oauth2/device/authorize", { body: form({}), headers: { authorization: basic(cc.client_id, cc.client_secret!) } });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe("unauthorized_client");
    const scope = await api("POST", "/oauth2/device/authorize", { body: form({ scope: "admin" }), headers: auth });
    expect(scope.body.error).toBe("invalid_scope");
  });
});

describe("polling (RFC 8628 §3.4-3.5)", () => {
  it("authorization_pending, slow_down that grows the interval by 5 s, then tokens once approved", async () => {
    const { device_code, user_code } = await start();
    const first = await poll(device_code);
    expect(first.status).toBe(400);
    expect(first.body.error).toBe("authorization_pending");
    expect(first.headers.get("cache-control")).toBe("no-store");
    expect((await poll(device_code)).body.error).toBe("slow_down"); // at once: too fast; interval now 10 s
    await advanceClock(emu, 4.5); // past the 5 s interval's 80 % threshold, well short of 10 s's
    expect((await poll(device_code)).body.error).toBe("slow_down"); // interval now 15 s
    await advanceClock(emu, 15);
    expect((await poll(device_code)).body.error).toBe("authorization_pending");

    const approved = await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: pat() });
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ object: "device_authorization", user_code, status: "approved", client_id: device.client_id, scope: "user:read billing:write" });

    const granted = await poll(device_code); // approved: no slow_down check
    expect(granted.status).toBe(200);
    expect(granted.body).toEqual({
      access_token: expect.stringMatching(/^sbat_/), refresh_token: expect.stringMatching(/^sbrt_/),
      token_type: "Bearer", expires_in: 3600, scope: "user:read billing:write",
    });
    // The token acts for the approving user on the two endpoints that take OAuth tokens.
    const me = await api("GET", "/api/v1/user", { token: granted.body.access_token });
    expect(me.body.email).toBe("ada@acme.example");
    const claim = await api("POST", "/api/v1/user/billing/voucher-claims", { token: granted.body.access_token, json: { code: emu.seed.CLOUD_VOUCHER_CODE } });
    expect(claim.status).toBe(201);
    expect(claim.body.credit).toEqual({ amount: 5000, currency: "usd" });
    // OAuth tokens do not open the PAT-only endpoints.
    expect((await api("GET", "/api/v1/team", { token: granted.body.access_token })).status).toBe(401);
    // A device code works once.
    const again = await poll(device_code);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe("invalid_grant");
  });

  it("access_denied after deny, for every later poll", async () => {
    const { device_code, user_code } = await start();
    const denied = await api("POST", `/oauth2/device/deny?user_code=${user_code.toLowerCase().replace("-", "")}`, { token: pat() });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ object: "device_authorization", status: "denied" });
    expect((await poll(device_code)).body.error).toBe("access_denied");
    expect((await poll(device_code)).body.error).toBe("access_denied");
    const late = await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: pat() });
    expect(late.status).toBe(409);
  });

  it("expired_token after expires_in", async () => {
    const { device_code, user_code, expires_in } = await start();
    await advanceClock(emu, expires_in);
    expect((await poll(device_code)).body.error).toBe("expired_token");
    const approve = await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: pat() });
    expect(approve.status).toBe(400);
    expect(approve.body.error).toBe("expired_token");
  });

  it("another client cannot redeem the device code", async () => {
    const { device_code, user_code } = await start();
    await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: pat() });
    const other = await registerClient(emu, { grant_types: [DEVICE_GRANT] });
    const answer = await api("POST", "/oauth2/token", { body: form({ grant_type: DEVICE_GRANT, device_code }), headers: { authorization: basic(other.client_id, other.client_secret!) } });
    expect(answer.body.error).toBe("invalid_grant");
    expect((await poll(device_code)).status).toBe(200);
  });
});

describe("information and approval with a PAT", () => {
  it("shows client, instance, IPs and scopes with their requirement", async () => {
    const { user_code } = await start();
    const info = await api("GET", `/oauth2/device/information?user_code=${user_code}`, { token: pat() });
    expect(info.status).toBe(200);
    expect(info.body).toEqual({
      client: {
        id: device.client_id, ip: "127.0.0.1", registered_at: expect.any(Number),
        instance: { id: expect.stringMatching(/^inst_/), name: "acme-ci", registered_at: expect.any(Number) },
      },
      current_ip: "127.0.0.1",
      scope: "user:read billing:write",
      scopes: [{ name: "user:read", requirement: "required" }, { name: "billing:write", requirement: "optional" }],
    });
  });

  it("approves with a narrower, comma-separated scope; a required scope cannot be dropped", async () => {
    const { device_code, user_code } = await start();
    const dropRequired = await api("POST", `/oauth2/device/approve?user_code=${user_code}&scope=billing:write`, { token: pat() });
    expect(dropRequired.status).toBe(400);
    expect(dropRequired.body.error).toBe("invalid_scope");
    const wider = await api("POST", `/oauth2/device/approve?user_code=${user_code}&scope=user:read,admin`, { token: pat() });
    expect(wider.body.error).toBe("invalid_scope");
    const narrow = await api("POST", `/oauth2/device/approve?user_code=${user_code}&scope=${encodeURIComponent("user:read,")}`, { token: pat() });
    expect(narrow.status).toBe(200);
    expect(narrow.body.scope).toBe("user:read");
    const granted = await poll(device_code);
    expect(granted.body.scope).toBe("user:read");
    // Without billing:write the voucher endpoint refuses the token (RFC 6750 §3.1).
    const claim = await api("POST", "/api/v1/user/billing/voucher-claims", { token: granted.body.access_token, json: { code: emu.seed.CLOUD_VOUCHER_CODE } });
    expect(claim.status).toBe(403);
    expect(claim.body.error).toBe("insufficient_scope");
    expect(claim.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  });

  it("another team's PAT sees a 404; a member of the team may approve", async () => {
    const { user_code } = await start();
    const hank = await patFor(emu, seededUser(emu, "hank@globex.example"));
    expect((await api("GET", `/oauth2/device/information?user_code=${user_code}`, { token: hank.token })).status).toBe(404);
    expect((await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: hank.token })).status).toBe(404);
    const alan = await patFor(emu, seededUser(emu, "alan@acme.example"));
    expect((await api("POST", `/oauth2/device/approve?user_code=${user_code}`, { token: alan.token })).status).toBe(200);
  });
});

describe("the verification page (/device) with a dashboard session", () => {
  it("asks to sign in without a session, shows a consent form with one, and approves on POST", async () => {
    const { device_code, user_code, verification_uri_complete } = await start();
    const path = new URL(verification_uri_complete).pathname + new URL(verification_uri_complete).search;
    const anonymous = await api("GET", path);
    expect(anonymous.status).toBe(200);
    expect(anonymous.text).toContain('action="/dashboard/login"');

    const cookie = `SERVICE_SESSION=${emu.seed.CLOUD_SESSION}`;
    const page = await api("GET", path, { cookie });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.text).toContain(device.client_id);
    expect(page.text).toContain("acme-ci");
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.text)![1]!;

    const forged = await api("POST", "/device", { body: form({ user_code, decision: "approve", csrf_token: "forged" }), cookie });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("content-type")).toContain("text/html");
    expect((await poll(device_code)).body.error).toBe("authorization_pending");

    const approved = await api("POST", "/device", { body: form({ user_code, decision: "approve", csrf_token: csrf }), cookie });
    expect(approved.status).toBe(200);
    expect(approved.text).toContain("Device approved");
    expect((await poll(device_code)).status).toBe(200);
  });
});
