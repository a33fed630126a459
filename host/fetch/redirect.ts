// WHATWG Fetch 4.4 "HTTP-redirect fetch", the steps that apply to a server-side client:
// which statuses redirect, where to, and how the next request changes.
import { networkError } from "./transportError.js";

export interface Hop {
  url: URL;
  method: string;
  /** The guest's headers (placeholders not yet substituted; transport-owned names removed). */
  headers: [string, string][];
  body: Uint8Array | null;
}

export const MAX_REDIRECTS = 20;

export function isRedirectStatus(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/**
 * The response's location URL (Fetch 3.1.4 "location URL") and the Location text it was
 * parsed from: null without Location; a network error when it does not parse, quoting it
 * through `shown` (redaction, when the server had been sent a secret).
 */
export function locationUrl(headers: readonly [string, string][], base: URL, shown: (text: string) => string = (text) => text): { url: URL; text: string } | null {
  let location: string | null = null;
  for (const [name, value] of headers) {
    if (name.length !== 8 || name.toLowerCase() !== "location") continue;
    if (location !== null && location !== value) throw networkError("the redirect has more than one Location header");
    location = value;
  }
  if (location === null) return null;
  try {
    const url = new URL(location, base);
    url.hash = "";
    return { url, text: location };
  } catch {
    throw networkError(`the redirect's Location ${JSON.stringify(shown(location))} is not a valid URL`);
  }
}

const REQUEST_BODY_HEADERS = new Set(["content-encoding", "content-language", "content-location", "content-type"]);

/** The request for the next hop (Fetch 4.4 steps 12-13). */
export function redirectHop(hop: Hop, status: number, location: URL): Hop {
  let { method, headers, body } = hop;
  // Step 12: 301/302 turn POST into GET; 303 turns everything but GET and HEAD into GET.
  if (((status === 301 || status === 302) && method === "POST") || (status === 303 && method !== "GET" && method !== "HEAD")) {
    method = "GET";
    body = null;
    headers = headers.filter(([name]) => !REQUEST_BODY_HEADERS.has(name.toLowerCase()));
  }
  // Step 13: credentials set by the script do not follow a cross-origin redirect.
  if (location.origin !== hop.url.origin) {
    headers = headers.filter(([name]) => name.toLowerCase() !== "authorization");
  }
  return { url: location, method, headers, body };
}
