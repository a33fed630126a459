// The sign-in page's defences. `return_to` (where the browser goes after signing in) is
// only ever a path of this origin, decided by URL parsing, so it can be no open redirect
// (`//evil`, `/\evil`, `/<TAB>/evil` all parse or are read by browsers as another host).
// Login CSRF (a cross-site page auto-submitting the sign-in form to sign the victim into
// the attacker's account) is stopped by a form token bound to a nonce cookie that is
// SameSite=Strict, so it never rides on a cross-site request, plus a refusal of requests
// whose Origin or Sec-Fetch-Site says they come from elsewhere. The token alone suffices;
// the header check makes the refusal explicit for browsers that send the headers.
import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieValue } from "./auth.js";
import { csrfToken, csrfValid } from "./pages.js";

export const LOGIN_COOKIE = "SERVICE_LOGIN";
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const DEFAULT_RETURN = "/dashboard";

/** A same-origin absolute path (with query) to return to, or /dashboard. */
export function safeReturnTo(value: string | undefined): string {
  // Control characters and backslashes are refused before parsing: browsers strip tabs
  // and newlines from URLs and read `\` as `/`, so what we check must be what they read.
  if (!value || !value.startsWith("/") || /[\u0000-\u001f\u007f\\]/.test(value)) return DEFAULT_RETURN;
  const base = new URL("http://emulator.invalid/");
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return DEFAULT_RETURN;
  }
  // Dot segments collapse while parsing (`/..//evil` has the path `//evil`), and a
  // Location that starts `//` is another host, so the parsed path is checked too.
  if (url.origin !== base.origin || url.pathname.startsWith("//")) return DEFAULT_RETURN;
  return url.pathname + url.search;
}

/** The sign-in form's token; sets the nonce cookie when the browser has none yet. */
export function loginFormToken(key: Buffer, request: FastifyRequest, reply: FastifyReply): string {
  let nonce = cookieValue(request.headers.cookie, LOGIN_COOKIE);
  if (!nonce || !NONCE.test(nonce)) {
    nonce = randomBytes(16).toString("base64url");
    reply.header("set-cookie", `${LOGIN_COOKIE}=${nonce}; Path=/dashboard/login; HttpOnly; SameSite=Strict`);
  }
  return csrfToken(key, nonce, "login");
}

/** Whether a sign-in POST carries the token of this browser's nonce cookie. */
export function loginFormValid(key: Buffer, request: FastifyRequest, presented: unknown): boolean {
  const nonce = cookieValue(request.headers.cookie, LOGIN_COOKIE);
  return nonce !== null && NONCE.test(nonce) && csrfValid(key, nonce, "login", presented);
}

/** Whether the browser says the request comes from another site or origin. */
export function crossOriginRequest(request: FastifyRequest): boolean {
  const fetchSite = request.headers["sec-fetch-site"];
  if (fetchSite !== undefined && fetchSite !== "same-origin" && fetchSite !== "none") return true;
  const origin = request.headers.origin;
  // "null": our own pages send no Referer, and with that policy Chromium sends `Origin: null`
  // on their form posts; sandboxed frames send it too, and the token stops those.
  if (origin === undefined || origin === "null") return false;
  try {
    return new URL(origin).host !== (request.headers.host ?? "").toLowerCase();
  } catch {
    return true;
  }
}
