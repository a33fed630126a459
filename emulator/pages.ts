// The few HTML pages a person sees: dashboard sign-in (paste a session), the consent page
// of the authorization code flow and of the device flow, and result/error pages. Every
// interpolated value is escaped; pages may not be framed (RFC 9700 §4.16, clickjacking)
// and send no Referer (the URL may carry a user code).
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
ul{padding-left:1.2rem}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem;cursor:pointer}
.approve{background:#1f6feb;color:#fff;border:0;border-radius:4px}.deny{background:#fff;border:1px solid #aaa;border-radius:4px}
input[type=text]{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}.muted{color:#57606a;font-size:.9rem}`;

export function sendPage(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  return reply
    .status(status)
    .header("content-type", "text/html; charset=utf-8")
    .header("cache-control", "no-store")
    .header("x-frame-options", "DENY")
    .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
    .header("referrer-policy", "no-referrer")
    .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · scriptbox cloud emulator</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>`);
}

export function messagePage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(reply, status, title, `<p>${escapeHtml(message)}</p>`);
}

export interface ConsentDetails {
  action: string;
  csrfToken: string;
  userEmail: string;
  clientId: string;
  instanceName: string;
  workspaceName: string;
  scopes: readonly string[];
  /** Extra hidden fields (e.g. the device user code). */
  hidden?: Record<string, string>;
  /** Where approval sends the browser (code flow), or the device's user code. */
  note: string;
}

export function consentPage(reply: FastifyReply, details: ConsentDetails): FastifyReply {
  const scopes = details.scopes
    .map((name) => `<li><code>${escapeHtml(name)}</code>: ${escapeHtml(scopeInfo(name).description)}</li>`)
    .join("");
  const hidden = Object.entries({ csrf_token: details.csrfToken, ...details.hidden })
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("");
  return sendPage(reply, 200, "Authorize access", `
<p>Signed in as <strong>${escapeHtml(details.userEmail)}</strong>.</p>
<p>The client <code>${escapeHtml(details.clientId)}</code> of instance <strong>${escapeHtml(details.instanceName)}</strong>
(workspace ${escapeHtml(details.workspaceName)}) asks to act for you with these scopes:</p>
<ul>${scopes}</ul>
<p class="muted">${escapeHtml(details.note)}</p>
<form method="post" action="${escapeHtml(details.action)}">${hidden}
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form>`);
}

export function signInPage(reply: FastifyReply, returnTo: string, status = 200, error?: string): FastifyReply {
  return sendPage(reply, status, "Sign in to the dashboard", `
${error ? `<p><strong>${escapeHtml(error)}</strong></p>` : ""}
<p>The emulator has no passwords: paste a dashboard session token (<code>CLOUD_SESSION</code> from
<code>scriptbox emulator --seed</code>).</p>
<form method="post" action="/dashboard/login">
<input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">
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

/** CSRF token of a consent form: bound to the browser's session and to the request shown. */
export function csrfToken(key: Buffer, session: string, subject: string): string {
  return createHmac("sha256", key).update(`${session}\n${subject}`).digest("base64url");
}
export function csrfValid(key: Buffer, session: string, subject: string, presented: unknown): boolean {
  return typeof presented === "string" && safeEqual(presented, csrfToken(key, session, subject));
}
