// The bridge: the only host functions guest code can reach. The host installs them when
// it creates a context; the guest core captures them and hands them out as
// `require("scriptbox:bridge")`. Every argument is validated again on the host side:
// guest code (ours or the script's) is never trusted by the host.
//
// Values crossing are copies: strings, numbers, booleans and ArrayBuffers. Structured
// records cross as JSON text (guest JSON.stringify + host JSON.parse is the fastest path
// measured, and it keeps lone surrogates and NULs intact).

/** The rest of a request besides its URL and body, as guest `fetch` sends it (JSON text of this shape). */
export interface TransportRequestInit {
  method: string; // normalised, never CONNECT/TRACE/TRACK
  headers: [string, string][]; // validated names and values, in order
  redirect: "follow" | "manual" | "error";
}

/** A request as the host transport takes it. */
export interface TransportRequestRecord extends TransportRequestInit {
  url: string; // absolute http: or https: URL
}

/**
 * What the host transport answers, plus the body bytes. It reaches the guest as a "head":
 * lines of status, statusText, redirected ("1" or "0"), url, then a lower-case name line
 * and a value line per header (see host/worker/bridge/fetch.ts responseHead).
 */
export interface TransportResponseRecord {
  status: number;
  statusText: string;
  headers: [string, string][]; // repeated headers (Set-Cookie) stay separate entries
  url: string; // final URL after redirects
  redirected: boolean;
}

/**
 * Why the host refused or failed a fetch (JSON text of this shape, as the rejection).
 * - "network-policy": the allow-list or a secret rule refused it; message starts "network policy: "
 * - "limit": a fetch limit (maxFetches, maxRequestBytes, maxResponseBytes, memory headroom, per-request timeout); message starts "limit: "
 * - "abort": the guest aborted it (fetchAbort) or the run ended
 * - "network": DNS, connection, TLS or protocol failure
 */
export interface TransportErrorRecord {
  type: "network-policy" | "limit" | "abort" | "network" | "timeout";
  message: string;
}

export type LogLevel = "log" | "info" | "warn" | "error" | "debug" | "trace";

export interface Bridge {
  /** One console line; the host caps it (maxLogBytes), timestamps it and streams it. */
  log(level: LogLevel, message: string): void;
  /** Asks the host to call hooks.dispatchTimer(id) after delayMs (1..2^31-1), repeatedly if `repeat`. */
  timerStart(id: number, delayMs: number, repeat: boolean, unref: boolean): void;
  timerStop(id: number): void;
  /** Evaluates guest module `name` (e.g. "http") in this context and returns its factory. */
  loadModule(name: string): unknown;
  /** The sandbox's env option as JSON text (a flat record of strings). */
  env(): string;
  /** The placeholder that stands for secret `name`; throws a TypeError for an unknown name. */
  secret(name: string): string;
  /**
   * The sandbox's `cloud` option as JSON text: { baseUrl, token, session } where token and
   * session are secret placeholders (or null), or "null" when no cloud is configured.
   */
  cloudConfig(): string;
  /**
   * UTF-8 bytes of a string given as JSON text (the guest's JSON.stringify keeps NULs and
   * lone surrogates; lone surrogates encode as U+FFFD). For large strings only: a bridge
   * call costs more than encoding a short string in the guest.
   */
  utf8Encode(json: string): ArrayBuffer;
  /**
   * Throws when the run is past a limit (CPU, wall time, a stop), as every bridge call does
   * before its work; otherwise nothing. For guest library loops that spend their time in
   * native calls, which the engine's own interrupt check (once per 10,000 calls and
   * back-edges) reaches too rarely.
   */
  checkLimits(): void;
  /** A promise's state, read by the host (for console formatting): [state, value or reason]. */
  promiseState(promise: Promise<unknown>): ["pending", undefined] | ["fulfilled", unknown] | ["rejected", unknown];

  /**
   * Starts a fetch of `url`: the script's string as is (the host parses it against the
   * location option), or a Request's serialized URL. `init` is a TransportRequestInit as
   * JSON, or null for a plain GET that follows redirects. A URL that cannot be fetched
   * throws a TypeError here; a data: URL returns its serialized form (fragment removed) for
   * the guest to answer, and nothing is started. Otherwise the host performs the request
   * and calls `onSettle(head, body)` (see TransportResponseRecord) or `onSettle(errorJson)`
   * (a TransportErrorRecord) exactly once, and returns undefined. `fetchId` is chosen by
   * the guest (unique per context) so that `fetchAbort` can cancel it. (A callback rather
   * than a promise made by the host: one engine call per answer instead of five.)
   */
  fetch(
    url: string,
    init: string | null,
    body: ArrayBuffer | null,
    fetchId: number,
    onSettle: (headOrErrorJson: string, body?: ArrayBuffer) => void,
  ): string | undefined;
  /** Cancels a fetch started with `fetch`; unknown or finished ids are ignored. */
  fetchAbort(fetchId: number): void;
  /** The sandbox's `location` option (base for relative URLs), or null when none is set. */
  location(): string | null;
  /** Fills a new ArrayBuffer of `byteLength` (at most 65,536) from the host CSPRNG. */
  randomBytes(byteLength: number): ArrayBuffer;

  /**
   * Host module `name` (one the embedder declared for this run): [membersJson, valuesJson,
   * valueBuffers]. Members are { f: number, s?: 1 } (a function), { o: {…} } (an object) or
   * { v: index } (a value; values decode with the marshal format into an array).
   */
  /** [membersJson, valuesJson, valueBuffers, maxHostCallBytes]. */
  hostModule(name: string): [string, string, ArrayBuffer[], number];
  /**
   * Calls async host function `id` with arguments encoded by marshal's serialize;
   * `onSettle(true, json, buffers)` or `onSettle(false, name, message, code)` runs once,
   * unless the run ends first.
   */
  hostCall(id: number, json: string, buffers: ArrayBuffer[] | undefined, onSettle: (ok: boolean, a: string, b: ArrayBuffer[] | string | undefined, code?: string | number) => void): void;
  /**
   * Calls synchronous host function `id`: the result's JSON text when it has no bytes,
   * else [true, json, buffers]; or [false, name, message, code] when the function threw.
   */
  hostCallSync(id: number, json: string, buffers: ArrayBuffer[] | undefined): string | [true, string, ArrayBuffer[]] | [false, string, string, (string | number)?];
  /** The digest of `data` with `hash` ("SHA-1", "SHA-256", "SHA-384" or "SHA-512"). */
  cryptoDigest(hash: string, data: ArrayBuffer): ArrayBuffer;
  /** HMAC of `data` under `key` (at most 64 KiB) with `hash` (as for cryptoDigest). */
  cryptoHmac(hash: string, key: ArrayBuffer, data: ArrayBuffer): ArrayBuffer;
  /** Milliseconds since this realm's time origin (the start of its first run or load), to 5 µs. */
  performanceNow(): number;
  /** The realm's time origin in milliseconds since the Unix epoch, to 5 µs. */
  performanceTimeOrigin(): number;
  /**
   * An Intl operation computed by the host's Intl (full ICU): `request` is JSON of
   * [constructor, locales, options, method, args]; the answer is JSON of the result.
   */
  intl(request: string): string;
}

declare const bridge: Bridge;
export default bridge;
