// Secrets that never enter the sandbox. The guest gets a placeholder per secret,
//   scriptbox-secret.<NAME>.<nonce>
// (only [A-Za-z0-9_.-], so it survives URL and form encoding unchanged; <nonce> is random
// per transport, so a placeholder from one sandbox means nothing to another).
//
// No oracle: what the guest builds (URL, method, header names and values, body) is only
// ever compared with placeholders, never with a secret's value, so no outcome the guest
// can see depends on whether its data happens to equal a value. On each hop the transport:
//   - substitutes a placeholder in a header VALUE with the secret, only when the hop's
//     origin is one of that secret's origins, after checking the header limits against
//     the size the headers will have (nothing is expanded before that);
//   - refuses the whole request (a "network policy: " error naming the secret) when a
//     placeholder appears anywhere else: a header to another origin, a header name, the
//     URL (also percent-decoded), the method, the body bytes.
// Redaction is confined to what servers said in answer to requests that carried a secret
// (the secrets "carried" by a fetch): the final response's status text, headers and body,
// its URL when a redirect set it, the Location of a redirect and what is derived from it.
// There every form of the value echoScanner.ts knows is replaced by the placeholder. A
// redirect URL built by such a server that carries a carried secret's value to an origin
// not listed for it is refused.
import { randomBytes } from "node:crypto";
import { NetworkPolicyError } from "../net/policy.js";
import { asBuffer, concatOwned } from "./bytes.js";
import { echoPatterns } from "./echoForms.js";

/** How much of an unknown secret name an error message quotes. */
const MAX_QUOTED_NAME = 64;
/** Start positions scanned between two turns of the event loop (redactBytesInSlices): ~15 ms at the slowest text seen. */
const SCAN_SLICE_BYTES = 32 * 1024;
import { PatternSet, findEchoes, mergeSpans, type ScanSource, type Span } from "./echoScanner.js";

export interface SecretSpec {
  value: string;
  /** Origins ("https://api.example.com", "http://127.0.0.1:8787") the secret may be sent to. */
  origins: string[];
  /** The embedder accepts a short or low-entropy value (secretStrength.ts); the store ignores it. */
  weak?: boolean;
}

export const PLACEHOLDER_PREFIX = "scriptbox-secret.";
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// A header field value as the transport sends it: tab, printable ASCII, obs-text bytes.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

/** One configured secret. Opaque outside this module but for its name. */
export interface Secret {
  readonly name: string;
  readonly value: string;
  readonly placeholder: string;
  readonly placeholderLower: string;
  readonly placeholderBytes: Buffer;
  readonly origins: ReadonlySet<string>;
  /** The forms of the value redaction looks for. */
  readonly patterns: PatternSet;
}

/** The secrets a fetch has sent so far: what its responses are scanned for. */
export type CarriedSecrets = ReadonlySet<Secret>;

/** A hop's header list with placeholders planned for substitution, measured before anything is expanded. */
export interface HeaderSubstitution {
  /** Field lines as they will go on the wire ("name: value\r\n" each), in bytes. */
  readonly bytes: number;
  /** The secrets the hop will carry. */
  readonly carried: readonly Secret[];
  /** The substituted header list (only now are values expanded). */
  apply(): [string, string][];
}

export class SecretStore {
  readonly #secrets: Secret[] = [];
  readonly #byName = new Map<string, Secret>();
  readonly #prefixBytes = Buffer.from(PLACEHOLDER_PREFIX, "latin1");

  constructor(secrets: Record<string, SecretSpec> = {}, nonce: string = randomBytes(16).toString("base64url")) {
    if (secrets === null || typeof secrets !== "object") throw new TypeError("secrets must be an object");
    for (const [name, spec] of Object.entries(secrets)) {
      const secret = validate(name, spec, nonce);
      this.#secrets.push(secret);
      this.#byName.set(name, secret);
    }
  }

  get size(): number {
    return this.#secrets.length;
  }

  /** The longest secret name (0 without secrets): a longer one names none, unread. */
  get longestName(): number {
    let longest = 0;
    for (const name of this.#byName.keys()) longest = Math.max(longest, name.length);
    return longest;
  }

  /** What the guest's secret(name) returns. Throws a TypeError for unknown names. */
  placeholder(name: string): string {
    const secret = this.#byName.get(name);
    // A name quoted whole made the message, and the scan of guest-bound messages for secret
    // echoes, as large as the name: quote a prefix.
    if (!secret) throw new TypeError(`secret(${JSON.stringify(String(name).slice(0, MAX_QUOTED_NAME))}${name.length > MAX_QUOTED_NAME ? "…" : ""}): no such secret`);
    return secret.placeholder;
  }

  /**
   * Plans the header list for one hop to `origin`: which placeholders are substituted, and
   * the size of the result, without expanding anything. Throws NetworkPolicyError for a
   * placeholder in a header name or going to an origin its secret does not list.
   * `shownOrigin` is how a message names the origin (redacted when a server chose it).
   */
  substitution(headers: readonly [string, string][], origin: string, shownOrigin: string = origin): HeaderSubstitution {
    let bytes = 0;
    const carried = new Set<Secret>();
    const touched: number[] = [];
    for (let i = 0; i < headers.length; i++) {
      const [name, value] = headers[i]!;
      let length = value.length;
      if (name.length >= PLACEHOLDER_PREFIX.length && name.toLowerCase().includes(PLACEHOLDER_PREFIX)) {
        // Header names are case-insensitive and the guest's Headers lower-cases them.
        const lower = name.toLowerCase();
        const secret = this.#secrets.find((s) => lower.includes(s.placeholderLower));
        if (secret) throw refusal(secret, "its placeholder is in a header name; secrets are only substituted in header values");
      }
      if (value.includes(PLACEHOLDER_PREFIX)) {
        for (const secret of this.#secrets) {
          const count = occurrences(value, secret.placeholder);
          if (count === 0) continue;
          if (!secret.origins.has(origin)) {
            throw refusal(secret, `it may only be sent to ${listOrigins(secret)}, not to ${shownOrigin} (header ${JSON.stringify(name.toLowerCase())})`);
          }
          carried.add(secret);
          length += count * (secret.value.length - secret.placeholder.length);
        }
        if (length !== value.length || carried.size > 0) touched.push(i);
      }
      bytes += name.length + 2 + length + 2;
    }
    const secrets = [...carried];
    return {
      bytes,
      carried: [...carried],
      apply(): [string, string][] {
        if (touched.length === 0) return headers as [string, string][];
        const out = headers.slice() as [string, string][];
        for (const i of touched) out[i] = [out[i]![0], substitute(out[i]![1], secrets)];
        return out;
      },
    };
  }

  /**
   * Refuses a URL that carries a placeholder: as written, percent-decoded (repeatedly), in
   * any letter case (URL hosts are lower-cased). Compares with placeholders only.
   */
  checkUrl(url: string): void {
    if (this.#secrets.length === 0) return;
    let text = url;
    for (let round = 0; round < 4; round++) {
      const lower = text.toLowerCase();
      if (lower.includes(PLACEHOLDER_PREFIX)) {
        const secret = this.#secrets.find((s) => lower.includes(s.placeholderLower));
        if (secret) throw refusal(secret, "its placeholder is in the URL; secrets are only substituted in request header values");
      }
      const decoded = percentDecode(text);
      if (decoded === text) return;
      text = decoded;
    }
  }

  /**
   * A redirect target a server chose after it was sent `carried` secrets: refused when it
   * carries one of their values (in any form the scanner knows) to an origin not listed for
   * it. Never called with a URL the guest built.
   */
  checkRedirectUrl(url: string, origin: string, carried: CarriedSecrets): void {
    for (const secret of carried) {
      if (secret.origins.has(origin)) continue;
      if (this.#find(textSource(url), [secret]).length > 0) {
        throw refusal(secret, `the URL of a request to ${this.redactText(origin, carried)} carries its value; it may only be sent to ${listOrigins(secret)}`);
      }
    }
  }

  /**
   * Refuses a redirect whose Location text, as the server sent it (tabs and newlines taken
   * out, as the URL parser does before reading it), carries a carried secret's value and
   * leads to an origin the secret is not bound to. The message names nothing the server
   * chose: the origin the parser made of that text may hold the value in another form.
   */
  checkRedirectLocation(location: string, origin: string, carried: CarriedSecrets): void {
    const text = location.replace(/[\t\n\r]/g, "");
    for (const secret of carried) {
      if (secret.origins.has(origin)) continue;
      if (this.#find(textSource(text), [secret]).length > 0) {
        throw refusal(secret, `a redirect's Location carries its value; it may only be sent to ${listOrigins(secret)}`);
      }
    }
  }

  /** Refuses a method that is a placeholder (placeholders are valid HTTP tokens). */
  checkMethod(method: string): void {
    if (this.#secrets.length === 0 || !method.toLowerCase().includes(PLACEHOLDER_PREFIX)) return;
    const lower = method.toLowerCase();
    const secret = this.#secrets.find((s) => lower.includes(s.placeholderLower));
    if (secret) throw refusal(secret, "its placeholder is the request method");
  }

  /** Refuses a request body that carries a placeholder. */
  checkBody(body: Uint8Array): void {
    const bytes = asBuffer(body);
    if (bytes.indexOf(this.#prefixBytes) < 0) return;
    for (const secret of this.#secrets) {
      if (bytes.indexOf(secret.placeholder, 0, "latin1") >= 0) {
        throw refusal(secret, "its placeholder is in the request body; secrets are only substituted in request header values");
      }
    }
  }

  /** A JS string a server sent (status text, a URL it chose, a message quoting it), with the carried secrets' echoes replaced. */
  redactText(text: string, carried: CarriedSecrets, lossy = false): string {
    if (carried.size === 0 || text.length === 0) return text;
    const spans = this.#find(textSource(text, lossy), [...carried]);
    if (spans.length === 0) return text;
    let out = "";
    let from = 0;
    for (const span of spans) {
      out += text.slice(from, span.start) + span.secret.placeholder;
      from = span.end;
    }
    return out + text.slice(from);
  }

  /** A header name or value as read off the wire (one char per byte). */
  redactHeader(text: string, carried: CarriedSecrets): string {
    if (carried.size === 0 || text.length === 0) return text;
    const bytes = Buffer.from(text, "latin1");
    const redacted = this.redactBytes(bytes, carried);
    return redacted === bytes ? text : Buffer.from(redacted.buffer, redacted.byteOffset, redacted.byteLength).toString("latin1");
  }

  /** The bytes with the carried secrets' echoes replaced by placeholders; the same array when nothing matched. */
  redactBytes(body: Uint8Array, carried: CarriedSecrets): Uint8Array {
    if (carried.size === 0 || body.byteLength === 0) return body;
    const bytes = asBuffer(body);
    return this.#replaced(body, bytes, this.#find({ codes: bytes, lossy: false }, [...carried]));
  }

  /** `body` (whose bytes are `bytes`) with the spans replaced by their secrets' placeholders; `body` itself when there are none. */
  #replaced(body: Uint8Array, bytes: Buffer, spans: { start: number; end: number; secret: Secret }[]): Uint8Array {
    if (spans.length === 0) return body;
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const span of spans) {
      parts.push(bytes.subarray(from, span.start), span.secret.placeholderBytes);
      from = span.end;
    }
    parts.push(bytes.subarray(from));
    return concatOwned(parts, parts.reduce((n, p) => n + p.byteLength, 0));
  }

  /**
   * redactBytes for a body of any size, scanned in slices of SCAN_SLICE_BYTES start
   * positions with `between()` awaited after each (the transport yields to the worker's
   * event loop there, and throws if the fetch was cancelled meanwhile). A scan costs up to
   * ~0.5 µs per byte on text built to be slow (a body of escapes a script made a bound
   * origin echo); in one go, a 16 MiB body held the worker thread, and every other sandbox
   * on it, for seconds (found by review). Sliced, the run that fetched waits for its own
   * scan and the others get the thread between slices.
   */
  async redactBytesInSlices(body: Uint8Array, carried: CarriedSecrets, between: () => Promise<void>): Promise<Uint8Array> {
    if (carried.size === 0 || body.byteLength === 0) return body;
    if (body.byteLength <= SCAN_SLICE_BYTES) return this.redactBytes(body, carried);
    const bytes = asBuffer(body);
    const source: ScanSource = { codes: bytes, lossy: false };
    const secrets = [...carried];
    const found: Span[] = [];
    for (let from = 0; from < bytes.length; from += SCAN_SLICE_BYTES) {
      const to = Math.min(bytes.length, from + SCAN_SLICE_BYTES);
      secrets.forEach((secret, tag) => {
        for (const span of findEchoes(source, secret.patterns, tag, from, to)) found.push(span);
      });
      if (to < bytes.length) await between();
    }
    return this.#replaced(body, bytes, mergeSpans(found).map((span) => ({ start: span.start, end: span.end, secret: secrets[span.tag]! })));
  }

  /** Every echo of the given secrets, overlapping ones merged, left to right. */
  #find(source: ScanSource, secrets: readonly Secret[]): { start: number; end: number; secret: Secret }[] {
    const spans = secrets.flatMap((secret, tag) => findEchoes(source, secret.patterns, tag));
    return mergeSpans(spans).map((span) => ({ start: span.start, end: span.end, secret: secrets[span.tag]! }));
  }
}

function textSource(text: string, lossy = false): ScanSource {
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i);
  return { codes, lossy };
}

/** One left-to-right pass: placeholders never overlap (names and nonces have no "."), and a value is never rescanned. */
function substitute(text: string, secrets: readonly Secret[]): string {
  let out = "";
  let from = 0;
  for (let at = text.indexOf(PLACEHOLDER_PREFIX); at >= 0; at = text.indexOf(PLACEHOLDER_PREFIX, at)) {
    const secret = secrets.find((s) => text.startsWith(s.placeholder, at));
    if (!secret) {
      at += PLACEHOLDER_PREFIX.length;
      continue;
    }
    out += text.slice(from, at) + secret.value;
    at += secret.placeholder.length;
    from = at;
  }
  return out + text.slice(from);
}

function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length)) count++;
  return count;
}

function validate(name: string, spec: SecretSpec, nonce: string): Secret {
  if (!NAME.test(name)) {
    throw new TypeError(`secrets: invalid name ${JSON.stringify(name)}: use letters, digits and _, not starting with a digit (like an environment variable)`);
  }
  if (spec === null || typeof spec !== "object") throw new TypeError(`secrets.${name}: expected { value, origins }`);
  const { value, origins } = spec;
  // Never echo the value in these messages.
  if (typeof value !== "string" || value === "") throw new TypeError(`secrets.${name}.value must be a non-empty string`);
  if (!HEADER_VALUE.test(value)) {
    throw new TypeError(`secrets.${name}.value cannot be sent in a header: it has a control character (CR, LF, NUL, …) or a character above U+00FF`);
  }
  if (!Array.isArray(origins) || origins.length === 0) throw new TypeError(`secrets.${name}.origins must list at least one origin`);
  const set = new Set<string>();
  for (const origin of origins) set.add(parseOrigin(name, origin));
  const placeholder = `${PLACEHOLDER_PREFIX}${name}.${nonce}`;
  return {
    name,
    value,
    placeholder,
    placeholderLower: placeholder.toLowerCase(),
    placeholderBytes: Buffer.from(placeholder, "latin1"),
    origins: set,
    patterns: new PatternSet(echoPatterns(value)),
  };
}

function parseOrigin(name: string, text: unknown): string {
  let url: URL | null = null;
  try {
    url = typeof text === "string" ? new URL(text) : null;
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password || url.pathname !== "/" || url.search || url.hash) {
    throw new TypeError(`secrets.${name}.origins: ${JSON.stringify(text)} is not an http(s) origin like "https://api.example.com"`);
  }
  return url.origin;
}

function refusal(secret: Secret, why: string): NetworkPolicyError {
  return new NetworkPolicyError(`secret ${JSON.stringify(secret.name)} refused: ${why}`);
}

function listOrigins(secret: Secret): string {
  return [...secret.origins].join(", ");
}

function percentDecode(text: string): string {
  return text.includes("%") ? text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text;
}
