// Resolves host names for the network policy. The policy checks every address this returns
// and the transport connects to one of the checked addresses, never to the name, so a
// cached answer cannot open a DNS-rebinding window: it only decides which addresses are
// candidates. `localhost` and `*.localhost` are loopback without asking DNS (RFC 6761 6.3,
// as browsers do).
import { lookup as dnsLookup } from "node:dns/promises";
import { isLocalhostName } from "./allowEntry.js";
import { parseIpLiteral, type CanonicalAddress } from "./addressClass.js";

/** Returns the addresses of a host name, in the order to try them. */
export type LookupFunction = (hostname: string) => Promise<string[]>;

export interface HostResolverOptions {
  lookup?: LookupFunction;
  /** How long an answer is reused. Default 5 s. */
  ttlMs?: number;
  maxEntries?: number;
}

const LOCALHOST_ADDRESSES = ["127.0.0.1", "::1"];

export const systemLookup: LookupFunction = async (hostname) => {
  const results = await dnsLookup(hostname, { all: true, verbatim: true });
  return results.map((r) => r.address);
};

export class HostResolver {
  readonly #lookup: LookupFunction;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #cache = new Map<string, { expires: number; addresses: Promise<CanonicalAddress[]> }>();

  constructor(options: HostResolverOptions = {}) {
    this.#lookup = options.lookup ?? systemLookup;
    this.#ttlMs = options.ttlMs ?? 5_000;
    this.#maxEntries = options.maxEntries ?? 512;
  }

  /** Resolves a host name (never an IP literal) to canonical addresses; rejects with the DNS error. */
  resolve(hostname: string): Promise<CanonicalAddress[]> {
    if (isLocalhostName(hostname)) return Promise.resolve(LOCALHOST_ADDRESSES.map((a) => parseIpLiteral(a)!));
    const now = Date.now();
    const hit = this.#cache.get(hostname);
    if (hit && hit.expires > now) return hit.addresses;
    const addresses = this.#lookup(hostname).then((list) => {
      const parsed = list.map((a) => parseIpLiteral(a)).filter((a): a is CanonicalAddress => a !== null);
      if (parsed.length === 0) throw Object.assign(new Error(`no addresses for ${hostname}`), { code: "ENOTFOUND" });
      return parsed;
    });
    if (this.#cache.size >= this.#maxEntries) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(hostname, { expires: now + this.#ttlMs, addresses });
    addresses.catch(() => {
      if (this.#cache.get(hostname)?.addresses === addresses) this.#cache.delete(hostname);
    });
    return addresses;
  }
}

let shared: HostResolver | undefined;

/** One resolver (and cache) per worker thread, shared by its sandboxes. */
export function sharedResolver(): HostResolver {
  shared ??= new HostResolver();
  return shared;
}
