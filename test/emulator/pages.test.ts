// The pages as HTTP sees them (the browser suite, test/browser, drives them in Chromium):
// the consent page's Content-Security-Policy lets its form reach the registered redirect
// URI and nothing else, it names the client and says where each redirect URI form sends
// the person, and every browser-facing error is an HTML page, never JSON.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, form, registerClient, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
let cookie: string;
beforeAll(async () => {
  emu = await startTestEmulator();
  cookie = `SERVICE_SESSION=${emu.seed.CLOUD_SESSION}`;
});
afterAll(() => emu.close());

async function consentFor(redirectUri: string, clientName?: string) {
  const app = await registerClient(emu, {
    ...(clientName ? { client_name: clientName } : {}), redirect_uris: [redirectUri], token_endpoint_auth_method: "none",
  });
  const start = await call(emu.baseUrl, "GET", `/oauth2/authorize?${new URLSearchParams({
    response_type: "code", client_id: app.client_id, redirect_uri: redirectUri, scope: "user:read",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256",
  })}`, { cookie });
  expect(start.status).toBe(302);
  return { app, page: await call(emu.baseUrl, "GET", start.headers.get("location")!, { cookie }) };
}

describe("the consent page", () => {
  it.each([
    ["http://127.0.0.1:8123/cb", "http://127.0.0.1:8123/cb", "sends you to http://127.0.0.1:8123/cb, an application running on this computer (port 8123)"],
    ["http://localhost:9/a;b,c", "http://localhost:9/a%3Bb%2Cc", "sends you to http://localhost:9/a;b,c, an application running on this computer (port 9)"],
    ["https://app.example/oauth/cb?x=1", "https://app.example/oauth/cb", "sends you to https://app.example/oauth/cb (the site app.example)"],
    ["com.example.app:/cb", "com.example.app:", "hands you to the app installed on this device for &quot;com.example.app:&quot; links (com.example.app:/cb)"],
  ])("for %s: form-action allows exactly %s, and the page says where approval goes", async (redirectUri, source, sentence) => {
    const { page } = await consentFor(redirectUri);
    const csp = page.headers.get("content-security-policy")!;
    const formAction = /form-action ([^;]*)/.exec(csp)![1]!.trim().split(/\s+/);
    expect(formAction).toEqual(["'self'", source]);
    // What the CSP protected before stays protected: no framing, no script, no plugins.
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("script-src");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.text).toContain(sentence);
    expect(page.text).not.toContain("back to null");
  });

  it("names the client by its registered client_name (escaped), else by its id", async () => {
    const named = await consentFor("http://127.0.0.1:8123/cb", "Deploy <Bot> & Co");
    expect(named.page.text).toContain("<strong>Deploy &lt;Bot&gt; &amp; Co</strong>");
    expect(named.page.text).toContain(named.app.client_id);
    const unnamed = await consentFor("http://127.0.0.1:8123/cb");
    expect(unnamed.page.text).toContain(`the client <code>${unnamed.app.client_id}</code>`);
  });

  it("registration keeps client_name and answers it back; a control character or over 100 characters is invalid_client_metadata", async () => {
    const ok = await registerClient(emu, { client_name: "  Acme 😀 App  ", grant_types: ["client_credentials"] });
    expect((ok as unknown as { client_name: string }).client_name).toBe("Acme 😀 App");
    for (const client_name of ["a\nb", "x".repeat(101), ""]) {
      const bad = await call(emu.baseUrl, "POST", "/oauth2/register", {
        json: { instance_registration_key: emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY, grant_types: ["client_credentials"], client_name },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe("invalid_client_metadata");
    }
  });
});

describe("browser-facing errors are HTML pages in one style", () => {
  const cases: Array<[string, string, string, Record<string, unknown>, number]> = [
    ["consent form with a wrong CSRF token", "POST", "/oauth2/consent/CONSENT", { body: form({ decision: "approve", csrf_token: "forged" }) }, 403],
    ["consent form without decision", "POST", "/oauth2/consent/CONSENT", { body: form({ csrf_token: "x" }) }, 400],
    ["consent form as JSON", "POST", "/oauth2/consent/CONSENT", { json: { decision: "approve" } }, 400],
    ["device form without decision", "POST", "/device", { body: form({ user_code: "BCDF-GHJK" }) }, 400],
    ["device page with an over-long code", "GET", `/device?user_code=${"B".repeat(65)}`, {}, 400],
    ["sign-in with an over-long session", "POST", "/dashboard/login", { body: form({ session: "s".repeat(300) }) }, 400],
    ["sign-in as JSON", "POST", "/dashboard/login", { json: { session: "x" } }, 400],
    ["sign-in with a repeated field", "POST", "/dashboard/login", { body: "session=a&session=b", contentType: "application/x-www-form-urlencoded" }, 400],
    ["authorize with a malformed URL", "GET", "/oauth2/authorize?client_id=%zz", {}, 400],
  ];

  it.each(cases)("%s", async (_name, method, path, options, status) => {
    let target = path;
    if (path.includes("CONSENT")) {
      const { page } = await consentFor("http://127.0.0.1:8123/cb");
      target = path.replace("CONSENT", /action="\/oauth2\/consent\/([^"]+)"/.exec(page.text)![1]!);
    }
    const answer = await call(emu.baseUrl, method, target, { cookie, ...options });
    expect(answer.status).toBe(status);
    expect(answer.headers.get("content-type")).toContain("text/html");
    expect(answer.text).toContain(`Error ${status}`);
    expect(answer.body).toBeUndefined(); // not JSON
  });
});
