// The OAuth flows driven by a client library we did not write (oauth4webapi): if the
// emulator bends a standard, this library's response checks fail.
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestEmulator, type TestEmulator } from "./helpers.js";

const REDIRECT = "http://127.0.0.1:9/callback";
const insecure = { [oauth.allowInsecureRequests]: true } as const; // the emulator speaks http on loopback
let emu: TestEmulator;
let as: oauth.AuthorizationServer;

async function register(metadata: Record<string, unknown>) {
  const response = await oauth.dynamicClientRegistrationRequest(
    as, { instance_registration_key: emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY, ...metadata }, insecure,
  );
  return oauth.processDynamicClientRegistrationResponse(response);
}

beforeAll(async () => {
  // Auto-consent: the library cannot click a consent page; the test is about the protocol.
  emu = await startTestEmulator({ autoConsent: true, deviceInterval: 1 });
  const issuer = new URL(emu.baseUrl);
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
});
afterAll(() => emu.close());

describe("oauth4webapi against the emulator", () => {
  it("discovers the metadata (RFC 8414) with a matching issuer", () => {
    expect(as.issuer).toBe(emu.baseUrl);
    expect(as.token_endpoint).toBe(`${emu.baseUrl}/oauth2/token`);
  });

  it("registers, gets a client-credentials token and introspects it", async () => {
    const reg = await register({ grant_types: ["client_credentials"], scope: "user:read billing:write" });
    expect(reg.client_secret).toMatch(/^sbcs_/);
    const c: oauth.Client = { client_id: reg.client_id };
    const auth = oauth.ClientSecretBasic(reg.client_secret as string);
    const tokens = await oauth.processClientCredentialsResponse(
      as, c, await oauth.clientCredentialsGrantRequest(as, c, auth, new URLSearchParams({ scope: "billing:write" }), insecure),
    );
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe("billing:write");
    const introspection = await oauth.processIntrospectionResponse(
      as, c, await oauth.introspectionRequest(as, c, oauth.ClientSecretPost(reg.client_secret as string), tokens.access_token, insecure),
    );
    expect(introspection).toMatchObject({ active: true, client_id: reg.client_id, scope: "billing:write", token_type: "Bearer" });
  });

  it("runs the device flow, polling at the announced interval until a person approves", async () => {
    const reg = await register({ grant_types: ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"], scope: "user:read" });
    const c: oauth.Client = { client_id: reg.client_id };
    const auth = oauth.ClientSecretBasic(reg.client_secret as string);
    const device = await oauth.processDeviceAuthorizationResponse(
      as, c, await oauth.deviceAuthorizationRequest(as, c, auth, new URLSearchParams({ scope: "user:read" }), insecure),
    );
    expect(device.interval).toBe(1);

    let interval = device.interval!;
    let pendingSeen = 0;
    let tokens: oauth.TokenEndpointResponse | undefined;
    for (let attempt = 0; attempt < 20 && !tokens; attempt++) {
      try {
        tokens = await oauth.processDeviceCodeResponse(as, c, await oauth.deviceCodeGrantRequest(as, c, auth, device.device_code, insecure));
      } catch (error) {
        if (!(error instanceof oauth.ResponseBodyError)) throw error;
        if (error.error === "slow_down") interval += 5;
        else if (error.error === "authorization_pending") {
          pendingSeen++;
          if (pendingSeen === 1) {
            // The person approves with their PAT.
            const approved = await client(emu)("POST", `/oauth2/device/approve?user_code=${device.user_code}`, { token: emu.seed.CLOUD_PAT });
            expect(approved.status).toBe(200);
          }
        } else throw error;
        await new Promise((resolve) => setTimeout(resolve, interval * 1000));
      }
    }
    expect(pendingSeen).toBeGreaterThanOrEqual(1);
    expect(tokens).toBeDefined();
    expect(tokens!.refresh_token).toMatch(/^sbrt_/);

    // A second redemption is refused.
    await expect(oauth.processDeviceCodeResponse(as, c, await oauth.deviceCodeGrantRequest(as, c, auth, device.device_code, insecure)))
      .rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("runs the authorization code flow with PKCE (public client), then rotates the refresh token", async () => {
    const reg = await register({
      grant_types: ["authorization_code", "refresh_token"], redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", scope: "user:read",
    });
    expect(reg.client_secret).toBeUndefined();
    const c: oauth.Client = { client_id: reg.client_id, token_endpoint_auth_method: "none" };
    const auth = oauth.None();
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: c.client_id, redirect_uri: REDIRECT, response_type: "code", scope: "user:read", state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    }).toString();

    const front = await fetch(url, { redirect: "manual", headers: { authorization: `Bearer ${emu.seed.CLOUD_PAT}` } });
    expect(front.status).toBe(302);
    const params = oauth.validateAuthResponse(as, c, new URL(front.headers.get("location")!), state); // checks iss and state
    const tokens = await oauth.processAuthorizationCodeResponse(
      as, c, await oauth.authorizationCodeGrantRequest(as, c, auth, params, REDIRECT, verifier, insecure),
    );
    expect(tokens.scope).toBe("user:read");
    const me = await oauth.protectedResourceRequest(tokens.access_token, "GET", new URL(`${emu.baseUrl}/api/v1/user`), undefined, undefined, insecure);
    expect(((await me.json()) as { email: string }).email).toBe("ada@acme.example");

    const rotated = await oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, auth, tokens.refresh_token!, insecure));
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    // Reuse of the rotated-out token is detected and kills the family.
    await expect(oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, auth, tokens.refresh_token!, insecure)))
      .rejects.toMatchObject({ error: "invalid_grant" });
    await expect(oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, auth, rotated.refresh_token!, insecure)))
      .rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("sees a wrong client secret as invalid_client", async () => {
    const reg = await register({ grant_types: ["client_credentials"] });
    const c: oauth.Client = { client_id: reg.client_id };
    const response = await oauth.clientCredentialsGrantRequest(as, c, oauth.ClientSecretPost("sbcs_wrong"), new URLSearchParams(), insecure);
    await expect(oauth.processClientCredentialsResponse(as, c, response)).rejects.toMatchObject({ error: "invalid_client", status: 401 });
  });
});
