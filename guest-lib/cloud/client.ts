// The CloudClient: one method per endpoint of the cloud API (spec: shared/spec/cloud-api.md),
// grouped as the issue names them. Arguments are checked before any request; answers are
// the API's records with camelCase keys (see camel()); failures are CloudErrors.
import type {
  CloudClientOptions,
  OAuthApi,
  PatsApi,
  TeamApi,
  TokenResponse,
  UserApi,
  WorkspacesApi,
} from "cloud";
import bridge from "scriptbox:bridge";
import { require as requireModule } from "scriptbox:core";
import { type Fields, fail, object, optionalBoolean, optionalNumber, optionalString, optionalStrings, string } from "./args";
import { pollDevice } from "./device";
import { challenge, verifier } from "./pkce";
import { CloudError, atCallSite } from "./errors";
import { type Call, type ClientConfig, type Signal, camel, formEncode, notConfigured, send } from "./wire";

const PAT_FIELDS = "id name teamId expiresAt createdAt revokedAt";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/** Passed by the module itself to build the preconfigured client. */
export const FROM_CONFIG = {};

function configFrom(options: unknown): ClientConfig {
  const where = "new CloudClient";
  const o = object(where, options, "options");
  const baseUrl = string(where, o.baseUrl, "baseUrl");
  if (!/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/i.test(baseUrl)) fail(where, "baseUrl", "an absolute http: or https: URL without query or fragment", baseUrl);
  const maxRetries = optionalNumber(where, o.maxRetries, "maxRetries") ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries > 10) fail(where, "maxRetries", "an integer from 0 to 10", maxRetries);
  return {
    baseUrl: baseUrl.replace(/\/+$/, ""),
    token: optionalString(where, o.token, "token") ?? null,
    session: optionalString(where, o.session, "session") ?? null,
    maxRetries,
    maxRetryDelayMs: optionalNumber(where, o.maxRetryDelayMs, "maxRetryDelayMs") ?? 10_000,
  };
}

const segment = (where: string, value: unknown, what: string) => encodeURIComponent(string(where, value, what));

/** client_id (+ client_secret, client_secret_post) of a ClientAuth-shaped argument. */
function clientFields(where: string, o: Fields, secretRequired = false) {
  return {
    client_id: string(where, o.clientId, "clientId"),
    client_secret: secretRequired ? string(where, o.clientSecret, "clientSecret") : optionalString(where, o.clientSecret, "clientSecret"),
  };
}

function checkSignal(where: string, value: unknown): Signal | undefined {
  if (value === undefined) return undefined;
  const { AbortSignal } = requireModule("scriptbox:web") as { AbortSignal: new () => Signal };
  if (!(value instanceof AbortSignal)) fail(where, "signal", "an AbortSignal", value);
  return value;
}

export class CloudClient {
  readonly baseUrl: string;
  readonly team: TeamApi;
  readonly user: UserApi;
  readonly workspaces: WorkspacesApi;
  readonly oauth: OAuthApi;
  readonly pats: PatsApi;

  constructor(options: CloudClientOptions) {
    let config: ClientConfig;
    if (options === FROM_CONFIG) {
      const host = JSON.parse(bridge.cloudConfig()) as { baseUrl: string; token: string | null; session: string | null } | null;
      config = { baseUrl: host?.baseUrl ?? "", token: host?.token ?? null, session: host?.session ?? null, maxRetries: 3, maxRetryDelayMs: 10_000 };
    } else {
      config = configFrom(options);
    }
    this.baseUrl = config.baseUrl;
    // The call site is taken now, while the script's frames are still on the stack: a
    // CloudError made after an await would otherwise point at no line of the script.
    const call = (c: Call) => {
      const site = new Error();
      return send(config, c).catch((error: unknown) => {
        throw error instanceof CloudError ? atCallSite(error, site) : error;
      });
    };
    const get = async (path: string) => camel(await call({ method: "GET", path, auth: "token" }));
    const api = async (method: string, path: string, json?: unknown) => camel(await call({ method, path, auth: "token", json }));
    const form = async (path: string, fields: Record<string, string | undefined>, signal?: Signal) =>
      camel(await call({ method: "POST", path, form: fields, signal }));
    const graphql = (query: string, variables?: Fields) => call({ method: "POST", path: "/dashboard/graphql", auth: "session", json: { query, variables }, graphql: true });
    const token = (where: string, options: unknown, fields: (o: Fields) => Record<string, string | undefined>, secretRequired = false): Promise<TokenResponse> => {
      const o = object(where, options);
      return form("/oauth2/token", { ...fields(o), ...clientFields(where, o, secretRequired) });
    };

    this.team = {
      get: async () => get("/api/v1/team"),
      subscription: async () => get("/api/v1/team/subscription"),
      invitations: {
        list: async () => get("/api/v1/team/invitations"),
        create: async (invitation) => {
          const where = "team.invitations.create";
          const o = object(where, invitation);
          const role = optionalString(where, o.role, "role") ?? "member";
          const useSeat = optionalBoolean(where, o.useSeat, "useSeat") ?? false;
          return api("POST", "/api/v1/team/invitations", { email: string(where, o.email, "email"), role, use_seat: useSeat });
        },
        delete: async (id) => api("DELETE", `/api/v1/team/invitations/${segment("team.invitations.delete", id, "invitationId")}`),
      },
      users: {
        list: async () => get("/api/v1/team/users"),
        remove: async (id) => api("DELETE", `/api/v1/team/users/${segment("team.users.remove", id, "userId")}`),
        assignSeat: async (id) => api("PUT", `/api/v1/team/users/${segment("team.users.assignSeat", id, "userId")}/seat`),
        revokeSeat: async (id) => api("DELETE", `/api/v1/team/users/${segment("team.users.revokeSeat", id, "userId")}/seat`),
      },
    };

    this.user = {
      get: async () => get("/api/v1/user"),
      claimVoucher: async (code) => api("POST", "/api/v1/user/billing/voucher-claims", { code: string("user.claimVoucher", code, "code") }),
    };

    this.workspaces = {
      get: async (id) => get(`/api/v1/workspace/${segment("workspaces.get", id, "workspaceId")}`),
    };

    const deviceDecision = async (decision: "approve" | "deny", userCode: unknown, scope?: string) =>
      api("POST", `/oauth2/device/${decision}?${formEncode({ user_code: string(`oauth.device.${decision}`, userCode, "userCode"), scope })}`);

    this.oauth = {
      register: async (client) => {
        const where = "oauth.register";
        const o = object(where, client);
        return camel(
          await call({
            method: "POST",
            path: "/oauth2/register",
            json: {
              instance_registration_key: string(where, o.instanceRegistrationKey, "instanceRegistrationKey"),
              grant_types: optionalStrings(where, o.grantTypes, "grantTypes"),
              scope: optionalString(where, o.scope, "scope"),
              redirect_uris: optionalStrings(where, o.redirectUris, "redirectUris"),
              token_endpoint_auth_method: optionalString(where, o.tokenEndpointAuthMethod, "tokenEndpointAuthMethod"),
            },
          }),
        );
      },
      updateClient: async (client) => {
        const where = "oauth.updateClient";
        const o = object(where, client);
        const fields = clientFields(where, o, true);
        return camel(
          await call({
            method: "PUT",
            path: `/oauth2/register/${encodeURIComponent(fields.client_id)}`,
            json: {
              ...fields,
              grant_types: optionalStrings(where, o.grantTypes, "grantTypes"),
              scope: optionalString(where, o.scope, "scope"),
              redirect_uris: optionalStrings(where, o.redirectUris, "redirectUris"),
            },
          }),
        );
      },
      authorizeUrl: (options) => {
        const where = "oauth.authorizeUrl";
        const o = object(where, options);
        const codeChallenge = optionalString(where, o.codeChallenge, "codeChallenge");
        const query = formEncode({
          response_type: "code",
          client_id: string(where, o.clientId, "clientId"),
          redirect_uri: string(where, o.redirectUri, "redirectUri"),
          scope: string(where, o.scope, "scope"),
          state: optionalString(where, o.state, "state"),
          code_challenge: codeChallenge,
          code_challenge_method: codeChallenge && "S256",
        });
        if (!config.baseUrl) throw notConfigured("GET", "/oauth2/authorize");
        return `${config.baseUrl}/oauth2/authorize?${query}`;
      },
      pkce: { verifier, challenge },
      token: {
        clientCredentials: async (options) => token("oauth.token.clientCredentials", options, (o) => ({ grant_type: "client_credentials", scope: optionalString("oauth.token.clientCredentials", o.scope, "scope") }), true),
        authorizationCode: async (options) =>
          token("oauth.token.authorizationCode", options, (o) => ({
            grant_type: "authorization_code",
            code: string("oauth.token.authorizationCode", o.code, "code"),
            redirect_uri: string("oauth.token.authorizationCode", o.redirectUri, "redirectUri"),
            code_verifier: optionalString("oauth.token.authorizationCode", o.codeVerifier, "codeVerifier"),
          })),
        refresh: async (options) =>
          token("oauth.token.refresh", options, (o) => ({
            grant_type: "refresh_token",
            refresh_token: string("oauth.token.refresh", o.refreshToken, "refreshToken"),
            scope: optionalString("oauth.token.refresh", o.scope, "scope"),
          })),
        deviceCode: async (options) => token("oauth.token.deviceCode", options, (o) => ({ grant_type: DEVICE_GRANT, device_code: string("oauth.token.deviceCode", o.deviceCode, "deviceCode") })),
      },
      device: {
        authorize: async (options) => {
          const where = "oauth.device.authorize";
          const o = object(where, options);
          return form("/oauth2/device/authorize", { ...clientFields(where, o), scope: optionalString(where, o.scope, "scope") });
        },
        poll: async (options) => {
          const where = "oauth.device.poll";
          const o = object(where, options);
          const fields = { grant_type: DEVICE_GRANT, device_code: string(where, o.deviceCode, "deviceCode"), ...clientFields(where, o) };
          const interval = optionalNumber(where, o.interval, "interval") ?? 5;
          const expiresIn = optionalNumber(where, o.expiresIn, "expiresIn");
          const signal = checkSignal(where, o.signal);
          return pollDevice((s) => form("/oauth2/token", fields, s), interval, expiresIn, signal);
        },
        information: async (userCode) => get(`/oauth2/device/information?${formEncode({ user_code: string("oauth.device.information", userCode, "userCode") })}`),
        approve: async (userCode, options) => {
          const where = "oauth.device.approve";
          return deviceDecision("approve", userCode, optionalString(where, options === undefined ? undefined : object(where, options, "options").scope, "scope"));
        },
        deny: async (userCode) => deviceDecision("deny", userCode),
      },
      introspect: async (tokenValue, client) => {
        const where = "oauth.introspect";
        const fields = { token: string(where, tokenValue, "token"), ...clientFields(where, object(where, client, "client"), true) };
        return form("/oauth2/introspect", fields);
      },
    };

    this.pats = {
      create: async (pat) => {
        const where = "pats.create";
        const o = object(where, pat);
        let expiresAt = o.expiresAt;
        if (expiresAt instanceof Date) {
          if (Number.isNaN(expiresAt.getTime())) fail(where, "expiresAt", "a valid Date", "Invalid Date");
          expiresAt = expiresAt.toISOString().replace(/\.000Z$/, "Z");
        } else {
          optionalString(where, expiresAt, "expiresAt (a Date or an RFC 3339 string)");
        }
        const input = { name: string(where, o.name, "name"), teamId: string(where, o.teamId, "teamId"), expiresAt };
        const data = await graphql(`mutation($input: CreatePatInput!) { createPat(input: $input) { pat { ${PAT_FIELDS} token } } }`, { input });
        return data.createPat.pat;
      },
      revoke: async (id) => {
        const data = await graphql(`mutation($id: ID!) { revokePat(id: $id) { pat { ${PAT_FIELDS} } } }`, { id: string("pats.revoke", id, "patId") });
        return data.revokePat.pat;
      },
      list: async () => (await graphql(`{ pats { ${PAT_FIELDS} } }`)).pats,
    };
  }
}
