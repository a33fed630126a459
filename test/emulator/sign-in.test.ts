// The dashboard sign-in page: return_to is only ever a same-origin path (no open
// redirect, no 500 from a header-breaking value), and a sign-in form not served by the
// emulator to this browser is refused (login CSRF). The browser-level login-CSRF case
// (a cross-site page auto-submitting the form) is in test/browser/oauth-pages.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, loginForm, postSignIn, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(() => emu.close());

const signInTo = (returnTo: string) => postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION, return_to: returnTo });

describe("return_to", () => {
  it.each([
    ["//evil.example/x"],
    ["/\\evil.example/x"],
    ["/\t/evil.example/x"],
    ["/\n/evil.example/x"],
    ["/\r\nSet-Cookie: x=1"],
    ["/%0d%0aSet-Cookie:x=1"],
    ["https://evil.example/x"],
    ["javascript:alert(1)"],
    ["evil.example"],
    [" /dashboard"],
    // Dot segments collapse in URL parsing to a path that starts `//`.
    ["/..//evil.example/x"],
    ["/.//evil.example/x"],
    ["/%2e%2e//evil.example/x"],
    ["/a/..//evil.example/x"],
  ])("%j never leaves the emulator's origin and never answers 500", async (returnTo) => {
    const answer = await signInTo(returnTo);
    expect(answer.status).toBe(303);
    const location = answer.headers.get("location")!;
    // What a browser makes of the Location header: still this origin.
    expect(new URL(location, emu.baseUrl).origin).toBe(emu.baseUrl);
    expect(location).toMatch(/^\/[^/\\]/);
    expect(location).not.toMatch(/[\u0000-\u001f]/);
  });

  it("keeps a same-origin path and its query", async () => {
    const path = "/oauth2/authorize?client_id=cli_x&scope=user%3Aread";
    expect((await signInTo(path)).headers.get("location")).toBe(path);
  });

  it("the sign-in page echoes only a safe return_to into its form", async () => {
    const page = await call(emu.baseUrl, "GET", `/dashboard/login?return_to=${encodeURIComponent("/\t/evil.example/x")}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('name="return_to" value="/dashboard"');
  });
});

describe("login CSRF", () => {
  it("refuses a sign-in POST without the form's token, or with a token of another browser", async () => {
    const noToken = await call(emu.baseUrl, "POST", "/dashboard/login", { body: new URLSearchParams({ session: emu.seed.CLOUD_SESSION }) });
    expect(noToken.status).toBe(403);
    expect(noToken.headers.get("content-type")).toContain("text/html");
    expect(noToken.headers.get("set-cookie") ?? "").not.toContain("SERVICE_SESSION");
    const mine = await loginForm(emu.baseUrl);
    const theirs = await loginForm(emu.baseUrl);
    const mixed = await call(emu.baseUrl, "POST", "/dashboard/login", {
      body: new URLSearchParams({ session: emu.seed.CLOUD_SESSION, login_token: theirs.token }), cookie: mine.cookie,
    });
    expect(mixed.status).toBe(403);
  });

  it("refuses a request the browser marks as cross-site, even with a token", async () => {
    const crossOrigin = await postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION }, { origin: "http://evil.example" });
    expect(crossOrigin.status).toBe(403);
    const crossSite = await postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION }, { "sec-fetch-site": "cross-site" });
    expect(crossSite.status).toBe(403);
    const sameOrigin = await postSignIn(emu.baseUrl, { session: emu.seed.CLOUD_SESSION }, { origin: emu.baseUrl, "sec-fetch-site": "same-origin" });
    expect(sameOrigin.status).toBe(303);
    expect(sameOrigin.headers.get("set-cookie")).toMatch(/^SERVICE_SESSION=/);
  });

  it("the token's nonce cookie is SameSite=Strict and HttpOnly, so a cross-site form never carries it", async () => {
    const page = await call(emu.baseUrl, "GET", "/dashboard/login");
    expect(page.headers.get("set-cookie")).toMatch(/^SERVICE_LOGIN=[A-Za-z0-9_-]{22}; Path=\/dashboard\/login; HttpOnly; SameSite=Strict$/);
  });
});
