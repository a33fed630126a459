// The emulator's pages as a person meets them, in Debian's Chromium: the authorization
// code flow (RFC 6749 §4.1) signed in through the page, approved and denied, with and
// without PKCE (RFC 7636), to a loopback and a private-use redirect URI (RFC 8252 §7);
// the device flow's verification page (RFC 8628 §3.3); the error pages; and a cross-site
// auto-submitted sign-in form (login CSRF). A screenshot is taken at each step.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, call, form, registerClient, seededUser, startTestEmulator, type TestEmulator } from "../emulator/helpers.js";
import { chromiumAvailable, launchChromium, screenshotFolder, type Browser } from "./chromium.js";

const PRIVATE_USE = "com.example.app:/cb";

/** The "application" a redirect URI points at: a real server on 127.0.0.1 that shows what it got. */
interface ClientApp {
  base: string;
  /** The same server under another site (localhost vs 127.0.0.1), for cross-site pages. */
  otherSite: string;
  server: Server;
}

function startClientApp(emulatorBase: string, attackerSession: string): Promise<ClientApp> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://app.invalid");
    if (url.pathname === "/callback") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(`<!doctype html><title>Client app</title><h1>Callback received</h1><pre id="query">${url.search.replace(/</g, "&lt;")}</pre>`);
      return;
    }
    if (url.pathname === "/attack") {
      // A hostile page that signs the visitor into the attacker's dashboard account.
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(`<!doctype html><title>Win a prize</title><form id="f" method="post" action="${emulatorBase}/dashboard/login">
<input type="hidden" name="session" value="${attackerSession}"><input type="hidden" name="return_to" value="/dashboard"></form>
<script>document.getElementById("f").submit()</script>`);
      return;
    }
    response.writeHead(404).end();
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ base: `http://127.0.0.1:${port}`, otherSite: `http://localhost:${port}`, server });
    });
  });
}

function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

const runs = chromiumAvailable();

describe.runIf(runs)("the emulator's pages in Chromium", () => {
  let emu: TestEmulator;
  let app: ClientApp;
  let callback: string;
  let confidential: { client_id: string; client_secret?: string };
  let publicClient: { client_id: string };
  let mobile: { client_id: string };
  let device: { client_id: string; client_secret?: string };
  let shot: (page: Page, step: string) => Promise<void>;
  let browser: Browser | undefined;

  beforeAll(async () => {
    emu = await startTestEmulator();
    app = await startClientApp(emu.baseUrl, seededUser(emu, "hank@globex.example").session);
    callback = `${app.base}/callback`;
    confidential = await registerClient(emu, { client_name: "Acme Deploy Bot", grant_types: ["authorization_code"], redirect_uris: [callback], scope: "user:read billing:write" });
    publicClient = await registerClient(emu, { grant_types: ["authorization_code"], redirect_uris: [callback], token_endpoint_auth_method: "none" });
    mobile = await registerClient(emu, { client_name: "Acme Mobile", grant_types: ["authorization_code"], redirect_uris: [PRIVATE_USE], token_endpoint_auth_method: "none" });
    device = await registerClient(emu, {
      client_name: "Acme Build Agent", grant_types: ["urn:ietf:params:oauth:grant-type:device_code"], scope: "user:read billing:write",
    });
    shot = screenshotFolder("emulator-pages");
  });
  afterAll(async () => {
    await browser?.close();
    await emu?.close();
    app?.server.close();
  });

  /** A fresh profile for each test: no cookies, like a first visit. */
  async function freshPage(): Promise<Page> {
    await browser?.close();
    browser = await launchChromium();
    const page = await browser.context.newPage();
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    cspViolations = [];
    return page;
  }
  let cspViolations: string[] = [];

  function authorizeUrl(clientId: string, redirectUri: string, extra: Record<string, string> = {}): string {
    return `${emu.baseUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri, scope: "user:read", ...extra })}`;
  }

  /** Opens `url` without a session, signs in through the page, and arrives at the consent page. */
  async function signInAndReachConsent(page: Page, url: string, name: string) {
    await page.goto(url);
    await expect.poll(() => page.title()).toContain("Sign in");
    await shot(page, `${name}-sign-in`);
    await page.fill('input[name="session"]', emu.seed.CLOUD_SESSION);
    await Promise.all([page.waitForURL(/\/oauth2\/consent\/areq_/), page.click("button[type=submit]")]);
    await shot(page, `${name}-consent`);
  }

  async function exchange(code: string, redirectUri: string, who: { client_id: string; client_secret?: string }, verifier?: string) {
    return call(emu.baseUrl, "POST", "/oauth2/token", {
      body: form({
        grant_type: "authorization_code", code, redirect_uri: redirectUri,
        ...(verifier ? { code_verifier: verifier } : {}), ...(who.client_secret ? {} : { client_id: who.client_id }),
      }),
      headers: who.client_secret ? { authorization: basic(who.client_id, who.client_secret) } : {},
    });
  }

  it("approve without PKCE to a loopback redirect URI: the browser reaches the client with a code that works (RFC 6749 §4.1.2)", async () => {
    const page = await freshPage();
    await signInAndReachConsent(page, authorizeUrl(confidential.client_id, callback, { state: "st-1", scope: "user:read billing:write" }), "approve-loopback");
    const text = await page.textContent("body");
    expect(text).toContain("Acme Deploy Bot");
    expect(text).toContain(confidential.client_id);
    expect(text).toContain(`sends you to ${callback}, an application running on this computer`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback), { timeout: 10_000 }), page.click("button.approve")]);
    await shot(page, "approve-loopback-callback");
    const params = new URL(page.url()).searchParams;
    expect(params.get("state")).toBe("st-1");
    expect(params.get("iss")).toBe(emu.baseUrl);
    const tokens = await exchange(params.get("code")!, callback, confidential);
    expect(tokens.status).toBe(200);
    expect(tokens.body.scope).toBe("user:read billing:write");
    expect(cspViolations).toEqual([]);
  });

  it("deny with PKCE (public client, loopback): the client gets error=access_denied with its state", async () => {
    const page = await freshPage();
    const { challenge } = pkce();
    await signInAndReachConsent(page, authorizeUrl(publicClient.client_id, callback, { state: "st-2", code_challenge: challenge, code_challenge_method: "S256" }), "deny-pkce");
    // No registered name: the page falls back to the client id.
    expect(await page.textContent("body")).toContain(`the client ${publicClient.client_id}`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback), { timeout: 10_000 }), page.click("button.deny")]);
    await shot(page, "deny-pkce-callback");
    const params = new URL(page.url()).searchParams;
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("st-2");
    expect(params.get("code")).toBeNull();
  });

  it("approve with PKCE (public client, loopback): the code is exchanged with the verifier (RFC 7636 §4.5)", async () => {
    const page = await freshPage();
    const { verifier, challenge } = pkce();
    await signInAndReachConsent(page, authorizeUrl(publicClient.client_id, callback, { code_challenge: challenge, code_challenge_method: "S256" }), "approve-pkce");
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback), { timeout: 10_000 }), page.click("button.approve")]);
    await shot(page, "approve-pkce-callback");
    const code = new URL(page.url()).searchParams.get("code")!;
    expect((await exchange(code, callback, publicClient, "wrong-verifier-".padEnd(43, "x"))).status).toBe(400);
    const retry = await freshCodeExchange(page, verifier, challenge);
    expect(retry.status).toBe(200);
  });

  /** A second approval in the same signed-in browser (a failed exchange burns its code). */
  async function freshCodeExchange(page: Page, verifier: string, challenge: string) {
    await page.goto(authorizeUrl(publicClient.client_id, callback, { code_challenge: challenge, code_challenge_method: "S256" }));
    await page.waitForURL(/\/oauth2\/consent\/areq_/);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(callback), { timeout: 10_000 }), page.click("button.approve")]);
    return exchange(new URL(page.url()).searchParams.get("code")!, callback, publicClient, verifier);
  }

  it("approve to a private-use redirect URI (RFC 8252 §7.1): the page names the app's scheme and the 303 is let through", async () => {
    const page = await freshPage();
    const { verifier, challenge } = pkce();
    await signInAndReachConsent(page, authorizeUrl(mobile.client_id, PRIVATE_USE, { state: "st-4", code_challenge: challenge, code_challenge_method: "S256" }), "approve-private-use");
    const text = (await page.textContent("body"))!;
    expect(text).toContain("Acme Mobile");
    expect(text).toContain('hands you to the app installed on this device for "com.example.app:" links');
    expect(text).not.toContain("null");
    const decision = page.waitForResponse((response) => response.request().method() === "POST" && response.url().includes("/oauth2/consent/"));
    await page.click("button.approve");
    const answer = await decision;
    expect(answer.status()).toBe(303);
    const location = new URL(answer.headers().location!);
    expect(`${location.protocol}${location.pathname}`).toBe(PRIVATE_USE);
    expect(location.searchParams.get("state")).toBe("st-4");
    // Chromium reports a form-action block on the console; the app's link must not be blocked.
    await page.waitForTimeout(500);
    await shot(page, "approve-private-use-after");
    expect(cspViolations).toEqual([]);
    expect((await exchange(location.searchParams.get("code")!, PRIVATE_USE, mobile, verifier)).status).toBe(200);
  });

  it("the device verification page shows the device's IP and lets the person untick an optional scope (RFC 8628 §3.3)", async () => {
    const started = await call(emu.baseUrl, "POST", "/oauth2/device/authorize", {
      body: form({ scope: "user:read billing:write" }), headers: { authorization: basic(device.client_id, device.client_secret!) },
    });
    expect(started.status).toBe(200);
    const page = await freshPage();
    await page.goto(started.body.verification_uri_complete);
    await shot(page, "device-sign-in");
    await page.fill('input[name="session"]', emu.seed.CLOUD_SESSION);
    await Promise.all([page.waitForURL(/\/device\?user_code=/), page.click("button[type=submit]")]);
    await shot(page, "device-consent");
    const text = (await page.textContent("body"))!;
    expect(text).toContain("Acme Build Agent");
    expect(text).toContain("The device asked from IP address 127.0.0.1");
    expect(text).toContain(started.body.user_code);
    expect(await page.isDisabled('input[type=checkbox]:not([name])')).toBe(true); // user:read is required
    await page.uncheck('input[name="scope"][value="billing:write"]');
    await shot(page, "device-unticked");
    await Promise.all([page.waitForLoadState(), page.click("button.approve")]);
    await expect.poll(() => page.title()).toContain("Device approved");
    await shot(page, "device-approved");
    const tokens = await call(emu.baseUrl, "POST", "/oauth2/token", {
      body: form({ grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: started.body.device_code }),
      headers: { authorization: basic(device.client_id, device.client_secret!) },
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body.scope).toBe("user:read");
  });

  it("every error a browser can reach is an HTML page with the status and what to do, never JSON", async () => {
    const page = await freshPage();
    const cases: Array<[string, string, number]> = [
      ["unknown-client", `${emu.baseUrl}/oauth2/authorize?client_id=cli_nope&redirect_uri=${encodeURIComponent(callback)}`, 400],
      ["device-bad-code", `${emu.baseUrl}/device?user_code=${"X".repeat(65)}`, 400],
      ["consent-bad-id", `${emu.baseUrl}/oauth2/consent/${"a".repeat(101)}`, 404],
      ["consent-bad-encoding", `${emu.baseUrl}/oauth2/consent/%zz`, 400],
      ["consent-unknown", `${emu.baseUrl}/oauth2/consent/areq_unknown`, 404],
      ["login-bad-return", `${emu.baseUrl}/dashboard/login?return_to=${"x".repeat(5000)}`, 400],
    ];
    for (const [name, url, status] of cases) {
      const response = (await page.goto(url))!;
      await shot(page, `error-${name}`);
      expect(response.status(), name).toBe(status);
      expect(response.headers()["content-type"], name).toContain("text/html");
      const text = (await page.textContent("body"))!;
      expect(text, name).toContain(`Error ${status}`);
      expect(text, name).toContain("What to do:");
    }
  });

  it("a consent form with a wrong CSRF token is refused with an HTML page, and a bad session token re-shows the sign-in page", async () => {
    const page = await freshPage();
    await page.goto(`${emu.baseUrl}/dashboard/login`);
    await page.fill('input[name="session"]', "sbsess_not-a-real-one");
    await page.click("button[type=submit]");
    await expect.poll(() => page.textContent("body")).toContain("That session token is not valid.");
    await shot(page, "error-bad-session");
    await signInAndReachConsent(page, authorizeUrl(confidential.client_id, callback), "csrf");
    await page.locator('input[name="csrf_token"]').evaluate((input: HTMLInputElement) => { input.value = "forged"; });
    const decision = page.waitForResponse((response) => response.request().method() === "POST");
    await page.click("button.approve");
    const answer = await decision;
    await shot(page, "error-csrf");
    expect(answer.status()).toBe(403);
    expect(answer.headers()["content-type"]).toContain("text/html");
    expect(await page.textContent("body")).toContain("Form refused");
  });

  it("a cross-site page that auto-submits the sign-in form does not sign the browser in (login CSRF)", async () => {
    const page = await freshPage();
    const landed = page.waitForResponse((response) => response.url().startsWith(`${emu.baseUrl}/dashboard/login`));
    await page.goto(`${app.otherSite}/attack`);
    const answer = await landed;
    await page.waitForLoadState();
    await shot(page, "login-csrf-refused");
    expect(answer.status()).toBe(403);
    expect(await page.textContent("body")).toContain("did not come from the emulator's own page");
    const cookies = await browser!.context.cookies(emu.baseUrl);
    expect(cookies.map((c) => c.name)).not.toContain("SERVICE_SESSION");
    // The same browser can still sign in through the real page.
    await page.goto(`${emu.baseUrl}/dashboard/login`);
    await page.fill('input[name="session"]', emu.seed.CLOUD_SESSION);
    await Promise.all([page.waitForURL(`${emu.baseUrl}/dashboard`), page.click("button[type=submit]")]);
    await shot(page, "login-real-page");
    expect(await page.textContent("body")).toContain("ada@acme.example");
  });
});
