// The authorization code grant's front channel (RFC 6749 §4.1.1-4.1.2, RFC 7636, RFC 9207,
// RFC 9700 §2.1): GET /oauth2/authorize checks the client and its exact redirect URI (a
// mismatch is shown, never redirected to), then either redirects to a consent page for
// the dashboard session's user, or with --auto-consent answers at once with a code.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { invalidToken, sessionCookie } from "../../auth.js";
import type { EmulatorContext, PluginOptions } from "../../context.js";
import { consentPage, csrfToken, csrfValid, errorPage } from "../../pages.js";
import { describeRedirect, formActionSource } from "../../redirectUris.js";
import { formatScope, parseScope } from "../../scopes.js";
import { issueSecret, newId } from "../../secrets.js";
import type { ClientRow, UserRow } from "../../store.js";
import { allowsGrant, clientHome, GRANT, grantableScope, isPublic, redirectUrisOf } from "./clients.js";
import type { FormBody } from "./index.js";

/** RFC 6749 §4.1.2 recommends at most 10 minutes; codes here live 60 seconds. */
export const CODE_TTL_SECONDS = 60;
/** How long a consent page stays answerable. */
export const CONSENT_TTL_SECONDS = 600;

const PARAMS = ["response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"] as const;
type AuthorizeQuery = Partial<Record<(typeof PARAMS)[number], string>>;
const authorizeQuery = {
  type: "object",
  properties: Object.fromEntries(PARAMS.map((name) => [name, { type: "string", maxLength: 2048 }])),
} as const;

interface Grant {
  client: ClientRow;
  user: UserRow;
  redirectUri: string;
  scope: string;
  state: string | undefined;
  codeChallenge: string | null;
}

/** The redirect back to the client, with the RFC 9207 `iss` (mix-up defence) and `state`. */
function redirectBack(ctx: EmulatorContext, reply: FastifyReply, redirectUri: string, params: Record<string, string>, state: string | undefined, status = 302) {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (state !== undefined) url.searchParams.set("state", state);
  url.searchParams.set("iss", ctx.config.baseUrl);
  return reply.header("cache-control", "no-store").redirect(url.href, status);
}

function issueCode(ctx: EmulatorContext, grant: Grant): string {
  const now = ctx.clock.now();
  const secret = issueSecret("authorizationCode");
  ctx.store.insertCode({
    id: newId("code"), selector: secret.selector, secret_hash: secret.hash, client_id: grant.client.id, user_id: grant.user.id,
    redirect_uri: grant.redirectUri, scope: grant.scope, code_challenge: grant.codeChallenge,
    expires_at: now + CODE_TTL_SECONDS, used_at: null, created_at: now,
  });
  return secret.value;
}

class RedirectableError extends Error {
  constructor(readonly error: string, description: string) {
    super(description);
  }
}

/** Checks the request after the client and redirect URI are known good; errors go back to the client. */
function checkRequest(client: ClientRow, query: AuthorizeQuery, invalidTypes: boolean): { scope: string; codeChallenge: string | null } {
  if (invalidTypes) throw new RedirectableError("invalid_request", "a parameter is repeated or malformed");
  if (query.response_type === undefined) throw new RedirectableError("invalid_request", "response_type is required");
  if (query.response_type !== "code") throw new RedirectableError("unsupported_response_type", "only response_type=code is supported");
  if (!allowsGrant(client, GRANT.authorizationCode)) throw new RedirectableError("unauthorized_client", "this client is not registered for the authorization_code grant");
  if (query.scope === undefined) throw new RedirectableError("invalid_request", "scope is required");
  let scope: string;
  try {
    scope = formatScope(grantableScope(query.scope, parseScope(client.scope)));
  } catch (error) {
    throw new RedirectableError("invalid_scope", (error as Error).message);
  }
  const challenge = query.code_challenge;
  if (challenge === undefined) {
    if (query.code_challenge_method !== undefined) throw new RedirectableError("invalid_request", "code_challenge_method without code_challenge");
    if (isPublic(client)) throw new RedirectableError("invalid_request", "public clients must use PKCE (code_challenge with S256)");
    return { scope, codeChallenge: null };
  }
  // RFC 7636 §4.3: an absent method means `plain`, which RFC 9700 §2.1.1 rules out.
  if (query.code_challenge_method !== "S256") throw new RedirectableError("invalid_request", "code_challenge_method must be S256");
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) throw new RedirectableError("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)");
  return { scope, codeChallenge: challenge };
}

/** With --auto-consent: the user of the session cookie, else of a Bearer PAT, else the seeded user. */
function autoConsentUser(ctx: EmulatorContext, request: FastifyRequest): UserRow | null {
  const sessionUser = ctx.auth.sessionUser(request);
  if (sessionUser) return sessionUser;
  const header = request.headers.authorization;
  if (header) {
    const token = /^Bearer +(\S+)$/i.exec(header)?.[1];
    const principal = token ? ctx.auth.patFromToken(token) : null;
    if (!principal) throw invalidToken("the personal access token is invalid, expired or revoked");
    return principal.user;
  }
  return ctx.config.seedUserId ? (ctx.store.user(ctx.config.seedUserId) ?? null) : null;
}

function nothingToApprove(reply: FastifyReply): FastifyReply {
  return errorPage(reply, 404, "Nothing to approve", "This authorization request is unknown, has expired (they last 10 minutes), was already answered, or belongs to another person.",
    "Start again from the application that sent you here.");
}

export async function authorizeRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { store, clock, config } = ctx;

  app.get<{ Querystring: AuthorizeQuery }>("/oauth2/authorize", {
    schema: { querystring: authorizeQuery },
    attachValidation: true,
  }, async (request, reply) => {
    const query = request.query;
    const invalidTypes = request.validationError !== undefined;
    // RFC 6749 §4.1.2.1: without a known client and its exact redirect URI, tell the
    // person; redirecting anywhere would make us an open redirector.
    const client = typeof query.client_id === "string" ? store.client(query.client_id) : undefined;
    if (!client) {
      return errorPage(reply, 400, "Unknown application", "The link names no application registered with the emulator (client_id is unknown or missing).",
        "Go back to the application and check its client_id.");
    }
    const redirectUri = query.redirect_uri;
    if (typeof redirectUri !== "string" || !redirectUrisOf(client).includes(redirectUri)) {
      return errorPage(reply, 400, "Unknown return address", "redirect_uri is missing or is not one the application registered, so the emulator will not send you there.",
        "Go back to the application; its redirect_uri must match a registered one exactly.");
    }
    const state = typeof query.state === "string" ? query.state : undefined;
    let checked: { scope: string; codeChallenge: string | null };
    try {
      checked = checkRequest(client, query, invalidTypes);
    } catch (error) {
      if (!(error instanceof RedirectableError)) throw error;
      return redirectBack(ctx, reply, redirectUri, { error: error.error, error_description: error.message }, state);
    }

    const user = config.autoConsent ? autoConsentUser(ctx, request) : ctx.auth.sessionUser(request);
    if (!user) return reply.redirect(`/dashboard/login?return_to=${encodeURIComponent(request.url)}`, 302);
    const { workspace } = clientHome(ctx, client);
    if (!store.roleOf(workspace.team_id, user.id)) {
      return redirectBack(ctx, reply, redirectUri, { error: "access_denied", error_description: "you are not a member of the team that owns this client" }, state);
    }
    const grant: Grant = { client, user, redirectUri, scope: checked.scope, state, codeChallenge: checked.codeChallenge };
    if (config.autoConsent) return redirectBack(ctx, reply, redirectUri, { code: issueCode(ctx, grant) }, state);

    const now = clock.now();
    const id = newId("areq");
    store.insertAuthRequest({
      id, client_id: client.id, user_id: user.id, redirect_uri: redirectUri, scope: grant.scope, state: state ?? null,
      code_challenge: grant.codeChallenge, expires_at: now + CONSENT_TTL_SECONDS, created_at: now,
    });
    return reply.header("cache-control", "no-store").redirect(`/oauth2/consent/${id}`, 302);
  });

  /** The pending request `id` of the session's user, or null. */
  const pending = (request: FastifyRequest<{ Params: { id: string } }>) => {
    const user = ctx.auth.sessionUser(request);
    const row = store.authRequest(request.params.id);
    if (!user || !row || row.user_id !== user.id || row.expires_at <= clock.now()) return null;
    const client = store.client(row.client_id)!;
    return { user, row, client, session: sessionCookie(request.headers.cookie)! };
  };
  const consentParams = { type: "object", required: ["id"], properties: { id: { type: "string", maxLength: 100 } } } as const;

  app.get<{ Params: { id: string } }>("/oauth2/consent/:id", { schema: { params: consentParams } }, async (request, reply) => {
    const found = pending(request);
    if (!found) return nothingToApprove(reply);
    const { instance, workspace } = clientHome(ctx, found.client);
    return consentPage(reply, {
      action: `/oauth2/consent/${found.row.id}`,
      csrfToken: csrfToken(config.csrfKey, found.session, found.row.id),
      userEmail: found.user.email,
      clientName: found.client.name,
      clientId: found.client.id,
      instanceName: instance.name,
      workspaceName: workspace.name,
      scopes: parseScope(found.row.scope),
      notes: [describeRedirect(found.row.redirect_uri)],
      formTargets: [formActionSource(found.row.redirect_uri)],
    });
  });

  app.post<{ Params: { id: string }; Body: FormBody }>("/oauth2/consent/:id", {
    schema: { params: consentParams, body: { type: "object", required: ["decision"], properties: { decision: { type: "string" }, csrf_token: { type: "string" } } } },
  }, async (request, reply) => {
    const found = pending(request);
    if (!found) return nothingToApprove(reply);
    if (!csrfValid(config.csrfKey, found.session, found.row.id, request.body.csrf_token)) {
      return errorPage(reply, 403, "Form refused", "This consent form was not sent from the emulator's own page, or it belongs to another sign-in.");
    }
    const { row, client, user } = found;
    store.deleteAuthRequest(row.id);
    const state = row.state ?? undefined;
    // RFC 9700 §4.12: 303 after a POST, so the browser does not resend the form.
    if (request.body.decision !== "approve") {
      return redirectBack(ctx, reply, row.redirect_uri, { error: "access_denied", error_description: "the user denied the request" }, state, 303);
    }
    const code = issueCode(ctx, { client, user, redirectUri: row.redirect_uri, scope: row.scope, state, codeChallenge: row.code_challenge });
    return redirectBack(ctx, reply, row.redirect_uri, { code }, state, 303);
  });
}
