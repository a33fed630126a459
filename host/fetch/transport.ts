// The host side of guest fetch: one SandboxFetchTransport per sandbox, over the worker
// thread's shared undici Agent. It knows sockets, the network policy, secrets and limits;
// the guest `fetch` knows the Fetch standard. The message shape between them is
// guest-lib/types/bridge.d.ts:
//
//   in:  TransportRequestRecord { url, method, headers: [name, value][], redirect } + body bytes | null
//   out: TransportResponseRecord { status, statusText, headers: [name, value][] (Set-Cookie
//        repeated as separate pairs), url (final, after redirects), redirected } + body bytes
//   err: TransportError { type: "network-policy" | "limit" | "abort" | "timeout" | "network", message }
//
// Per fetch: refuse over maxFetches; validate the record (at most maxRequestHeaders
// fields); refuse a body over maxRequestBytes; wait for a slot (maxConcurrentFetches); then
// per hop (at most 20 redirects, followed here): check the network policy and the secret
// rules, plan the substitution and check maxRequestHeaderBytes before expanding anything,
// resolve the name once, connect to the checked address, read the body under
// maxResponseBytes and the caller's memory budget (into the caller's body target, when it
// gives one and the hop carried no secret; else into a host buffer). The secrets a hop sends are "carried"
// by the fetch from then on: what servers answer after that (the final response, and
// every redirect target they chose) is redacted for those secrets, and nothing else is
// (docs/network.md "Threat model").
import type { Dispatcher } from "undici";
import type { TransportResponseRecord } from "../../guest-lib/types/bridge.js";
import { NetworkPolicy, type CheckedTarget } from "../net/policy.js";
import type { HostResolver } from "../net/resolver.js";
import { Cancellation, untilCancelled } from "./cancellation.js";
import { exchange, type BodyLimit, type BodyTarget, type Exchange } from "./exchange.js";
import { ConcurrencyGate, resolveFetchLimits, type FetchLimits } from "./limits.js";
import { MAX_REDIRECTS, isRedirectStatus, locationUrl, redirectHop, type Hop } from "./redirect.js";
import { validateRequest, type TransportRequest } from "./requestRecord.js";
import { SecretStore, type HeaderSubstitution, type Secret, type SecretSpec } from "./secrets.js";
import { asBuffer } from "./bytes.js";
import { sharedDispatcher } from "./sharedDispatcher.js";
import { TransportError, asTransportError, limitError, networkError } from "./transportError.js";

export type { FetchLimits } from "./limits.js";
export type { BodyTarget } from "./exchange.js";
export type { SecretSpec } from "./secrets.js";
export type { TransportRequest } from "./requestRecord.js";
export { TransportError } from "./transportError.js";

export interface SandboxFetchTransportOptions {
  /** net.allow entries; empty: no network at all. */
  allow: readonly string[];
  /** Missing limits take DEFAULT_FETCH_LIMITS. */
  limits?: Partial<FetchLimits>;
  secrets?: Record<string, SecretSpec>;
  /** Name resolution (tests pass one with a fake lookup); default: the thread's shared resolver. */
  resolver?: HostResolver;
}

/** The part of AbortSignal the transport uses. */
export type AbortSignalLike = Pick<AbortSignal, "aborted"> & {
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
};

export interface TransportFetchOptions {
  /**
   * Aborting it cancels the request and destroys its socket; the fetch rejects with type
   * "abort". Any AbortSignal works; the sandbox passes a lighter CancelToken.
   */
  signal?: AbortSignalLike;
  /** Bytes the sandbox can still take in (wasm memory headroom); checked like a second maxResponseBytes. */
  responseBodyBudget?: () => number;
  /**
   * Whether a body of this many bytes fits: a cheaper question than the budget when the
   * answer is usually yes (small bodies). Default: bytes <= responseBodyBudget().
   */
  responseBodyFits?: (bytes: number) => boolean;
  /**
   * The fetch counter of the activation (run or plugin call) this fetch belongs to: the
   * sandbox passes one per activation, so concurrent plugin calls and runs each have their
   * own maxFetches budget and none resets another's. Without it the transport's own
   * counter (reset by beginRun) is used.
   */
  counter?: { fetches: number };
  /**
   * Where the final response's body may be written as it arrives, instead of a host buffer
   * (the sandbox passes blocks of the guest's heap): asked once per body that has a
   * Content-Length, no content coding, and a length the limits accepted (maxResponseBytes,
   * responseBodyFits). Never asked for a hop that carried a secret: those bodies are
   * scanned and redacted on the host (docs/network.md). null: a host buffer.
   */
  bodyTarget?: (length: number) => BodyTarget | null;
}

export interface TransportResult {
  response: TransportResponseRecord;
  /** The body bytes (possibly a view into a larger buffer: copy from byteOffset); empty when `placed` holds them. */
  body: Uint8Array;
  /** The body, written whole into a target from options.bodyTarget; the caller owns it now (release or use it). */
  placed: BodyTarget | null;
}

const CONNECT_FAILURES = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT", "UND_ERR_CONNECT_TIMEOUT"]);
const NO_BUDGET = () => Infinity;

export class SandboxFetchTransport {
  readonly stats = { fetches: 0 };
  readonly limits: Readonly<FetchLimits>;
  readonly #policy: NetworkPolicy;
  readonly #secrets: SecretStore;
  /** The worker's shared Agent unless one was given; taken at the first fetch (undici loads then). */
  readonly #dispatcher: Dispatcher | null;
  readonly #gate: ConcurrencyGate;
  readonly #inFlight = new Set<Cancellation>();
  readonly #runCounter = { fetches: 0 };

  constructor(options: SandboxFetchTransportOptions, dispatcher: Dispatcher | null = null) {
    this.#policy = new NetworkPolicy(options.allow, options.resolver);
    this.limits = Object.freeze(resolveFetchLimits(options.limits));
    this.#secrets = new SecretStore(options.secrets ?? {});
    this.#dispatcher = dispatcher;
    this.#gate = new ConcurrencyGate(this.limits.maxConcurrentFetches);
  }

  /** Starts a run (or plugin call): maxFetches and stats.fetches count from zero again. */
  beginRun(): void {
    this.#runCounter.fetches = 0;
    this.stats.fetches = 0;
  }

  /** The longest secret name this sandbox has (see SecretStore.longestName). */
  longestSecretName(): number {
    return this.#secrets.longestName;
  }

  /** What the guest's secret(name) returns; throws a TypeError for an unknown name. */
  secretPlaceholder(name: string): string {
    return this.#secrets.placeholder(name);
  }

  /** Cancels every fetch in flight or waiting for a slot (the run ended); they reject with type "abort". */
  abortAll(message = "fetch aborted: the run ended"): void {
    for (const cancellation of [...this.#inFlight]) cancellation.cancel(new TransportError("abort", message));
  }

  async fetch(request: TransportRequest, options: TransportFetchOptions = {}): Promise<TransportResult> {
    const { signal, responseBodyBudget = NO_BUDGET } = options;
    const responseBodyFits = options.responseBodyFits ?? ((bytes: number) => bytes <= responseBodyBudget());
    const cancellation = new Cancellation();
    const onAbort = () => cancellation.cancel(new TransportError("abort", "fetch aborted"));
    let timer: NodeJS.Timeout | undefined;
    let holdsSlot = false;
    try {
      const counter = options.counter ?? this.#runCounter;
      if (counter.fetches >= this.limits.maxFetches) {
        throw limitError(`maxFetches (${this.limits.maxFetches}) reached: no more fetches in this run`);
      }
      counter.fetches++;
      this.stats.fetches++;
      const { hop, redirect } = validateRequest(request, this.limits.maxRequestHeaders);
      const bodyBytes = hop.body?.byteLength ?? 0;
      if (bodyBytes > this.limits.maxRequestBytes) {
        throw limitError(`maxRequestBytes (${this.limits.maxRequestBytes} bytes) exceeded: the request body is ${bodyBytes} bytes`);
      }
      if (signal?.aborted) onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#inFlight.add(cancellation);

      const wait = this.#gate.acquire(cancellation);
      if (wait) await wait;
      holdsSlot = true;
      if (cancellation.reason) throw cancellation.reason;
      const timeoutMs = this.limits.requestTimeoutMs;
      if (Number.isFinite(timeoutMs)) {
        timer = setTimeout(
          () => cancellation.cancel(new TransportError("timeout", `limit: fetchTimeoutMs (${timeoutMs} ms) exceeded`)),
          timeoutMs,
        );
      }
      return await this.#follow(hop, redirect, cancellation, this.#bodyLimit(responseBodyBudget, responseBodyFits), options.bodyTarget ?? null);
    } catch (error) {
      // Never redacted as a whole: a message may quote what the guest built, and redacting
      // that would tell the guest whether it equals a secret. Server text that may echo a
      // secret was redacted where it entered the message (#follow, #send).
      throw asTransportError(error);
    } finally {
      clearTimeout(timer);
      if (holdsSlot) this.#gate.release();
      signal?.removeEventListener("abort", onAbort);
      this.#inFlight.delete(cancellation);
    }
  }

  async #follow(
    first: Hop,
    mode: "follow" | "manual" | "error",
    cancellation: Cancellation,
    limit: BodyLimit,
    bodyTarget: ((length: number) => BodyTarget | null) | null,
  ): Promise<TransportResult> {
    let hop = first;
    const carried = new Set<Secret>();
    // The hop's URL was chosen by a server that had been sent a secret (a redirect after a hop that carried one).
    let serverChosen = false;
    // Which bodies are worth reading: not those of redirects about to be followed or refused.
    const wantsBody = (status: number, headers: readonly [string, string][]) =>
      !isRedirectStatus(status) || mode === "manual" || (mode === "follow" && !headers.some(([n]) => n.toLowerCase() === "location"));
    for (let redirects = 0; ; redirects++) {
      const result = await this.#send(hop, carried, serverChosen, cancellation, limit, wantsBody, bodyTarget);
      if (isRedirectStatus(result.status) && mode !== "manual") {
        // Fetch 4.3 "HTTP fetch" step 9 (mode "error"), 4.4 "HTTP-redirect fetch" (mode "follow").
        // (wantsBody leaves the bodies of these responses unread, so nothing was placed.)
        if (mode === "error") {
          result.placed?.release();
          throw networkError(`the server redirected (${result.status}) and the request's redirect mode is "error"`);
        }
        const location = locationUrl(result.headers, hop.url, (text) => this.#secrets.redactText(text, carried));
        if (location) {
          result.placed?.release();
          if (redirects === MAX_REDIRECTS) throw networkError(`too many redirects (more than ${MAX_REDIRECTS})`);
          // The Location as the server wrote it, before the URL parser changed it (a host
          // lower-cased or IDNA-encoded, a value split between host and path, tabs dropped):
          // a carried value in it may only lead to an origin the secret is bound to.
          if (carried.size > 0) this.#secrets.checkRedirectLocation(location.text, location.url.origin, carried);
          hop = redirectHop(hop, result.status, location.url);
          serverChosen = carried.size > 0;
          continue;
        }
      }
      return await this.#respond(result, hop.url, redirects > 0, carried, serverChosen, limit, cancellation);
    }
  }

  /**
   * One hop: policy, secrets, header limits, then the exchange with the checked address (the
   * next one if a connection fails). Adds the secrets it sends to `carried`.
   */
  async #send(
    hop: Hop,
    carried: Set<Secret>,
    serverChosen: boolean,
    cancellation: Cancellation,
    limit: BodyLimit,
    wantsBody: (status: number, headers: readonly [string, string][]) => boolean,
    bodyTarget: ((length: number) => BodyTarget | null) | null,
  ): Promise<Exchange> {
    const url = hop.url;
    const secrets = this.#secrets;
    // Messages about a URL a server chose after it was sent a secret show that URL redacted;
    // everything in them comes from that URL. A URL the guest built is shown as it is.
    const told = serverChosen ? (error: unknown) => retold(error, (text) => secrets.redactText(text, carried)) : (error: unknown) => error;
    try {
      this.#policy.target(url); // scheme and host refusals come before secret refusals
    } catch (error) {
      throw told(error);
    }
    let plan: HeaderSubstitution | null = null;
    if (secrets.size > 0) {
      secrets.checkUrl(url.href);
      if (serverChosen) secrets.checkRedirectUrl(url.href, url.origin, carried);
      secrets.checkMethod(hop.method);
      plan = secrets.substitution(hop.headers, url.origin, serverChosen ? secrets.redactText(url.origin, carried) : url.origin);
      if (hop.body) secrets.checkBody(hop.body);
    }
    let target: CheckedTarget;
    try {
      // An IP-literal host needs no DNS: checked at once, without a turn of the event loop.
      target = this.#policy.checkWithoutDns(url) ?? (await untilCancelled(this.#policy.check(url), cancellation));
    } catch (error) {
      throw told(error);
    }
    // The size the header section will have, secrets substituted, before anything is expanded.
    const max = this.limits.maxRequestHeaderBytes;
    if ((plan ? plan.bytes : fieldBytes(hop.headers)) + transportFieldBytes(target, hop.headers) > max) {
      // The total is not shown: with secrets in it, it would tell their lengths in one try.
      throw limitError(`maxRequestHeaderBytes (${max} bytes) exceeded: the request's header fields, with secrets substituted, are larger`);
    }
    // A hop that sends a secret asks for the body uncompressed, whatever the script asked:
    // see ExchangeRequest.identityOnly. So does a hop, after one that carried a secret, to
    // an origin that secret is bound to: a redirect there may carry the value in its URL
    // (found by review: A redirects to https://B/cb?token=<value>, B echoes and gzips).
    const sendsSecret = (plan !== null && plan.carried.length > 0) || mayCarryInUrl(carried, url.origin);
    const headers = withoutCompression(plan ? plan.apply() : hop.headers, sendsSecret);
    if (plan) for (const secret of plan.carried) carried.add(secret);
    const request = {
      origin: "",
      path: url.pathname + url.search,
      method: hop.method,
      headers: wireHeaders(target, headers),
      body: hop.body ? asBuffer(hop.body) : null,
      strictCodings: carried.size > 0,
      identityOnly: sendsSecret,
      wantsBody,
      // A hop that carried a secret keeps its body on the host, where #respond redacts it.
      bodyTarget: carried.size > 0 ? null : bodyTarget,
    };
    const last = target.addresses.length - 1;
    for (let i = 0; ; i++) {
      request.origin = ipOrigin(target, i);
      try {
        return await exchange(this.#dispatcher ?? sharedDispatcher(), request, cancellation, limit);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (i === last || cancellation.reason || typeof code !== "string" || !CONNECT_FAILURES.has(code)) throw error;
      }
    }
  }

  /** The response as the guest gets it: what servers said after a secret was sent to them, redacted for it. */
  async #respond(result: Exchange, url: URL, redirected: boolean, carried: ReadonlySet<Secret>, serverChosen: boolean, limit: BodyLimit, cancellation: Cancellation): Promise<TransportResult> {
    const secrets = this.#secrets;
    if (carried.size === 0) {
      return {
        response: { status: result.status, statusText: result.statusText, headers: result.headers, url: url.href, redirected },
        body: result.body,
        placed: result.placed,
      };
    }
    if (result.placed) {
      // Never the case (#send gives no target to a hop that carried a secret); the body
      // could not be redacted there, so it is not handed over.
      result.placed.release();
      throw networkError("internal: a body that must be redacted was placed outside the host");
    }
    // In slices, the worker's event loop served between them (other sandboxes share it).
    const body = await secrets.redactBytesInSlices(result.body, carried, async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (cancellation.reason) throw cancellation.reason;
    });
    if (body.byteLength > result.body.byteLength) {
      const refusal = limit(body.byteLength, false);
      if (refusal) throw refusal;
    }
    return {
      response: {
        status: result.status,
        // undici decodes the reason phrase as UTF-8: U+FFFD may hide bytes of the value.
        statusText: secrets.redactText(result.statusText, carried, true),
        headers: result.headers.map(([name, value]) => [secrets.redactHeader(name, carried), secrets.redactHeader(value, carried)]),
        // A URL the guest built is its own; one a server chose is redacted.
        url: serverChosen ? secrets.redactText(url.href, carried) : url.href,
        redirected,
      },
      body,
      placed: null,
    };
  }

  #bodyLimit(budget: () => number, fits: (bytes: number) => boolean): BodyLimit {
    const max = this.limits.maxResponseBytes;
    // The headroom is asked about once per new size: after Content-Length fitted, the chunks
    // up to it are not asked about again. (The bridge checks again before moving the body
    // in, in case the guest took memory meanwhile.)
    let fitted = 0;
    return (bytes, declared) => {
      const detail = declared ? `: Content-Length is ${bytes}` : " while reading the response body";
      if (bytes > max) return limitError(`maxResponseBytes (${max} bytes) exceeded${detail}`);
      if (bytes <= fitted) return null;
      if (!fits(bytes)) {
        const room = budget();
        return limitError(`memoryBytes: the response body does not fit in the sandbox's free memory (${Math.max(0, Math.floor(room))} bytes)${detail}`);
      }
      fitted = bytes;
      return null;
    };
  }
}

function ipOrigin(target: CheckedTarget, index: number): string {
  const address = target.addresses[index]!;
  const host = address.family === 6 ? `[${address.address}]` : address.address;
  return `${target.scheme}//${host}:${target.port}`;
}

const DEFAULT_HEADERS: [string, string][] = [
  ["accept", "*/*"], // Fetch 4.1 "main fetch": Accept defaults to */*
  ["user-agent", "scriptbox"],
  ["accept-encoding", "gzip, deflate, br"], // decoded by contentDecoding.ts
];

/** Whether a secret carried on an earlier hop is bound to `origin` (a server-chosen URL there may hold its value). */
function mayCarryInUrl(carried: ReadonlySet<Secret>, origin: string): boolean {
  for (const secret of carried) if (secret.origins.has(origin)) return true;
  return false;
}

/** The headers with Accept-Encoding replaced by `identity` when `identityOnly` (a hop that sends a secret). */
function withoutCompression(headers: [string, string][], identityOnly: boolean): [string, string][] {
  if (!identityOnly) return headers;
  const kept = headers.filter(([name]) => name.length !== 15 || name.toLowerCase() !== "accept-encoding");
  kept.push(["accept-encoding", "identity"]);
  return kept;
}

/** Host first (undici takes the TLS servername from it), the request's headers, then defaults it lacks. */
function wireHeaders(target: CheckedTarget, headers: readonly [string, string][]): string[] {
  const flat: string[] = ["host", target.hostHeader];
  for (const [name, value] of headers) flat.push(name, value);
  const has = defaultsPresent(headers);
  for (let d = 0; d < DEFAULT_HEADERS.length; d++) if (!(has & (1 << d))) flat.push(DEFAULT_HEADERS[d]![0], DEFAULT_HEADERS[d]![1]);
  return flat;
}

/** Bit d set: the request has DEFAULT_HEADERS[d] already. */
function defaultsPresent(headers: readonly [string, string][]): number {
  let has = 0;
  for (const [name] of headers) {
    const lower = name.length >= 6 && name.length <= 15 ? name.toLowerCase() : "";
    for (let d = 0; d < DEFAULT_HEADERS.length; d++) if (lower === DEFAULT_HEADERS[d]![0]) has |= 1 << d;
  }
  return has;
}

/** "name: value\r\n" bytes of a header list as it is (no secrets in it). */
function fieldBytes(headers: readonly [string, string][]): number {
  let bytes = 0;
  for (const [name, value] of headers) bytes += name.length + value.length + 4;
  return bytes;
}

/** The bytes of the fields the transport adds: Host, and the defaults the request lacks. */
function transportFieldBytes(target: CheckedTarget, headers: readonly [string, string][]): number {
  let bytes = 4 + 4 + target.hostHeader.length;
  const has = defaultsPresent(headers);
  for (let d = 0; d < DEFAULT_HEADERS.length; d++) if (!(has & (1 << d))) bytes += DEFAULT_HEADERS[d]![0].length + DEFAULT_HEADERS[d]![1].length + 4;
  return bytes;
}

/** The same error with its message passed through `redact` (for messages about a URL a server chose). */
function retold(error: unknown, redact: (text: string) => string): unknown {
  const failure = asTransportError(error);
  const message = redact(failure.message);
  return message === failure.message ? failure : new TransportError(failure.type, message, { cause: error });
}
