// Classifies IP addresses for the network policy: public unicast, or one of the special
// classes (loopback, private, link-local, …) that a sandbox may reach only when net.allow
// names the address. ipaddr.js knows the IANA special-purpose registries; we add the
// IPv4-compatible block it calls unicast, and unwrap IPv4-mapped IPv6 so that
// ::ffff:127.0.0.1 is judged as 127.0.0.1.
import { createRequire } from "node:module";
import type IpAddr from "ipaddr.js";

// require, not import: Node's ES-module import of a CommonJS package starts its export
// lexer (a wasm instance, ~6 MB resident) in the embedder at `import "scriptbox"`.
const ipaddr = createRequire(import.meta.url)("ipaddr.js") as typeof IpAddr;

export type AddressFamily = 4 | 6;

/** An IP address in canonical text form (IPv4 dotted quad, IPv6 RFC 5952), unwrapped from ::ffff:. */
export interface CanonicalAddress {
  address: string;
  family: AddressFamily;
  /** The special class, or null for public unicast. */
  special: SpecialClass | null;
}

export interface SpecialClass {
  /** ipaddr.js range name, or our own ("ipv4Compatible"). */
  range: string;
  /** Human text for refusal messages: "a loopback address". */
  description: string;
}

const DESCRIPTIONS: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private address (RFC 1918)",
  uniqueLocal: "a unique-local address (fc00::/7)",
  linkLocal: "a link-local address",
  unspecified: "an unspecified address",
  carrierGradeNat: "a carrier-grade NAT address (100.64.0.0/10)",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  reserved: "a reserved address",
  benchmarking: "a benchmarking address (RFC 2544)",
  deprecatedSiteLocal: "a site-local address (fec0::/10)",
  ipv4Compatible: "an IPv4-compatible IPv6 address (::/96)",
  rfc6052: "a NAT64 address (64:ff9b::/96)",
  rfc6145: "an IPv4-translated address",
  "6to4": "a 6to4 address (2002::/16)",
  teredo: "a Teredo address (2001::/32)",
};

/** Returns the canonical form of an IP literal (brackets allowed for IPv6), or null if it is not one. */
export function parseIpLiteral(text: string): CanonicalAddress | null {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  // Only strict forms: a dotted quad or IPv6. ipaddr.isValid also takes "0x7f.1" and the like,
  // which a hostname entry should never silently turn into.
  let parsed: IpAddr.IPv4 | IpAddr.IPv6;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) parsed = ipaddr.IPv4.parse(bare);
  else if (ipaddr.IPv6.isValid(bare) && !bare.includes("%")) parsed = ipaddr.IPv6.parse(bare);
  else return null;
  return classify(parsed);
}

function classify(parsed: IpAddr.IPv4 | IpAddr.IPv6): CanonicalAddress {
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as IpAddr.IPv6;
    if (v6.isIPv4MappedAddress()) return classify(v6.toIPv4Address());
    const address = v6.toRFC5952String();
    const range = isIpv4Compatible(v6) ? "ipv4Compatible" : v6.range();
    return { address, family: 6, special: range === "unicast" ? null : describe(range) };
  }
  const range = (parsed as IpAddr.IPv4).range();
  return { address: parsed.toString(), family: 4, special: range === "unicast" ? null : describe(range) };
}

// ::a.b.c.d (deprecated, RFC 4291 2.5.5.1); ::/128 and ::1 are classed as unspecified and loopback.
function isIpv4Compatible(v6: IpAddr.IPv6): boolean {
  const p = v6.parts;
  return p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 && (p[6] !== 0 || p[7]! > 1);
}

function describe(range: string): SpecialClass {
  return { range, description: DESCRIPTIONS[range] ?? `a special-purpose address (${range})` };
}
