// The guest module "cloud": `import { cloud, CloudClient, CloudError } from "cloud"`.
// Part of the `scriptbox/guest` types (types/guest.d.ts). The guest library
// (guest-lib/cloud/) is type-checked against these declarations, so they are the contract.
//
// Naming: every field is camelCase, in arguments and in results. Records are the API's
// JSON with each snake_case key turned into camelCase (`use_seat` -> `useSeat`,
// `seats_used` -> `seatsUsed`); values are never changed. Timestamps are Unix seconds.

declare module "cloud" {
  /** Unix time in seconds. */
  type Timestamp = number;

  export interface Team {
    id: string;
    object: "team";
    name: string;
    email: string;
    createdAt: Timestamp;
    updatedAt: Timestamp;
  }

  export type Role = "admin" | "member";

  export interface Invitation {
    id: string;
    object: "invitation";
    email: string;
    role: Role;
    useSeat: boolean;
    expiresAt: Timestamp;
    createdAt: Timestamp;
    updatedAt: Timestamp;
  }

  export interface TeamUser {
    /** The user's id. */
    id: string;
    object: "team_user";
    name: string | null;
    email: string;
    role: Role;
    useSeat: boolean;
    createdAt: Timestamp;
    updatedAt: Timestamp;
  }

  export interface User {
    id: string;
    object: "user";
    name: string | null;
    email: string;
    createdAt: Timestamp;
    updatedAt: Timestamp;
  }

  export interface Workspace {
    id: string;
    object: "workspace";
    name: string;
  }

  export interface Deletion {
    deleted: boolean;
    id: string;
    object: "invitation" | "team_user";
  }

  export interface Subscription {
    id: string;
    object: "subscription";
    plan: { object: "plan"; id: string; name: string };
    seats: number;
    /** Members holding a seat plus pending invitations that reserve one. */
    seatsUsed: number;
    /** Derived from the period: seats can be taken only while "active". */
    status: "scheduled" | "active" | "expired";
    startsAt: Timestamp;
    endsAt: Timestamp;
    createdAt: Timestamp;
    updatedAt: Timestamp;
  }

  export interface Money {
    /** Integer number of cents. */
    amount: number;
    /** ISO 4217 code in lower case, e.g. "usd". */
    currency: string;
  }

  export interface VoucherClaim {
    object: "voucher_claim";
    id: string;
    voucherId: string;
    credit: Money;
    /** The user's total claimed credit. */
    balance: Money;
    createdAt: Timestamp;
  }

  export interface OAuthClient {
    clientId: string;
    clientIdIssuedAt: Timestamp;
    /** Confidential clients only. */
    clientSecret?: string;
    /** 0: never expires. Confidential clients only. */
    clientSecretExpiresAt?: number;
    grantTypes: GrantType[];
    /** Space-separated scopes. */
    scope: string;
    tokenEndpointAuthMethod: TokenEndpointAuthMethod;
    redirectUris?: string[];
  }

  export type GrantType = "authorization_code" | "refresh_token" | "client_credentials" | "urn:ietf:params:oauth:grant-type:device_code";
  export type TokenEndpointAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

  export interface TokenResponse {
    accessToken: string;
    tokenType: string;
    /** Seconds. */
    expiresIn: number;
    scope: string;
    /** For the code and device grants, when the client is registered for refresh_token. */
    refreshToken?: string;
  }

  export interface DeviceAuthorization {
    deviceCode: string;
    /** Show this to the person, e.g. "WDJB-MJHT". */
    userCode: string;
    verificationUri: string;
    verificationUriComplete: string;
    /** Seconds. */
    expiresIn: number;
    /** Seconds to wait between polls. */
    interval: number;
  }

  export interface DeviceInformation {
    client: {
      id: string;
      ip: string;
      registeredAt: Timestamp;
      instance: { id: string; name: string; registeredAt: Timestamp };
    };
    currentIp: string;
    scope: string;
    scopes: { name: string; requirement: "required" | "optional" }[];
  }

  export interface DeviceDecision {
    object: "device_authorization";
    userCode: string;
    status: "approved" | "denied";
    clientId: string;
    scope: string;
  }

  export type Introspection =
    | { active: false }
    | {
        active: true;
        clientId: string;
        sub: string;
        meta: { instanceId: string; kind: "user" | "client"; workspaceId: string };
        scope: string;
        exp: Timestamp;
        iat: Timestamp;
        tokenType: string;
      };

  export interface Pat {
    id: string;
    name: string;
    teamId: string;
    /** RFC 3339. */
    expiresAt: string;
    createdAt: string;
    revokedAt: string | null;
  }

  /** What pats.create answers: the PAT with its secret, shown this once. */
  export interface CreatedPat extends Pat {
    token: string;
  }

  /** A registered OAuth client's credentials. Client secrets travel in the form body (client_secret_post). */
  export interface ClientAuth {
    clientId: string;
    /** Omit for public clients. */
    clientSecret?: string;
  }

  export interface TeamApi {
    get(): Promise<Team>;
    /** The team's subscription, or null when it has none. */
    subscription(): Promise<Subscription | null>;
    invitations: {
      /** Pending invitations, oldest first. */
      list(): Promise<Invitation[]>;
      /** role defaults to "member", useSeat to false. */
      create(invitation: { email: string; role?: Role; useSeat?: boolean }): Promise<Invitation>;
      delete(invitationId: string): Promise<Deletion>;
    };
    users: {
      /** Members in joining order. */
      list(): Promise<TeamUser[]>;
      remove(userId: string): Promise<Deletion>;
      assignSeat(userId: string): Promise<TeamUser>;
      revokeSeat(userId: string): Promise<TeamUser>;
    };
  }

  export interface UserApi {
    get(): Promise<User>;
    claimVoucher(code: string): Promise<VoucherClaim>;
  }

  export interface WorkspacesApi {
    get(workspaceId: string): Promise<Workspace>;
  }

  export interface AuthorizeUrlOptions {
    clientId: string;
    redirectUri: string;
    /** Space-separated scopes (required by the API). */
    scope: string;
    state?: string;
    /** From oauth.pkce.challenge(verifier); sent with code_challenge_method=S256. */
    codeChallenge?: string;
  }

  export interface DevicePollOptions extends ClientAuth {
    deviceCode: string;
    /** Seconds between polls (default 5, RFC 8628 §3.5); slow_down adds 5 each time. */
    interval?: number;
    /** Seconds from now after which polling stops with CloudError "expired_token". */
    expiresIn?: number;
    /** Stops polling: the promise rejects with the signal's reason. */
    signal?: AbortSignal;
  }

  export interface OAuthApi {
    /** RFC 7591 registration with an instance registration key. */
    register(client: {
      instanceRegistrationKey: string;
      grantTypes?: GrantType[];
      scope?: string;
      redirectUris?: string[];
      tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
    }): Promise<OAuthClient>;
    /** Replaces the given metadata of a confidential client; answers the whole record. */
    updateClient(client: { clientId: string; clientSecret: string; grantTypes?: GrantType[]; scope?: string; redirectUris?: string[] }): Promise<OAuthClient>;
    /** The /oauth2/authorize URL to send a person to (authorization code flow). */
    authorizeUrl(options: AuthorizeUrlOptions): string;
    /** RFC 7636 PKCE helpers (S256). */
    pkce: {
      /** A fresh code verifier: 43 characters from 32 random bytes. */
      verifier(): string;
      /** BASE64URL(SHA-256(verifier)), for authorizeUrl's codeChallenge. */
      challenge(verifier: string): string;
    };
    token: {
      clientCredentials(options: ClientAuth & { clientSecret: string; scope?: string }): Promise<TokenResponse>;
      authorizationCode(options: ClientAuth & { code: string; redirectUri: string; codeVerifier?: string }): Promise<TokenResponse>;
      /** Refresh tokens rotate: keep the new refreshToken of the answer. */
      refresh(options: ClientAuth & { refreshToken: string; scope?: string }): Promise<TokenResponse>;
      /** One poll of the device grant; see device.poll for the loop. */
      deviceCode(options: ClientAuth & { deviceCode: string }): Promise<TokenResponse>;
    };
    device: {
      /** Starts the device flow (RFC 8628 §3.1). */
      authorize(options: ClientAuth & { scope?: string }): Promise<DeviceAuthorization>;
      /**
       * Polls the token endpoint until the request is approved (tokens), denied (CloudError
       * "access_denied"), expired (CloudError "expired_token") or the signal aborts.
       * `poll({ ...deviceAuthorization, clientId, clientSecret })` works: other keys are ignored.
       */
      poll(options: DevicePollOptions): Promise<TokenResponse>;
      /** For the person approving (needs this client's token). */
      information(userCode: string): Promise<DeviceInformation>;
      /** scope: a narrower space-separated list than the one requested. */
      approve(userCode: string, options?: { scope?: string }): Promise<DeviceDecision>;
      deny(userCode: string): Promise<DeviceDecision>;
    };
    /** RFC 7662; needs a confidential client's credentials. */
    introspect(token: string, client: ClientAuth & { clientSecret: string }): Promise<Introspection>;
  }

  /** Personal access tokens, through the dashboard's GraphQL endpoint with the session cookie. */
  export interface PatsApi {
    /** expiresAt: a Date or an RFC 3339 string; default 90 days. */
    create(pat: { name: string; teamId: string; expiresAt?: Date | string }): Promise<CreatedPat>;
    revoke(patId: string): Promise<Pat>;
    /** The session user's PATs (the dashboard's `pats` query; no secrets). */
    list(): Promise<Pat[]>;
  }

  export interface CloudClientOptions {
    /** e.g. "https://cloud.example.com"; a path prefix is kept. */
    baseUrl: string;
    /** A PAT or OAuth access token: a placeholder from secret("NAME"), or a literal. */
    token?: string;
    /** The dashboard session (for pats.*): a placeholder or a literal. */
    session?: string;
    /** Retries of a 429 or 503 answer (default 3). Nothing else is retried. */
    maxRetries?: number;
    /** The longest wait before a retry, in ms (default 10000); a longer Retry-After is not waited for. */
    maxRetryDelayMs?: number;
  }

  export class CloudClient {
    constructor(options: CloudClientOptions);
    /** Without a trailing slash. Empty for the preconfigured client when no cloud is configured. */
    readonly baseUrl: string;
    readonly team: TeamApi;
    readonly user: UserApi;
    readonly workspaces: WorkspacesApi;
    readonly oauth: OAuthApi;
    readonly pats: PatsApi;
  }

  /**
   * The API answered with a failure, answered something unreadable, or could not be
   * reached. Network policy refusals, limits and aborts are not CloudErrors: they reject
   * as fetch does (TypeError "network policy: …", "limit: …", the signal's reason).
   */
  export class CloudError extends Error {
    readonly name: "CloudError";
    /** HTTP status; 0 when there was no answer (network failure, client not configured, device code expired locally). */
    readonly status: number;
    /**
     * Machine-readable: the API's `error` ("seats_exhausted"), the OAuth RFC `error`
     * ("authorization_pending", "invalid_grant"), the GraphQL `extensions.code`
     * ("NOT_FOUND"), or one of the client's own: "invalid_response", "network_error",
     * "not_configured", "expired_token".
     */
    readonly code: string;
    readonly method: string;
    /** The API path of the request ("/api/v1/team"): after the baseUrl, without the query. */
    readonly path: string;
    /** The start of an unreadable body (at most 200 characters). */
    readonly excerpt?: string;
    /** GraphQL errors, all of them. */
    readonly errors?: { message: string; code?: string }[];
  }

  /** Configured from the sandbox's `cloud` option (CLI: --cloud-url, --cloud-token-secret). */
  export const cloud: CloudClient;
}
