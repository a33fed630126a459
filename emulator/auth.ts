// The emulator's one auth module: who is calling. Bearer PATs and OAuth access tokens
// (RFC 6750), the dashboard session cookie, and OAuth client authentication (RFC 6749
// §2.3: client_secret_basic, client_secret_post, or none for public clients).
import type { FastifyRequest } from "fastify";
import type { Clock } from "./clock.js";
import { HttpError, oauthError } from "./errors.js";
import { kindOf, matchesHash, selectorOf } from "./secrets.js";
import type { ClientRow, PatRow, Role, Store, TokenRow, UserRow } from "./store.js";

export const SESSION_COOKIE = "SERVICE_SESSION";
const REALM = 'realm="scriptbox"';

export interface PatPrincipal {
  kind: "pat";
  user: UserRow;
  pat: PatRow;
  teamId: string;
  /** The owner's role in the PAT's team; undefined once they left it. */
  role: Role | undefined;
}
export interface AccessTokenPrincipal {
  kind: "access_token";
  token: TokenRow;
  /** Null for client-credentials tokens, which act for no user. */
  user: UserRow | null;
  scopes: string[];
}
export type Principal = PatPrincipal | AccessTokenPrincipal;

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** RFC 6750 §3: no credentials → a bare challenge; bad ones → error="invalid_token". */
export function missingCredentials(message = "an Authorization: Bearer token is required"): HttpError {
  return new HttpError(401, "unauthorized", message, { "www-authenticate": `Bearer ${REALM}` });
}
export function invalidToken(message: string): HttpError {
  return new HttpError(401, "invalid_token", message, {
    "www-authenticate": `Bearer ${REALM}, error="invalid_token", error_description="${message}"`,
  });
}
export function insufficientScope(scope: string): HttpError {
  return new HttpError(403, "insufficient_scope", `this token lacks the scope ${scope}`, {
    "www-authenticate": `Bearer ${REALM}, error="insufficient_scope", scope="${scope}"`,
  });
}

/** The caller of a PAT endpoint as a member of the PAT's team (403 once the owner left it). */
export function teamMember(request: FastifyRequest): PatPrincipal & { role: Role } {
  const principal = request.principal;
  if (principal?.kind !== "pat") throw missingCredentials();
  if (!principal.role) throw new HttpError(403, "forbidden", "the owner of this token is not a member of its team");
  return principal as PatPrincipal & { role: Role };
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) throw missingCredentials();
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  if (!match) throw missingCredentials("the Authorization header must be `Bearer <token>`");
  return match[1]!;
}

export class Auth {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** The PAT in `Authorization: Bearer`, checked: known, unexpired, not revoked. */
  pat(request: FastifyRequest): PatPrincipal {
    const token = bearerToken(request);
    if (kindOf(token) === "accessToken") throw invalidToken("this endpoint takes a personal access token, not an OAuth access token");
    const principal = this.patFromToken(token);
    if (!principal) throw invalidToken("the personal access token is invalid, expired or revoked");
    return principal;
  }

  patFromToken(token: string): PatPrincipal | null {
    const selector = selectorOf("pat", token);
    const row = selector ? this.store.patWithOwner(selector) : undefined;
    if (!row || !matchesHash(token, row.secret_hash)) return null;
    if (row.revoked_at !== null || row.expires_at <= this.clock.now()) return null;
    const { owner, role, ...pat } = row;
    return { kind: "pat", user: JSON.parse(owner) as UserRow, pat, teamId: pat.team_id, role: role ?? undefined };
  }

  /** A PAT or an OAuth access token carrying `scope` (the two endpoints that take both). */
  patOrAccessToken(request: FastifyRequest, scope: string): Principal {
    const token = bearerToken(request);
    if (kindOf(token) !== "accessToken") return this.pat(request);
    const row = this.activeToken(token, "access");
    if (!row) throw invalidToken("the access token is invalid, expired or revoked");
    const scopes = row.scope.split(" ");
    if (!scopes.includes(scope)) throw insufficientScope(scope);
    const user = row.user_id ? (this.store.user(row.user_id) ?? null) : null;
    return { kind: "access_token", token: row, user, scopes };
  }

  /** An OAuth token of this type that is known, unexpired and not revoked. */
  activeToken(token: string, type: "access" | "refresh"): TokenRow | null {
    const selector = selectorOf(type === "access" ? "accessToken" : "refreshToken", token);
    const row = selector ? this.store.tokenBySelector(selector) : undefined;
    if (!row || row.type !== type || !matchesHash(token, row.secret_hash)) return null;
    if (row.revoked_at !== null || row.expires_at <= this.clock.now()) return null;
    return row;
  }

  /** The dashboard user of the SERVICE_SESSION cookie, or null. */
  sessionUser(request: FastifyRequest): UserRow | null {
    return this.userOfSession(sessionCookie(request.headers.cookie));
  }

  /** The user of a dashboard session token, or null when it is unknown or expired. */
  userOfSession(token: string | null): UserRow | null {
    if (!token) return null;
    const selector = selectorOf("session", token);
    const session = selector ? this.store.sessionBySelector(selector) : undefined;
    if (!session || !matchesHash(token, session.secret_hash) || session.expires_at <= this.clock.now()) return null;
    return this.store.user(session.user_id) ?? null;
  }

  /**
   * RFC 6749 §2.3: authenticates the client of a token, device or introspection request.
   * One method per request; confidential clients prove their secret, public ones (auth
   * method `none`) only name themselves. Failures are invalid_client (401).
   */
  client(request: FastifyRequest, body: Record<string, string | undefined>, options: { confidentialOnly?: boolean } = {}): ClientRow {
    const header = request.headers.authorization;
    let clientId: string | undefined;
    let secret: string | undefined;
    let usedBasic = false;
    if (header && /^Basic /i.test(header)) {
      usedBasic = true;
      const credentials = parseBasic(header.slice(6).trim());
      if (!credentials) throw invalidClient("malformed Basic credentials", true);
      if (body.client_secret !== undefined) throw oauthError("invalid_request", "use one client authentication method per request, not both Basic and client_secret");
      if (body.client_id !== undefined && body.client_id !== credentials.id) throw oauthError("invalid_request", "client_id does not match the Basic credentials");
      ({ id: clientId, secret } = credentials);
    } else {
      clientId = body.client_id;
      secret = body.client_secret;
    }
    if (!clientId) throw invalidClient("client authentication is required", usedBasic);
    const client = this.store.client(clientId);
    if (!client) throw invalidClient("unknown client", usedBasic);
    if (client.secret_hash) {
      if (secret === undefined || !matchesHash(secret, client.secret_hash)) throw invalidClient("client authentication failed", usedBasic);
    } else {
      if (secret !== undefined) throw invalidClient("this public client has no secret", usedBasic);
      if (options.confidentialOnly) throw invalidClient("this endpoint needs a confidential client", usedBasic);
    }
    return client;
  }
}

function invalidClient(message: string, usedBasic: boolean): HttpError {
  // RFC 6749 §5.2: 401, with a challenge for the scheme the client tried.
  return new HttpError(401, "invalid_client", message, usedBasic ? { "www-authenticate": `Basic ${REALM}` } : {});
}

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded, then base64. */
function parseBasic(encoded: string): { id: string; secret: string } | null {
  if (!/^[A-Za-z0-9+/]+=*$/.test(encoded)) return null;
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  try {
    const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}

export function sessionCookie(header: string | undefined): string | null {
  return cookieValue(header, SESSION_COOKIE);
}

/** The value of the cookie `name` in a Cookie header, or null. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
