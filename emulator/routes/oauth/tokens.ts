// POST /oauth2/token (RFC 6749 §3.2, §4.1.3, §4.4, §6; RFC 8628 §3.4-3.5; RFC 7636 §4.5-4.6)
// and POST /oauth2/introspect (RFC 7662). Tokens are opaque, prefixed and stored hashed;
// refresh tokens rotate, and a replayed refresh token or authorization code revokes every
// token of its family (RFC 9700 §2.2.2, §4.14; RFC 6749 §4.1.2).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { issueSecret, kindOf, matchesHash, newId, pkceS256, safeEqual, selectorOf, type SecretKind } from "../../secrets.js";
import type { EmulatorContext, PluginOptions } from "../../context.js";
import { oauthError } from "../../errors.js";
import { formatScope, parseScope } from "../../scopes.js";
import type { ClientRow, TokenRow } from "../../store.js";
import { allowsGrant, clientHome, GRANT, grantableScope, isPublic } from "./clients.js";
import type { FormBody } from "./index.js";

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
/** RFC 8628 §3.5: each slow_down adds 5 seconds to the polling interval. */
const SLOW_DOWN_STEP_MS = 5000;
/** Polls this fraction of the interval apart are fine: network jitter is not impatience. */
const POLL_TOLERANCE = 0.8;

const formString = { type: "string", maxLength: 4096 } as const;
const tokenBody = {
  type: "object",
  required: ["grant_type"],
  properties: Object.fromEntries(
    ["grant_type", "code", "redirect_uri", "code_verifier", "device_code", "refresh_token", "scope", "client_id", "client_secret"]
      .map((name) => [name, formString]),
  ),
} as const;
const introspectBody = {
  type: "object",
  required: ["token"],
  properties: Object.fromEntries(["token", "token_type_hint", "client_id", "client_secret"].map((name) => [name, formString])),
} as const;

interface Issue {
  client: ClientRow;
  userId: string | null;
  scope: string;
  familyId: string;
  codeId: string | null;
  withRefresh: boolean;
}

type TokenResponse = Record<string, string | number>;

/** Mints an access token (and a refresh token of the same family): the token response body. */
export function issueTokens(ctx: EmulatorContext, issue: Issue): TokenResponse {
  const now = ctx.clock.now();
  const mint = (type: "access" | "refresh", ttl: number): string => {
    const secret = issueSecret(type === "access" ? "accessToken" : "refreshToken");
    ctx.store.insertToken({
      id: newId("tok"), selector: secret.selector, secret_hash: secret.hash, type, client_id: issue.client.id,
      user_id: issue.userId, scope: issue.scope, family_id: issue.familyId, code_id: issue.codeId,
      expires_at: now + ttl, used_at: null, revoked_at: null, created_at: now,
    });
    return secret.value;
  };
  const body: TokenResponse = {
    access_token: mint("access", ACCESS_TOKEN_TTL_SECONDS),
    token_type: "Bearer",
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    scope: issue.scope,
  };
  if (issue.withRefresh) body.refresh_token = mint("refresh", REFRESH_TOKEN_TTL_SECONDS);
  return body;
}

export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header("cache-control", "no-store").header("pragma", "no-cache");
}

function required(body: FormBody, name: string): string {
  const value = body[name];
  if (value === undefined) throw oauthError("invalid_request", `${name} is required`);
  return value;
}

const invalidGrant = (description: string) => oauthError("invalid_grant", description);

/** The row behind a code or token presented by this client, or invalid_grant. */
function lookupGrant<T extends { secret_hash: Buffer; client_id: string }>(
  kind: SecretKind, presented: string, find: (selector: string) => T | undefined, client: ClientRow, what: string,
): T {
  const selector = selectorOf(kind, presented);
  const row = selector ? find(selector) : undefined;
  if (!row || !matchesHash(presented, row.secret_hash) || row.client_id !== client.id) throw invalidGrant(`unknown ${what}`);
  return row;
}

/** Marks a code, device code or refresh token used and issues its tokens, atomically. */
function redeem(ctx: EmulatorContext, markUsed: () => void, issue: Issue): TokenResponse {
  return ctx.store.transaction(() => {
    markUsed();
    return issueTokens(ctx, issue);
  });
}

// Each grant checks synchronously (no await between a check and its write, so no request
// interleaves) and throws only before writing, or after a write that must stay (a
// revocation): a throw inside store.transaction would roll it back.
function authorizationCodeGrant(ctx: EmulatorContext, client: ClientRow, body: FormBody): TokenResponse {
  const { store, clock } = ctx;
  const code = required(body, "code");
  const redirectUri = required(body, "redirect_uri");
  const verifier = body.code_verifier;
  const row = lookupGrant("authorizationCode", code, (s) => store.codeBySelector(s), client, "authorization code");
  const now = clock.now();
  if (row.used_at !== null) {
    store.revokeFamily(row.id, now);
    throw invalidGrant("authorization code already used; the tokens issued from it are revoked");
  }
  if (row.expires_at <= now) throw invalidGrant("authorization code expired");
  if (row.redirect_uri !== redirectUri) throw invalidGrant("redirect_uri does not match the authorization request");
  if (row.code_challenge !== null) {
    if (verifier === undefined || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || !safeEqual(pkceS256(verifier), row.code_challenge)) {
      throw invalidGrant("PKCE verification failed");
    }
  } else if (verifier !== undefined) {
    throw invalidGrant("code_verifier sent, but the authorization request had no code_challenge");
  }
  return redeem(ctx, () => store.useCode(row.id, now), {
    client, userId: row.user_id, scope: row.scope, familyId: row.id, codeId: row.id,
    withRefresh: allowsGrant(client, GRANT.refreshToken),
  });
}

function deviceCodeGrant(ctx: EmulatorContext, client: ClientRow, body: FormBody): TokenResponse {
  const { store, clock } = ctx;
  const deviceCode = required(body, "device_code");
  const row = lookupGrant("deviceCode", deviceCode, (s) => store.deviceBySelector(s), client, "device code");
  const nowMs = clock.nowMs();
  if (row.status === "consumed") throw invalidGrant("device code already used");
  if (row.expires_at <= clock.now()) throw oauthError("expired_token", "the device code has expired");
  if (row.status === "denied") throw oauthError("access_denied", "the user denied the request");
  if (row.status === "pending") {
    if (row.last_poll_ms !== null && nowMs - row.last_poll_ms < row.interval_ms * POLL_TOLERANCE) {
      store.recordDevicePoll(row.id, nowMs, row.interval_ms + SLOW_DOWN_STEP_MS);
      throw oauthError("slow_down", `polling too fast: wait at least ${Math.ceil((row.interval_ms + SLOW_DOWN_STEP_MS) / 1000)} seconds between requests`);
    }
    store.recordDevicePoll(row.id, nowMs, row.interval_ms);
    throw oauthError("authorization_pending", "the user has not yet approved the request");
  }
  return redeem(ctx, () => store.consumeDevice(row.id), {
    client, userId: row.user_id, scope: row.granted_scope ?? row.scope, familyId: row.id, codeId: null,
    withRefresh: allowsGrant(client, GRANT.refreshToken),
  });
}

function refreshTokenGrant(ctx: EmulatorContext, client: ClientRow, body: FormBody): TokenResponse {
  const { store, clock } = ctx;
  const presented = required(body, "refresh_token");
  const find = (selector: string) => [store.tokenBySelector(selector)].find((t) => t?.type === "refresh");
  const row = lookupGrant("refreshToken", presented, find, client, "refresh token");
  const now = clock.now();
  if (row.revoked_at !== null) throw invalidGrant("refresh token revoked");
  if (row.used_at !== null) {
    // A rotated refresh token came back: someone holds a copy. Revoke the whole family.
    store.revokeFamily(row.family_id, now);
    throw invalidGrant("refresh token already used; its token family is revoked");
  }
  if (row.expires_at <= now) throw invalidGrant("refresh token expired");
  const scope = grantableScope(body.scope, parseScope(row.scope));
  return redeem(ctx, () => store.useRefreshToken(row.id, now), {
    client, userId: row.user_id, scope: formatScope(scope), familyId: row.family_id, codeId: row.code_id, withRefresh: true,
  });
}

function clientCredentialsGrant(ctx: EmulatorContext, client: ClientRow, body: FormBody): TokenResponse {
  if (isPublic(client)) throw oauthError("unauthorized_client", "client_credentials is for confidential clients only");
  const scope = grantableScope(body.scope, parseScope(client.scope));
  return issueTokens(ctx, {
    client, userId: null, scope: formatScope(scope), familyId: newId("fam"), codeId: null, withRefresh: false,
  });
}

const GRANTS: Record<string, typeof authorizationCodeGrant> = {
  [GRANT.authorizationCode]: authorizationCodeGrant,
  [GRANT.deviceCode]: deviceCodeGrant,
  [GRANT.refreshToken]: refreshTokenGrant,
  [GRANT.clientCredentials]: clientCredentialsGrant,
};

/** RFC 7662 §2.2: what an active token is; anything else is `{ active: false }`. */
function introspection(ctx: EmulatorContext, caller: ClientRow, token: string): Record<string, unknown> {
  const kind = kindOf(token);
  if (kind !== "accessToken" && kind !== "refreshToken") return { active: false };
  const type = kind === "accessToken" ? "access" : "refresh";
  const row: TokenRow | null = ctx.auth.activeToken(token, type);
  if (!row || (type === "refresh" && row.used_at !== null)) return { active: false };
  const owner = ctx.store.client(row.client_id);
  if (!owner) return { active: false };
  const home = clientHome(ctx, owner);
  // A client may only learn about tokens of its own workspace (RFC 7662 §4).
  if (home.workspace.id !== clientHome(ctx, caller).workspace.id) return { active: false };
  return {
    active: true,
    client_id: owner.id,
    sub: row.user_id ?? owner.id,
    meta: { instance_id: home.instance.id, kind: row.user_id ? "user" : "client", workspace_id: home.workspace.id },
    scope: row.scope,
    exp: row.expires_at,
    iat: row.created_at,
    token_type: type === "access" ? "Bearer" : "refresh_token",
  };
}

export async function tokenRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  app.post<{ Body: FormBody }>("/oauth2/token", { schema: { body: tokenBody } }, async (request: FastifyRequest<{ Body: FormBody }>, reply) => {
    const body = request.body;
    const grant = GRANTS[body.grant_type!];
    if (!grant) throw oauthError("unsupported_grant_type", `grant_type ${body.grant_type} is not supported`);
    const client = ctx.auth.client(request, body);
    if (!allowsGrant(client, body.grant_type!)) throw oauthError("unauthorized_client", `this client is not registered for ${body.grant_type}`);
    return noStore(reply).send(grant(ctx, client, body));
  });

  app.post<{ Body: FormBody }>("/oauth2/introspect", { schema: { body: introspectBody } }, async (request, reply) => {
    const caller = ctx.auth.client(request, request.body, { confidentialOnly: true });
    return noStore(reply).send(introspection(ctx, caller, request.body.token!));
  });
}
