// OAuth clients: dynamic registration (RFC 7591) with an instance registration key, the
// update endpoint (client_id + client_secret in the body), and what the other OAuth
// routes need to know about a client (its grants, scopes, redirect URIs, instance).
import type { FastifyInstance, FastifyReply } from "fastify";
import type { EmulatorContext, PluginOptions } from "../../context.js";
import { errorHandler, HttpError, oauthError } from "../../errors.js";
import { issueSecret, matchesHash, newId, selectorOf } from "../../secrets.js";
import { DEFAULT_CLIENT_SCOPE, formatScope, parseScope, unknownScopes } from "../../scopes.js";
import type { ClientRow, InstanceRow, WorkspaceRow } from "../../store.js";
import { redirectKind } from "../../redirectUris.js";

export const GRANT = {
  authorizationCode: "authorization_code",
  deviceCode: "urn:ietf:params:oauth:grant-type:device_code",
  refreshToken: "refresh_token",
  clientCredentials: "client_credentials",
} as const;
const GRANT_TYPES: readonly string[] = Object.values(GRANT);
const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;

export function grantTypesOf(client: ClientRow): string[] {
  return JSON.parse(client.grant_types) as string[];
}
export function redirectUrisOf(client: ClientRow): string[] {
  return JSON.parse(client.redirect_uris) as string[];
}
export function allowsGrant(client: ClientRow, grant: string): boolean {
  return grantTypesOf(client).includes(grant);
}
export function isPublic(client: ClientRow): boolean {
  return client.auth_method === "none";
}

/** The instance and workspace a client was registered under. */
export function clientHome(ctx: EmulatorContext, client: ClientRow): { instance: InstanceRow; workspace: WorkspaceRow } {
  const instance = ctx.store.instance(client.instance_id)!;
  return { instance, workspace: ctx.store.workspaceById(instance.workspace_id)! };
}

/**
 * The scope a request may have: the requested names (RFC 6749 §3.3), all of them known
 * and registered for the client; the client's whole registered scope when none is asked.
 */
export function grantableScope(requested: string | undefined, allowed: readonly string[]): string[] {
  if (requested === undefined) return [...allowed];
  const scopes = parseScope(requested);
  if (scopes.length === 0) return [...allowed];
  const unknown = unknownScopes(scopes);
  if (unknown.length > 0) throw oauthError("invalid_scope", `unknown scope ${unknown.join(", ")}`);
  const notAllowed = scopes.filter((s) => !allowed.includes(s));
  if (notAllowed.length > 0) throw oauthError("invalid_scope", `scope ${notAllowed.join(", ")} is not granted to this client`);
  return scopes;
}

const metadataProperties = {
  grant_types: { type: "array", minItems: 1, maxItems: 8, items: { type: "string", maxLength: 100 } },
  scope: { type: "string", maxLength: 1000 },
  redirect_uris: { type: "array", maxItems: 20, items: { type: "string", minLength: 1, maxLength: 2000 } },
  token_endpoint_auth_method: { type: "string", maxLength: 100 },
  client_name: { type: "string", maxLength: 400 },
} as const;

// RFC 7591 §2: metadata the server does not understand is ignored, so no
// additionalProperties: false here (unlike /api/v1).
const registerBody = {
  type: "object",
  required: ["instance_registration_key"],
  properties: { instance_registration_key: { type: "string", maxLength: 200 }, ...metadataProperties },
} as const;
const updateBody = {
  type: "object",
  required: ["client_id", "client_secret"],
  properties: { client_id: { type: "string", maxLength: 200 }, client_secret: { type: "string", maxLength: 200 }, ...metadataProperties },
} as const;

interface Metadata {
  grant_types?: string[];
  scope?: string;
  redirect_uris?: string[];
  token_endpoint_auth_method?: string;
  client_name?: string;
}

function invalidMetadata(message: string): HttpError {
  return oauthError("invalid_client_metadata", message);
}

/** Checked, normalised client metadata (RFC 7591 §2 defaults where a field is absent). */
function checkMetadata(body: Metadata, current?: ClientRow) {
  const grantTypes = [...new Set(body.grant_types ?? (current ? grantTypesOf(current) : [GRANT.authorizationCode]))];
  const bad = grantTypes.filter((g) => !GRANT_TYPES.includes(g));
  if (bad.length > 0) throw invalidMetadata(`unsupported grant_types ${bad.join(", ")}`);

  const authMethod = body.token_endpoint_auth_method ?? current?.auth_method ?? "client_secret_basic";
  if (!(AUTH_METHODS as readonly string[]).includes(authMethod)) throw invalidMetadata(`unsupported token_endpoint_auth_method ${authMethod}`);
  if (current && (authMethod === "none") !== isPublic(current)) {
    throw invalidMetadata("a client cannot switch between public and confidential");
  }
  if (authMethod === "none" && grantTypes.includes(GRANT.clientCredentials)) {
    throw invalidMetadata("client_credentials needs a confidential client (RFC 6749 §4.4)");
  }

  const scopes = parseScope(body.scope ?? current?.scope ?? DEFAULT_CLIENT_SCOPE);
  const unknown = unknownScopes(scopes);
  if (unknown.length > 0) throw invalidMetadata(`unknown scope ${unknown.join(", ")}`);
  if (scopes.length === 0) throw invalidMetadata("scope must name at least one scope");

  const redirectUris = body.redirect_uris ?? (current ? redirectUrisOf(current) : []);
  const badUri = redirectUris.find((uri) => redirectKind(uri) === null);
  if (badUri !== undefined) throw oauthError("invalid_redirect_uri", `redirect URI not allowed: ${badUri}`);
  if (grantTypes.includes(GRANT.authorizationCode) && redirectUris.length === 0) {
    throw oauthError("invalid_redirect_uri", "the authorization_code grant needs redirect_uris");
  }
  return { grantTypes, authMethod, scope: formatScope(scopes), redirectUris: [...new Set(redirectUris)], name: checkClientName(body.client_name, current) };
}

/** RFC 7591 client_name: shown to people on the consent pages, so 1-100 characters of plain text. */
function checkClientName(value: string | undefined, current?: ClientRow): string | null {
  if (value === undefined) return current?.name ?? null;
  const name = value.trim();
  if (name.length === 0 || [...name].length > 100) throw invalidMetadata("client_name must be 1 to 100 characters");
  if (/[\u0000-\u001f\u007f]/.test(name)) throw invalidMetadata("client_name must not contain control characters");
  return name;
}

function clientRecord(client: ClientRow, secret: string | undefined) {
  const redirectUris = redirectUrisOf(client);
  return {
    client_id: client.id,
    client_id_issued_at: client.issued_at,
    ...(secret !== undefined ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    grant_types: grantTypesOf(client),
    scope: client.scope,
    token_endpoint_auth_method: client.auth_method,
    ...(redirectUris.length > 0 ? { redirect_uris: redirectUris } : {}),
    ...(client.name !== null ? { client_name: client.name } : {}),
  };
}

function sendClient(reply: FastifyReply, status: number, client: ClientRow, secret: string | undefined): FastifyReply {
  // The body carries a secret: never cached (RFC 7591 §3.2.1).
  return reply.status(status).header("cache-control", "no-store").header("pragma", "no-cache").send(clientRecord(client, secret));
}

export async function clientRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { store, clock } = ctx;
  app.removeContentTypeParser("text/plain");
  app.setErrorHandler(errorHandler("oauth", "invalid_client_metadata"));

  app.post<{ Body: Metadata & { instance_registration_key: string } }>("/oauth2/register", {
    schema: { body: registerBody },
  }, async (request, reply) => {
    const presented = request.body.instance_registration_key;
    const selector = selectorOf("instanceRegistrationKey", presented);
    const key = selector ? store.instanceKeyBySelector(selector) : undefined;
    if (!key || !matchesHash(presented, key.secret_hash)) throw invalidMetadata("instance_registration_key is not valid");
    const metadata = checkMetadata(request.body);
    const secret = metadata.authMethod === "none" ? undefined : issueSecret("clientSecret");
    const client = store.transaction(() => {
      const now = clock.now();
      // A key names one instance of its workspace: the first registration creates it,
      // later ones (with this key or another naming it) reuse it.
      let instanceId = key.instance_id ?? store.instanceByName(key.workspace_id, key.instance_name)?.id;
      if (!instanceId) {
        instanceId = newId("inst");
        store.insertInstance({ id: instanceId, workspace_id: key.workspace_id, name: key.instance_name, registered_at: now });
      }
      if (!key.instance_id) store.bindInstanceKey(key.id, instanceId);
      const row: ClientRow = {
        id: newId("cli"), secret_hash: secret?.hash ?? null, instance_id: instanceId, auth_method: metadata.authMethod,
        grant_types: JSON.stringify(metadata.grantTypes), scope: metadata.scope, redirect_uris: JSON.stringify(metadata.redirectUris),
        ip: request.ip, issued_at: now, updated_at: now, name: metadata.name,
      };
      store.insertClient(row);
      return row;
    });
    return sendClient(reply, 201, client, secret?.value);
  });

  app.put<{ Params: { id: string }; Body: Metadata & { client_id: string; client_secret: string } }>("/oauth2/register/:id", {
    schema: { params: { type: "object", required: ["id"], properties: { id: { type: "string", maxLength: 200 } } }, body: updateBody },
  }, async (request, reply) => {
    const { client_id: clientId, client_secret: clientSecret } = request.body;
    if (clientId !== request.params.id) throw oauthError("invalid_request", "client_id does not match the path");
    const current = store.client(clientId);
    if (!current || !matchesHash(clientSecret, current.secret_hash)) throw new HttpError(401, "invalid_client", "client authentication failed");
    const metadata = checkMetadata(request.body, current);
    store.updateClient(current.id, {
      grant_types: JSON.stringify(metadata.grantTypes), scope: metadata.scope,
      redirect_uris: JSON.stringify(metadata.redirectUris), name: metadata.name, updated_at: clock.now(),
    });
    return sendClient(reply, 200, store.client(current.id)!, clientSecret);
  });
}
