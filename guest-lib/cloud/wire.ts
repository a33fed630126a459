// One HTTP exchange with the cloud API, through the sandbox's own fetch (so the network
// policy, limits and secret rules apply exactly as to any script fetch): request bodies
// (JSON or form), the credentials, retries of 429/503, and turning every answer into
// either a JSON value or a CloudError.
import { clearTimer, require as requireModule, setTimer } from "scriptbox:core";
import { CloudError, type GraphQLErrorSummary } from "./errors";

export interface ClientConfig {
  /** "" when the sandbox has no cloud configured (the preconfigured client). */
  baseUrl: string;
  token: string | null;
  session: string | null;
  maxRetries: number;
  maxRetryDelayMs: number;
}

export interface Signal {
  readonly aborted: boolean;
  readonly reason: unknown;
}

export interface Call {
  method: string;
  /** Starts with "/"; may carry a query. */
  path: string;
  /** Which credential goes with the request. */
  auth?: "token" | "session";
  json?: unknown;
  form?: Record<string, string | undefined>;
  signal?: Signal;
  /** A GraphQL request: errors in a 200 answer are failures too; answers `data`. */
  graphql?: boolean;
}

const ADD_ABORT_ALGORITHM = Symbol.for("scriptbox.addAbortAlgorithm");
const EXCERPT_LENGTH = 200;

/** snake_case keys to camelCase, recursively; values are never changed. */
export function camel(value: unknown): any {
  if (Array.isArray(value)) return value.map(camel);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const name = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    Object.defineProperty(out, name, { value: camel((value as Record<string, unknown>)[key]), writable: true, enumerable: true, configurable: true });
  }
  return out;
}

/** application/x-www-form-urlencoded; undefined fields are left out. */
export function formEncode(fields: Record<string, string | undefined>): string {
  let text = "";
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value !== undefined) text += `${text ? "&" : ""}${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
  }
  return text;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: Signal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let remove: (() => void) | undefined;
    const timer = setTimer(
      () => {
        remove?.();
        resolve();
      },
      ms,
      false,
      false,
    );
    if (signal) {
      remove = (signal as unknown as Record<symbol, (algorithm: () => void) => () => void>)[ADD_ABORT_ALGORITHM]!(() => {
        clearTimer(timer);
        reject(signal.reason);
      });
    }
  });
}

/** RFC 9110 §10.2.3: delay-seconds or an HTTP-date; null when absent or unreadable. */
export function retryAfterMs(value: string | null): number | null {
  if (value === null) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

export function notConfigured(method: string, path: string): CloudError {
  const message = "no cloud API is configured for this sandbox: give the sandbox a `cloud` option (CLI: --cloud-url) or create a client with new CloudClient({ baseUrl, token })";
  return new CloudError(0, "not_configured", message, method, path);
}

function excerptOf(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > EXCERPT_LENGTH ? `${flat.slice(0, EXCERPT_LENGTH)}…` : flat;
}

/** The CloudError for an answer that is a failure (or unreadable). */
function failure(response: Response, text: string, body: unknown, call: Call, path: string): CloudError {
  const { status } = response;
  const record = typeof body === "object" && body !== null ? (body as Record<string, any>) : null;
  if (record && Array.isArray(record.errors) && record.errors.length > 0) {
    const errors: GraphQLErrorSummary[] = record.errors.map((e: any) => ({ message: String(e?.message), code: e?.extensions?.code }));
    return new CloudError(status, errors[0]!.code ?? "GRAPHQL_ERROR", errors.map((e) => e.message).join("; "), call.method, path, { errors });
  }
  if (record && typeof record.error === "string") {
    const message = record.message ?? record.error_description ?? record.error;
    return new CloudError(status, record.error, String(message), call.method, path);
  }
  const type = response.headers.get("content-type");
  const excerpt = excerptOf(text);
  const what = text === "" ? "an empty body" : `an unreadable body${type ? ` (${type})` : ""}: ${JSON.stringify(excerpt)}`;
  return new CloudError(status, "invalid_response", `the API answered ${status} ${response.statusText} with ${what}`.replace("  ", " "), call.method, path, { excerpt });
}

/**
 * Sends one call and answers its JSON body (null for an empty 2xx body). 429 and 503 are
 * retried up to config.maxRetries times, after Retry-After when the server gives one
 * (at most config.maxRetryDelayMs), else after an exponential backoff.
 */
export async function send(config: ClientConfig, call: Call): Promise<any> {
  const path = call.path.replace(/\?.*/, "");
  if (!config.baseUrl) throw notConfigured(call.method, path);
  const credential = call.auth === "token" ? config.token : call.auth === "session" ? config.session : "";
  if (credential === null) {
    const what = call.auth === "token" ? "a token (the cloud option's token secret, or new CloudClient({ token }))" : "a dashboard session (the cloud option's session secret, or new CloudClient({ session }))";
    throw new CloudError(0, "not_configured", `this call needs ${what}`, call.method, path);
  }
  const headers: Record<string, string> = { accept: "application/json" };
  if (call.auth === "token") headers.authorization = `Bearer ${credential}`;
  if (call.auth === "session") headers.cookie = `SERVICE_SESSION=${credential}`;
  let body: string | undefined;
  if (call.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(call.json);
  } else if (call.form !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = formEncode(call.form);
  }
  // Loaded on the first call, not when the module is imported (authorizeUrl and pkce need no network).
  const { fetch } = requireModule("scriptbox:http") as { fetch: typeof globalThis.fetch };

  for (let attempt = 0; ; attempt++) {
    let response: Response;
    try {
      response = await fetch(config.baseUrl + call.path, { method: call.method, headers, body, signal: (call.signal ?? null) as never });
    } catch (error) {
      // Policy refusals, limits and aborts stay what fetch made them; a failed connection is the API's.
      if (!(error instanceof TypeError && error.message.slice(0, 12) === "fetch failed")) throw error;
      // fetch's message already says what failed ("fetch failed: connect ECONNREFUSED …").
      throw new CloudError(0, "network_error", error.message, call.method, path, { cause: error });
    }
    const text = await response.text();
    const status = response.status;
    if ((status === 429 || status === 503) && attempt < config.maxRetries) {
      const delay = retryAfterMs(response.headers.get("retry-after")) ?? Math.min(config.maxRetryDelayMs, 500 * 2 ** attempt) * (1 + Math.random() / 4);
      if (delay <= config.maxRetryDelayMs) {
        await sleep(delay, call.signal);
        continue;
      }
    }
    let parsed: unknown = null;
    let readable = true;
    if (text !== "") {
      try {
        parsed = JSON.parse(text);
      } catch {
        readable = false;
      }
    }
    const graphqlErrors = call.graphql && (parsed as { errors?: unknown[] } | null)?.errors?.length;
    if (status < 200 || status > 299 || !readable || graphqlErrors) throw failure(response, text, readable ? parsed : undefined, call, path);
    return call.graphql ? ((parsed as { data?: unknown } | null)?.data ?? null) : parsed;
  }
}
