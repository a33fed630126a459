// URL parsing for Request, Response.redirect and fetch: relative URLs resolve against the
// sandbox's `location` option (like Deno's --location), else they are a TypeError.
import bridge from "scriptbox:bridge";
import { URL } from "scriptbox:web";
import { TypeErrorCtor } from "./util";

let base: string | null | undefined;

// A URL already in the form the URL parser would serialize it to: http(s), a lower-case
// host whose last label starts with a letter (so no IPv4 number parsing) and has no IDNA
// label, or a dotted-decimal IPv4 address as the parser writes it, no userinfo, a non-default port without leading zeros, and path, query and
// fragment made only of characters the parser leaves as they are, without dot segments.
// Such input is its own href; anything else goes through the URL parser. This skips
// ~0.2 ms of parsing per Request on QuickJS, the largest guest cost of a small fetch.
const CANONICAL =
  /^https?:\/\/(?:(?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))(?::[1-9][0-9]{0,4})?(?:\/[A-Za-z0-9\-._~!$&()*+,;=:@/%]*)?(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*)?(?:#[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*)?$/;

// What CANONICAL lets through but the parser would still change: IDNA labels, dot segments.
const NEEDS_PARSER = /xn--|\/\.(?:\.|\/|$|%|\?|#)|%2e/i;
const HOST_END = /[/?#]/;

/** The href the URL parser would give for input (resolved against location), or a TypeError. */
export function parseHref(input: string, what: string): string {
  if (CANONICAL.test(input) && !NEEDS_PARSER.test(input)) {
    const start = input.indexOf("//") + 2;
    const length = input.slice(start).search(HOST_END);
    const end = length < 0 ? input.length : start + length;
    const colon = input.lastIndexOf(":", end);
    const port = colon > start ? Number(input.slice(colon + 1, end)) : -1;
    if (port !== (input.charCodeAt(4) === 0x73 ? 443 : 80) && port <= 65535) {
      return input.charCodeAt(end) === 0x2f ? input : `${input.slice(0, end)}/${input.slice(end)}`;
    }
  }
  return parseURL(input, what).href;
}

const HAS_SCHEME_AND_AUTHORITY = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

export function parseURL(input: string, what: string): URL {
  if (base === undefined) base = bridge.location();
  // An input with "scheme://" does not depend on the base: skip parsing the base.
  const url = URL.parse(input, HAS_SCHEME_AND_AUTHORITY.test(input) ? undefined : (base ?? undefined));
  if (url === null) {
    throw new TypeErrorCtor(
      base === null && URL.parse(input, "http://base.invalid/") !== null
        ? `${what}: relative URL ${JSON.stringify(input)} needs the sandbox's location option`
        : `${what}: invalid URL ${JSON.stringify(input)}`,
    );
  }
  return url;
}

/** The origin of the sandbox's location option (the environment's origin), or null without one. */
let origin: string | null | undefined;
export function locationOrigin(): string | null {
  if (origin === undefined) {
    if (base === undefined) base = bridge.location();
    origin = base === null ? null : new URL(base).origin; // parsed once: URL parsing is slow here
  }
  return origin;
}

/** The URL serialized without its fragment (Fetch stores request and response URLs so). */
export function withoutFragment(url: URL): string {
  const href = url.href;
  const hash = href.indexOf("#");
  return hash < 0 ? href : href.slice(0, hash);
}
