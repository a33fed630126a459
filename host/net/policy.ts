// The deny-by-default network policy of one sandbox. A request hop is allowed when
//   1. its scheme is http: or https:,
//   2. an entry of net.allow matches its host and port (allowEntry.ts), and
//   3. every address it will connect to is public unicast, or is named by an entry: the
//      entry is that IP literal, or the host is `localhost`/`*.localhost` named exactly.
// Host names are resolved here, once; the caller must connect to one of the returned
// addresses (never to the name again), so what was checked is what is reached.
import {
  parseAllowEntry,
  entryMatchesHost,
  entryNamesAddress,
  defaultPort,
  isLocalhostName,
  type AllowEntry,
  type RequestTarget,
} from "./allowEntry.js";
import { parseIpLiteral, type CanonicalAddress } from "./addressClass.js";
import { sharedResolver, type HostResolver } from "./resolver.js";

export class NetworkPolicyError extends Error {
  readonly type = "network-policy" as const;
  /** `message` is the whole message already (a remembered refusal), not the detail. */
  constructor(detail: string, whole = false) {
    super(whole ? detail : `network policy: ${detail}`);
    this.name = "NetworkPolicyError";
  }
}

/** DNS failed for an allowed host: a network error, not a policy refusal. */
export class HostResolutionError extends Error {
  readonly type = "network" as const;
  readonly code: string | undefined;
  constructor(hostname: string, cause: unknown) {
    const code = (cause as { code?: string } | null)?.code;
    super(`fetch failed: cannot resolve ${hostname}${code ? ` (${code})` : ""}`, { cause });
    this.name = "HostResolutionError";
    this.code = code;
  }
}

/** An allowed hop: where to connect and what to call the host on the wire. */
export interface CheckedTarget extends RequestTarget {
  /** Host header value: the URL's host, with the port only when it is not the default. */
  hostHeader: string;
  /** The addresses the policy allowed, in connection order; never empty. */
  addresses: CanonicalAddress[];
}

/** How many host decisions a policy remembers (a script fetching from more hosts re-checks). */
const DECISION_CACHE_SIZE = 256;

export class NetworkPolicy {
  readonly entries: readonly AllowEntry[];
  readonly #resolver: HostResolver;
  // The synchronous decision depends only on scheme, host and port, and the entries never
  // change: remember it (allowed target or refusal message). Parsing and classifying an IP
  // literal cost ~15 µs per request, a tenth of a small fetch's host time.
  readonly #decisions = new Map<string, Readonly<RequestTarget> | string>();

  constructor(allow: readonly string[], resolver: HostResolver = sharedResolver()) {
    if (!Array.isArray(allow)) throw new TypeError("net.allow must be an array of strings");
    this.entries = allow.map(parseAllowEntry);
    this.#resolver = resolver;
  }

  /** The synchronous part of the check: scheme and host. Throws NetworkPolicyError. */
  target(url: URL): Readonly<RequestTarget> {
    const key = `${url.protocol}//${url.hostname}:${url.port}`;
    let decision = this.#decisions.get(key);
    if (decision === undefined) {
      try {
        decision = Object.freeze(this.#decide(url));
      } catch (error) {
        if (!(error instanceof NetworkPolicyError)) throw error;
        decision = error.message;
      }
      if (this.#decisions.size >= DECISION_CACHE_SIZE) this.#decisions.clear();
      this.#decisions.set(key, decision);
    }
    if (typeof decision === "string") throw new NetworkPolicyError(decision, true);
    return decision;
  }

  #decide(url: URL): RequestTarget {
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new NetworkPolicyError(`the ${JSON.stringify(url.protocol)} scheme is not allowed; only http: and https: URLs can be fetched`);
    }
    const scheme = url.protocol;
    const port = url.port === "" ? defaultPort(scheme) : Number(url.port);
    const raw = url.hostname;
    const ip = parseIpLiteral(raw);
    const hostname = ip ? ip.address : raw.endsWith(".") ? raw.slice(0, -1) : raw;
    const target: RequestTarget = { scheme, hostname, port, ip };
    if (ip?.special) {
      if (!this.entries.some((e) => entryNamesAddress(e, target, ip))) {
        const bare = raw.startsWith("[") ? raw.slice(1, -1) : raw;
        const where = hostPort(bare, port) + (bare === ip.address ? "" : ` (${ip.address})`);
        throw new NetworkPolicyError(`${where} is ${ip.special.description}; add ${JSON.stringify(suggestion(target))} to net.allow`);
      }
      return target;
    }
    if (!this.entries.some((e) => entryMatchesHost(e, target))) {
      const where = hostPort(hostname, port);
      const hint = this.entries.length === 0 ? " (net.allow is empty: no network access)" : "";
      throw new NetworkPolicyError(`${where} is not in net.allow${hint}; add ${JSON.stringify(suggestion(target))} to net.allow`);
    }
    return target;
  }

  /**
   * The full check when it needs no DNS, synchronously: the checked target of an IP-literal
   * host, or null for a name (use check()). Throws NetworkPolicyError.
   */
  checkWithoutDns(url: URL): CheckedTarget | null {
    return literalTarget(this.target(url), url);
  }

  /** The full check: scheme, host, then the resolved addresses. */
  async check(url: URL): Promise<CheckedTarget> {
    const target = this.target(url);
    const literal = literalTarget(target, url);
    if (literal) return literal;
    const hostHeader = url.host;

    let resolved: CanonicalAddress[];
    try {
      resolved = await this.#resolver.resolve(target.hostname);
    } catch (error) {
      throw new HostResolutionError(target.hostname, error);
    }
    const addresses = resolved.filter((a) => a.special === null || this.entries.some((e) => entryNamesAddress(e, target, a)));
    if (addresses.length === 0) {
      const first = resolved[0]!;
      const where = hostPort(target.hostname, target.port);
      const advice = isLocalhostName(target.hostname)
        ? suggestion(target)
        : suggestion({ ...target, hostname: first.address, ip: first });
      throw new NetworkPolicyError(
        `${where} resolves to ${first.address}, ${first.special!.description}; add ${JSON.stringify(advice)} to net.allow`,
      );
    }
    return { ...target, hostHeader, addresses };
  }
}

/** An IP-literal target is checked as it is: its address is the one to connect to. */
function literalTarget(target: Readonly<RequestTarget>, url: URL): CheckedTarget | null {
  return target.ip ? { ...target, hostHeader: url.host, addresses: [target.ip] } : null;
}

function hostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

// The entry to suggest: host:port, or the bare host when the port is the scheme's default.
function suggestion(target: RequestTarget): string {
  const host = target.ip?.family === 6 ? `[${target.hostname}]` : target.hostname;
  return target.port === defaultPort(target.scheme) && !target.ip ? host : `${host}:${target.port}`;
}
