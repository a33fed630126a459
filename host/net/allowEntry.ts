// Parses and matches `net.allow` entries. Syntax (docs/network.md has the full rules):
//   "api.example.com"          that host, any port, http and https
//   "api.example.com:8443"     that host, that port only
//   "*.example.com"            any subdomain at any depth (a.example.com, a.b.example.com),
//                              not example.com itself (as CSP host-sources do); ":port" allowed
//   "127.0.0.1", "10.0.0.5:8080", "::1", "[::1]", "[::1]:8080"   IP literals
//   "https://api.example.com"  an origin: that scheme and port (443 unless given)
//   "*" or "*:8080"            any host (special addresses still need an entry naming them)
import { parseIpLiteral, type CanonicalAddress } from "./addressClass.js";

export type AllowHost =
  | { kind: "any" }
  | { kind: "name"; name: string }
  | { kind: "suffix"; suffix: string } // ".example.com"
  | { kind: "ip"; address: CanonicalAddress };

export interface AllowEntry {
  source: string;
  scheme: "http:" | "https:" | null; // null: both
  port: number | null; // null: any port
  host: AllowHost;
}

/** What an entry is matched against: one hop of a request. */
export interface RequestTarget {
  scheme: "http:" | "https:";
  /** URL hostname, lower-case ASCII, no trailing dot, IPv6 without brackets. */
  hostname: string;
  port: number;
  /** Set when the URL's host is an IP literal. */
  ip: CanonicalAddress | null;
}

export class AllowEntryError extends TypeError {}

export function parseAllowEntry(source: string): AllowEntry {
  const fail = (why: string): never => {
    throw new AllowEntryError(`net.allow: invalid entry ${JSON.stringify(source)}: ${why}`);
  };
  if (typeof source !== "string") fail("entries are strings");
  let rest = source.trim();
  if (rest === "") fail("empty");

  let scheme: AllowEntry["scheme"] = null;
  const schemeMatch = /^([a-z][a-z0-9+.-]*):\/\//i.exec(rest);
  if (schemeMatch) {
    const s = schemeMatch[1]!.toLowerCase();
    if (s !== "http" && s !== "https") fail("only http:// and https:// origins can be allowed");
    scheme = s === "http" ? "http:" : "https:";
    rest = rest.slice(schemeMatch[0].length).replace(/\/$/, "");
  }
  if (/[/?#@\\\s]/.test(rest)) fail("an entry is a host with an optional port, without path, query or credentials");

  let hostText: string;
  let portText: string | null = null;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) fail("unclosed [");
    hostText = rest.slice(0, close + 1);
    const after = rest.slice(close + 1);
    if (after !== "") {
      if (!after.startsWith(":")) fail("unexpected text after ]");
      portText = after.slice(1);
    }
  } else if (rest.indexOf(":") !== rest.lastIndexOf(":")) {
    hostText = rest; // bare IPv6, no port possible
  } else {
    const colon = rest.indexOf(":");
    hostText = colon < 0 ? rest : rest.slice(0, colon);
    if (colon >= 0) portText = rest.slice(colon + 1);
  }

  let port: number | null = null;
  if (portText !== null) {
    if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) fail("port must be 1-65535");
    port = Number(portText);
  } else if (scheme !== null) {
    port = scheme === "https:" ? 443 : 80;
  }

  return { source, scheme, port, host: parseHost(hostText, fail) };
}

function parseHost(text: string, fail: (why: string) => never): AllowHost {
  if (text === "*") return { kind: "any" };
  const ip = parseIpLiteral(text);
  if (ip) return { kind: "ip", address: ip };
  if (text.startsWith("[")) fail("not an IPv6 address");
  if (text.startsWith("*.")) {
    const domain = canonicalHostname(text.slice(2));
    if (domain === null || domain.includes("*") || parseIpLiteral(domain)) fail("*. must be followed by a domain name");
    return { kind: "suffix", suffix: "." + domain };
  }
  if (text.includes("*")) fail('a wildcard is only allowed as "*" or a leading "*."');
  const name = canonicalHostname(text);
  if (name === null) fail("not a valid host name");
  // The URL parser turns "0x7f.1" or "2130706433" into 127.0.0.1: keep such entries as IPs.
  const asIp = parseIpLiteral(name);
  if (asIp) return { kind: "ip", address: asIp };
  return { kind: "name", name };
}

/** The host name as the WHATWG URL parser would serialise it (punycode, lower case), minus one trailing dot. */
export function canonicalHostname(text: string): string | null {
  if (text === "" || text.endsWith("..")) return null;
  let hostname: string;
  try {
    const url = new URL(`http://${text}/`);
    if (url.port !== "" || url.username !== "" || url.password !== "" || url.pathname !== "/") return null;
    hostname = url.hostname;
  } catch {
    return null;
  }
  if (hostname.startsWith("[")) return null;
  return hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
}

export function defaultPort(scheme: "http:" | "https:"): number {
  return scheme === "https:" ? 443 : 80;
}

function schemeAndPortMatch(entry: AllowEntry, target: RequestTarget): boolean {
  return (entry.scheme === null || entry.scheme === target.scheme) && (entry.port === null || entry.port === target.port);
}

/** Whether the entry lets the sandbox address this URL host (before looking at resolved addresses). */
export function entryMatchesHost(entry: AllowEntry, target: RequestTarget): boolean {
  if (!schemeAndPortMatch(entry, target)) return false;
  const host = entry.host;
  switch (host.kind) {
    case "any":
      return true;
    case "ip":
      return target.ip !== null && target.ip.address === host.address.address;
    case "name":
      return target.ip === null && target.hostname === host.name;
    case "suffix":
      return target.ip === null && target.hostname.length > host.suffix.length && target.hostname.endsWith(host.suffix);
  }
}

/**
 * Whether the entry names a special (loopback, private, …) address for this request: it is
 * that IP literal, or it names a `localhost` host exactly and the address is loopback
 * (RFC 6761 6.3: localhost names are loopback by definition). Wildcards never name one, so
 * a DNS answer can never lead "*.example.com" or "*" to an internal address.
 */
export function entryNamesAddress(entry: AllowEntry, target: RequestTarget, address: CanonicalAddress): boolean {
  if (!schemeAndPortMatch(entry, target)) return false;
  const host = entry.host;
  if (host.kind === "ip") return host.address.address === address.address;
  if (host.kind === "name") {
    return isLocalhostName(host.name) && host.name === target.hostname && address.special?.range === "loopback";
  }
  return false;
}

export function isLocalhostName(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost");
}
