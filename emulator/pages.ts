// The few HTML pages a person sees: dashboard sign-in (paste a session), the consent page
// of the authorization code flow and of the device flow, and result and error pages, all
// in one style. Every interpolated value is escaped. Pages may not be framed (RFC 9700
// §4.16, clickjacking), run no script, send no Referer (the URL may carry a user code),
// and their forms may reach only the emulator and, for a consent page, the client's
// registered redirect URI (the 303 after Approve or Deny goes there).
import { createHmac } from "node:crypto";
import type { FastifyReply } from "fastify";
import { scopeInfo } from "./scopes.js";
import { safeEqual } from "./secrets.js";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem}code{background:#f0f2f5;padding:.1rem .3rem;border-radius:3px}
ul{padding-left:1.2rem;list-style:none}li{margin:.3rem 0}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem;cursor:pointer}
.approve{background:#1f6feb;color:#fff;border:0;border-radius:4px}.deny{background:#fff;border:1px solid #aaa;border-radius:4px}
input[type=text]{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}.muted{color:#57606a;font-size:.9rem}
.status{display:inline-block;background:#ffebe9;color:#a40e26;border-radius:3px;padding:.1rem .4rem;font-size:.9rem}
.next{border-left:3px solid #1f6feb;padding-left:.6rem}`;

/** Sends a page. `formTargets`: CSP form-action sources beyond 'self' (a consent page's redirect URI). */
export function sendPage(reply: FastifyReply, status: number, title: string, body: string, formTargets: readonly string[] = []): FastifyReply {
  const formAction = ["'self'", ...formTargets].join(" ");
  return reply
    .status(status)
    .header("content-type", "text/html; charset=utf-8")
    .header("cache-control", "no-store")
    .header("x-frame-options", "DENY")
    .header("content-security-policy", `default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action ${formAction}; frame-ancestors 'none'`)
    .header("referrer-policy", "no-referrer")
    .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · scriptbox cloud emulator</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>`);
}

/** A result page (not an error): a title and one sentence. */
export function messagePage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(reply, status, title, `<p>${escapeHtml(message)}</p>`);
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request", 401: "Not signed in", 403: "Refused", 404: "Not found", 409: "Already decided",
  413: "Too large", 415: "Unsupported form", 500: "Emulator fault",
};
const NEXT_STEP: Record<number, string> = {
  400: "Go back to the application that sent you here and start again.",
  401: "Sign in to the dashboard, then start again from the application.",
  403: "Reload the page you came from and submit it again; if it keeps failing, start again from the application.",
  404: "Check the address, or start again from the application that sent you here.",
  409: "Nothing more to do here; return to the application.",
  413: "Send a smaller form.",
  415: "Use the emulator's own pages to submit this form.",
  500: "This is a bug in the emulator; please report it with the emulator's log.",
};

/** Every browser-facing error: the status, what happened, and what to do next. */
export function errorPage(reply: FastifyReply, status: number, title: string, what: string, next?: string): FastifyReply {
  const nextStep = next ?? NEXT_STEP[status] ?? NEXT_STEP[400]!;
  return sendPage(reply, status, title, `
<p class="status">Error ${status} · ${escapeHtml(STATUS_TEXT[status] ?? "Error")}</p>
<p>${escapeHtml(what)}</p>
<p class="next"><strong>What to do:</strong> ${escapeHtml(nextStep)}</p>`);
}

/** An error thrown by a page route (validation, body parsing, a bug) as an error page. */
export function errorPageFor(reply: FastifyReply, status: number, message: string): FastifyReply {
  return errorPage(reply, status, STATUS_TEXT[status] ?? "Error", status >= 500 ? "The emulator failed to answer this request." : message);
}

export interface ConsentDetails {
  action: string;
  csrfToken: string;
  userEmail: string;
  /** The client's registered name, or null (the id is shown instead). */
  clientName: string | null;
  clientId: string;
  instanceName: string;
  workspaceName: string;
  scopes: readonly string[];
  /** Device flow: the person may untick optional scopes. */
  scopeChoice?: boolean;
  /** Extra hidden fields (e.g. the device user code). */
  hidden?: Record<string, string>;
  /** Lines under the scopes: where approval sends the browser, or the device's details. */
  notes: readonly string[];
  /** CSP form-action sources the form's redirect must reach (the redirect URI). */
  formTargets?: readonly string[];
}

function scopeItem(name: string, choice: boolean): string {
  const info = scopeInfo(name);
  const text = `<code>${escapeHtml(name)}</code>: ${escapeHtml(info.description)}`;
  if (!choice) return `<li>${text}</li>`;
  // A disabled box is not submitted, so a required scope rides along in a hidden field.
  if (info.requirement === "required") {
    return `<li><label><input type="checkbox" checked disabled> ${text} <span class="muted">(required)</span></label>` +
      `<input type="hidden" name="scope" value="${escapeHtml(name)}"></li>`;
  }
  return `<li><label><input type="checkbox" name="scope" value="${escapeHtml(name)}" checked> ${text} <span class="muted">(optional: untick to leave it out)</span></label></li>`;
}

export function consentPage(reply: FastifyReply, details: ConsentDetails): FastifyReply {
  const scopes = details.scopes.map((name) => scopeItem(name, details.scopeChoice ?? false)).join("");
  const hidden = Object.entries({ csrf_token: details.csrfToken, ...(details.scopeChoice ? { scope_choice: "1" } : {}), ...details.hidden })
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("");
  const client = details.clientName !== null
    ? `<strong>${escapeHtml(details.clientName)}</strong> <span class="muted">(client <code>${escapeHtml(details.clientId)}</code>)</span>`
    : `the client <code>${escapeHtml(details.clientId)}</code>`;
  const notes = details.notes.map((note) => `<p class="muted">${escapeHtml(note)}</p>`).join("");
  return sendPage(reply, 200, "Authorize access", `
<p>Signed in as <strong>${escapeHtml(details.userEmail)}</strong>.</p>
<form method="post" action="${escapeHtml(details.action)}">${hidden}
<p>${client} of instance <strong>${escapeHtml(details.instanceName)}</strong>
(workspace ${escapeHtml(details.workspaceName)}) asks to act for you with these scopes:</p>
<ul>${scopes}</ul>
${notes}
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form>`, details.formTargets);
}

export interface SignInDetails {
  returnTo: string;
  /** The login form's CSRF token (see loginCsrf.ts). */
  loginToken: string;
  status?: number;
  error?: string;
}

export function signInPage(reply: FastifyReply, details: SignInDetails): FastifyReply {
  return sendPage(reply, details.status ?? 200, "Sign in to the dashboard", `
${details.error ? `<p class="status">Error ${details.status ?? 400} · ${escapeHtml(STATUS_TEXT[details.status ?? 400] ?? "Error")}</p><p><strong>${escapeHtml(details.error)}</strong></p>` : ""}
<p>The emulator has no passwords: paste a dashboard session token (<code>CLOUD_SESSION</code> from
<code>scriptbox emulator --seed</code>).</p>
<form method="post" action="/dashboard/login">
<input type="hidden" name="return_to" value="${escapeHtml(details.returnTo)}">
<input type="hidden" name="login_token" value="${escapeHtml(details.loginToken)}">
<p><input type="text" name="session" autocomplete="off" placeholder="sbsess_…" aria-label="session token"></p>
<button class="approve" type="submit">Sign in</button>
</form>`);
}

export function codeEntryPage(reply: FastifyReply): FastifyReply {
  return sendPage(reply, 200, "Connect a device", `
<p>Enter the code your device shows.</p>
<form method="get" action="/device">
<p><input type="text" name="user_code" autocomplete="off" placeholder="XXXX-XXXX" aria-label="user code"></p>
<button class="approve" type="submit">Continue</button>
</form>`);
}

/** CSRF token of a form: bound to a browser secret (session or login nonce) and to what the form is about. */
export function csrfToken(key: Buffer, session: string, subject: string): string {
  return createHmac("sha256", key).update(`${session}\n${subject}`).digest("base64url");
}
export function csrfValid(key: Buffer, session: string, subject: string, presented: unknown): boolean {
  return typeof presented === "string" && safeEqual(presented, csrfToken(key, session, subject));
}
