// Validates what the guest sent (a TransportRequestRecord plus body bytes) before anything
// reaches the wire. The guest classes validate too, but the host never trusts the guest:
// a CR, LF, NUL or other control character in a header, a bad name or method, a body on
// GET/HEAD is refused here. Headers the transport owns (framing and connection
// management) are dropped, as a browser drops forbidden request headers.
import type { TransportRequestRecord } from "../../guest-lib/types/bridge.js";
import type { Hop } from "./redirect.js";
import { hasCredentials, removeFragment } from "./fetchUrl.js";
import { limitError, networkError } from "./transportError.js";

/**
 * A request record plus its body. `url` may also be a URL the host parsed itself (the
 * bridge does, to check the URL rules first): it is used as is, never re-parsed. Guest
 * values can only arrive as strings.
 */
export type TransportRequest = Omit<TransportRequestRecord, "url"> & { url: string | URL; body: Uint8Array | null };

export interface ValidRequest {
  hop: Hop;
  redirect: TransportRequestRecord["redirect"];
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values as undici and Node accept them: tab, printable ASCII, obs-text bytes.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
const TRANSPORT_OWNED = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "http2-settings",
]);
const REDIRECT_MODES = new Set(["follow", "manual", "error"]);

function invalid(why: string): Error {
  return networkError(`invalid request: ${why}`);
}

/** `maxHeaders`: the maxRequestHeaders limit, checked before the list is read. */
export function validateRequest(request: TransportRequest, maxHeaders: number): ValidRequest {
  if (request === null || typeof request !== "object") throw invalid("expected a request record");
  const { url: urlText, method, headers, redirect, body } = request;

  let url: URL;
  if (urlText instanceof URL) url = urlText;
  else if (typeof urlText !== "string") throw invalid("url must be a string");
  else {
    try {
      url = new URL(urlText);
    } catch {
      throw invalid("url is not an absolute URL");
    }
  }
  if (hasCredentials(url)) throw invalid("the URL includes credentials");
  removeFragment(url);

  if (typeof method !== "string" || !TOKEN.test(method)) throw invalid("method is not a valid HTTP token");
  if (FORBIDDEN_METHODS.has(method.toUpperCase())) throw invalid(`method ${method} is forbidden`);

  if (!REDIRECT_MODES.has(redirect)) throw invalid('redirect must be "follow", "manual" or "error"');

  if (!Array.isArray(headers)) throw invalid("headers must be a list of [name, value] pairs");
  if (headers.length > maxHeaders) throw limitError(`maxRequestHeaders (${maxHeaders}) exceeded: the request has ${headers.length} header fields`);
  const kept: [string, string][] = [];
  for (const pair of headers) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
      throw invalid("headers must be a list of [name, value] string pairs");
    }
    const [name, value] = pair;
    if (!TOKEN.test(name)) throw invalid(`header name ${JSON.stringify(name)} is not a valid HTTP token`);
    if (!FIELD_VALUE.test(value)) {
      throw invalid(`the value of header ${JSON.stringify(name)} has a control character (CR, LF, NUL, …) or a character above U+00FF`);
    }
    if (TRANSPORT_OWNED.has(name.toLowerCase())) continue;
    // Fetch "normalize": strip leading and trailing HTTP whitespace.
    kept.push([name, value.replace(/^[\t ]+|[\t ]+$/g, "")]);
  }

  if (body !== null && body !== undefined && !(body instanceof Uint8Array)) throw invalid("body must be bytes or null");
  const upper = method.toUpperCase();
  if (body && (upper === "GET" || upper === "HEAD")) throw invalid(`a ${upper} request cannot have a body`);

  return { hop: { url, method, headers: kept, body: body ?? null }, redirect };
}
