// oauth.device.poll (RFC 8628 §3.4-3.5): waits `interval` between polls, keeps going on
// authorization_pending, adds 5 s on slow_down, stops on a decision, at expiry (the
// server's expired_token, or its own deadline) and on an AbortSignal.
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CAUGHT, cloudOptions, json, startSeededEmulator, startServer, value, type Emulator, type Sandbox, type TestServer } from "./helpers.js";

const TOKENS = { access_token: "sbat_x", token_type: "Bearer", expires_in: 3600, scope: "user:read" };
const oauthError = (error: string) => (res: import("node:http").ServerResponse) => json(res, 400, { error, error_description: error.replace(/_/g, " ") }, { "cache-control": "no-store" });

describe("against a scripted token endpoint", () => {
  let plan: ((res: import("node:http").ServerResponse) => void)[] = [];
  let server: TestServer;
  let sandbox: Sandbox;
  beforeAll(async () => {
    server = await startServer((_req, res, _body, index) => {
      const step = plan[index];
      if (step) step(res);
      // else: never answers (abort tests)
    });
    sandbox = await createSandbox({ net: { allow: [`127.0.0.1:${server.port}`] } });
  });
  afterAll(async () => {
    await sandbox?.dispose();
    await server?.close();
  });
  const reset = (steps: typeof plan) => {
    plan = steps;
    server.requests.length = 0;
  };
  const poll = (extra: string) =>
    `${CAUGHT} return caught(async () => ({ tokens: await new CloudClient({ baseUrl: input.origin }).oauth.device.poll({ clientId: "cli_1", clientSecret: "sbcs_1", deviceCode: "sbdc_1", userCode: "WDJB-MJHT", ${extra} }) }));`;

  test("authorization_pending keeps polling every interval; the form carries the device grant and client_secret_post", async () => {
    reset([oauthError("authorization_pending"), oauthError("authorization_pending"), (res) => json(res, 200, TOKENS)]);
    const result = await value(sandbox, `${CAUGHT} const c = new CloudClient({ baseUrl: input.origin });
      return c.oauth.device.poll({ clientId: "cli_1", clientSecret: "sbcs_1", deviceCode: "sbdc_1", interval: 1, expiresIn: 600 });`, { origin: server.origin });
    expect(result).toEqual({ accessToken: "sbat_x", tokenType: "Bearer", expiresIn: 3600, scope: "user:read" });
    expect(server.requests).toHaveLength(3);
    expect(Object.fromEntries(new URLSearchParams(server.requests[0]!.body))).toEqual({
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: "sbdc_1",
      client_id: "cli_1",
      client_secret: "sbcs_1",
    });
    expect(server.requests[0]!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    for (let i = 1; i < 3; i++) expect(server.requests[i]!.time - server.requests[i - 1]!.time).toBeGreaterThanOrEqual(950);
  });

  test("slow_down adds 5 seconds to the interval (RFC 8628 §3.5)", async () => {
    reset([oauthError("slow_down"), (res) => json(res, 200, TOKENS)]);
    const result = await value(sandbox, poll("interval: 0"), { origin: server.origin });
    expect(result).toEqual({ name: "no error" });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.time - server.requests[0]!.time).toBeGreaterThanOrEqual(4950);
  });

  test("any other error ends polling at once: access_denied, expired_token, invalid_client", async () => {
    for (const code of ["access_denied", "expired_token", "invalid_client"]) {
      reset([oauthError("authorization_pending"), oauthError(code)]);
      const result = await value(sandbox, poll("interval: 0"), { origin: server.origin });
      expect(result).toMatchObject({ name: "CloudError", status: 400, code, path: "/oauth2/token" });
      expect(server.requests).toHaveLength(2);
    }
  });

  test("it stops by itself when the device code would expire before the next poll", async () => {
    reset([oauthError("authorization_pending"), oauthError("authorization_pending")]);
    const result = await value(sandbox, poll("interval: 1, expiresIn: 1.5"), { origin: server.origin });
    expect(result).toMatchObject({ name: "CloudError", status: 0, code: "expired_token" });
    expect(server.requests).toHaveLength(1);
  });

  test("an AbortSignal stops it while waiting, with the signal's reason", async () => {
    reset([]);
    const result = await value(sandbox, `${CAUGHT} const c = new AbortController(); setTimeout(() => c.abort(new Error("user gave up")), 100);
      return caught(new CloudClient({ baseUrl: input.origin }).oauth.device.poll({ clientId: "cli_1", deviceCode: "sbdc_1", interval: 30, signal: c.signal }));`, { origin: server.origin });
    expect(result).toMatchObject({ name: "Error", message: "user gave up" });
    expect(server.requests).toHaveLength(0);
  });

  test("an AbortSignal stops a poll in flight (the server never answers)", async () => {
    reset([oauthError("authorization_pending")]);
    const result = await value(sandbox, poll("interval: 0, signal: AbortSignal.timeout(1500)"), { origin: server.origin });
    expect(result).toMatchObject({ name: "TimeoutError" });
    expect(server.requests).toHaveLength(2); // the pending answer, then the poll that was cut off
  });

  test("an already aborted signal rejects before any request", async () => {
    reset([]);
    const result = await value(sandbox, poll("signal: AbortSignal.abort()"), { origin: server.origin });
    expect(result).toMatchObject({ name: "AbortError" });
    expect(server.requests).toHaveLength(0);
  });
});

describe("against the emulator", () => {
  let emulator: Emulator;
  let sandbox: Sandbox;
  beforeAll(async () => {
    emulator = await startSeededEmulator();
    sandbox = await createSandbox(cloudOptions(emulator));
  });
  afterAll(async () => {
    await sandbox?.dispose();
    await emulator?.close();
  });

  test("the emulator's expired_token ends polling (its clock moved past expires_in)", async () => {
    const clientAndCode = await value(
      sandbox,
      `const client = await cloud.oauth.register({ instanceRegistrationKey: input.key, grantTypes: ["urn:ietf:params:oauth:grant-type:device_code"] });
       const device = await cloud.oauth.device.authorize({ clientId: client.clientId, clientSecret: client.clientSecret });
       return { clientId: client.clientId, clientSecret: client.clientSecret, device };`,
      { key: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY },
    );
    const moved = await fetch(`${emulator.baseUrl}/__emulator/clock`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ seconds: 601 }) });
    expect(moved.status).toBe(200);
    const result = await value(sandbox, `${CAUGHT} return caught(cloud.oauth.device.poll({ ...input.device, clientId: input.clientId, clientSecret: input.clientSecret }));`, clientAndCode);
    expect(result).toMatchObject({ name: "CloudError", status: 400, code: "expired_token" });
  });
});
